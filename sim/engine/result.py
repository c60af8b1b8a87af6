"""The outcome of one time-domain run: distributions, goodput, throughput, time series, logs.

Latencies are distributions, not means: every figure comes as p50 / p90 / p95 / p99 / max (and the mean,
for Little's law). TTFT is counted from the request's arrival (tokenization and queueing
included); ITL is the gap between consecutive tokens of a request, over all tokens; TPOT is one
request's mean gap, (finish - first token) / (output - 1); E2E is arrival to last token.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields


@dataclass(frozen=True)
class Percentiles:
    p50: float = 0.0
    p90: float = 0.0
    p99: float = 0.0
    max: float = 0.0
    mean: float = 0.0
    count: int = 0
    p95: float = 0.0  # SGLang's summary prints it for ITL


def quantile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    n = len(sorted_values)
    if n == 0:
        return 0.0
    x = q * (n - 1)
    i = int(x)
    if i >= n - 1:
        return sorted_values[-1]
    return sorted_values[i] + (x - i) * (sorted_values[i + 1] - sorted_values[i])


def percentiles(values: list[float]) -> Percentiles:
    v = sorted(x for x in values if x == x)
    if not v:
        return Percentiles()
    return Percentiles(quantile(v, 0.5), quantile(v, 0.9), quantile(v, 0.99), v[-1], math.fsum(v) / len(v), len(v),
                       quantile(v, 0.95))


def histogram_percentiles(h) -> Percentiles:
    if not h.count:
        return Percentiles()
    return Percentiles(h.quantile(0.5), h.quantile(0.9), h.quantile(0.99), h.max, h.mean, int(round(h.count)),
                       h.quantile(0.95))


@dataclass(frozen=True)
class EngineResult:
    """Everything one run measured. Times in seconds, rates per second, usage as fractions."""

    config: dict
    errors: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    cancelled: bool = False
    model_name: str = ""
    model_family: str = ""  # sim's Result.model_family: which validation figures apply
    gpu_name: str = ""
    policy: str = ""
    num_requests: int = 0
    completed: int = 0
    duration_s: float = 0.0
    instances: int = 0
    gpus: int = 0
    block_size_tokens: int = 0
    kv_pool_blocks: int = 0  # per instance
    kv_pool_tokens: int = 0  # per instance
    ttft_s: Percentiles = field(default_factory=Percentiles)
    itl_s: Percentiles = field(default_factory=Percentiles)
    tpot_s: Percentiles = field(default_factory=Percentiles)
    e2e_s: Percentiles = field(default_factory=Percentiles)
    queue_s: Percentiles = field(default_factory=Percentiles)
    ttft_target_s: float = 0.0
    itl_target_s: float = 0.0
    goodput_per_s: float = 0.0
    goodput_fraction: float = 0.0
    throughput_per_s: float = 0.0
    output_tokens_per_s: float = 0.0
    prompt_tokens_per_s: float = 0.0
    prompt_tokens_computed: int = 0
    output_tokens_generated: int = 0
    preemptions: int = 0
    swaps: int = 0
    prefix_hit_rate: float = 0.0
    prefix_evicted_blocks: int = 0
    peak_kv_blocks: int = 0  # highest physical block count on any instance (must stay <= kv_pool_blocks)
    mean_kv_usage: float = 0.0
    mean_running: float = 0.0
    mean_waiting: float = 0.0
    littles_law: dict = field(default_factory=dict)
    series: dict = field(default_factory=dict)
    requests: dict = field(default_factory=dict)
    itl_density: dict = field(default_factory=dict)
    per_instance: list = field(default_factory=list)
    vllm_log: list = field(default_factory=list)
    sglang_log: list = field(default_factory=list)
    prometheus: str = ""
    events: int = 0
    tokenizer_s: float = 0.0  # total tokenization time (serial on the request thread, or parallel)
    scheduler_s: float = 0.0  # host time of the block-table bookkeeping, over every instance (charged to its steps)
    log: list = field(default_factory=list)
    # Which limit binds the run (sim/engine/diagnosis.py): its key, name, deciding figure and threshold,
    # and the signals the rules read. Empty for a run that failed validation.
    binding_limit: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def peak_kv_usage(self) -> float:
        """The fullest any instance's pool got: peak_kv_blocks over kv_pool_blocks."""
        return self.peak_kv_blocks / self.kv_pool_blocks if self.kv_pool_blocks else 0.0

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> EngineResult:
        """The inverse of to_dict (after a JSON round trip too: every other field is plain data)."""
        return cls(**{**d, **{name: Percentiles(**d[name]) for name in _PERCENTILE_FIELDS}})

    def summary_lines(self) -> list[str]:
        if self.errors:
            return [f"error: {e['field']}: {e['message']}" for e in self.errors]

        def ms(p: Percentiles) -> str:
            return f"p50 {p.p50 * 1e3:,.0f} ms, p90 {p.p90 * 1e3:,.0f} ms, p99 {p.p99 * 1e3:,.0f} ms, max {p.max * 1e3:,.0f} ms"
        return [
            f"{self.model_name}, {self.instances} instance(s) of {self.gpus // max(self.instances, 1)} x {self.gpu_name} "
            f"({self.gpus} GPUs), policy {self.policy}: "
            f"{self.completed:,}/{self.num_requests:,} requests in {self.duration_s:,.1f} s"
            + (" (cancelled)" if self.cancelled else ""),
            f"TTFT  {ms(self.ttft_s)}",
            f"ITL   {ms(self.itl_s)}",
            f"TPOT  {ms(self.tpot_s)}",
            f"E2E   {ms(self.e2e_s)}",
            f"throughput {self.throughput_per_s:.2f} req/s, {self.output_tokens_per_s:,.0f} output tok/s, "
            f"{self.prompt_tokens_per_s:,.0f} prompt tok/s",
            f"goodput {self.goodput_per_s:.2f} req/s ({self.goodput_fraction:.0%} of requests meet TTFT <= "
            f"{self.ttft_target_s:g} s and mean ITL <= {self.itl_target_s * 1e3:g} ms)",
            f"KV pool {self.kv_pool_tokens:,} tokens per instance; mean usage {self.mean_kv_usage:.0%}; "
            f"preemptions {self.preemptions:,}; prefix hit rate {self.prefix_hit_rate:.1%}",
        ] + ([f"binding limit: {v}"] if (v := self.binding_limit.get("verdict")) else [])


_PERCENTILE_FIELDS = tuple(f.name for f in fields(EngineResult) if f.default_factory is Percentiles)
