"""A benchmark client's run, as `vllm bench serve` and SGLang's `bench_serving` define it.

`BenchSpec` holds the client's options under their own names (`--num-prompts`, `--request-rate`,
`--burstiness`, `--max-concurrency`, `--random-input-len` ...), `workload()` turns it into the
engine's `Workload` (the requests as trace rows, the client's concurrency cap), and
`bench_metrics()` reads an `EngineResult` the way the client computes its summary, so
`summary_lines()` and `result_json()` print and save what the tool prints and saves.

How each tool draws a run (sources beside each rule):
- Lengths of the `random` dataset. vLLM (vllm/benchmarks/datasets/random.py,
  RandomDataset.get_sampling_params, since the 2025 rewrite): integers uniform in
  [floor(L (1 - r)), ceil(L (1 + r))], outputs at least 1. SGLang (python/sglang/bench_serving.py,
  sample_random_requests) and vLLM's older benchmark_serving.py: uniform in [int(L r), L]. Both
  prepend `random_prefix_len` tokens, the same for every request.
- Arrivals (vllm/benchmarks/serve.py, get_request): at `request_rate` = inf every request is due
  at t = 0; otherwise gaps are gamma(shape = burstiness, scale = 1 / (rate x burstiness)), and
  vLLM rescales their running sum so the last request is due at exactly num_prompts / rate.
  SGLang draws exponential gaps with no rescaling.
- `max_concurrency`: an asyncio semaphore around each request; the TTFT and latency clocks start
  inside it, so time waiting at the client is in no latency (the engine's `max_concurrency`).
- The summary (serve.py, calculate_metrics): duration from the start of the run to the last
  response; TPOT per request = (latency - TTFT) / (output - 1) over requests with more than one
  output token; ITL pooled over every token gap; percentiles by numpy's linear interpolation.

Random numbers come from `random.Random(seed)`, not numpy's generator, so a run has the same
lengths and gaps in distribution as the tool's, not the same draws.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, fields, replace

from ..errors import Issue
from ..fields import BENCH_FIELDS, check_choice, check_numbers
from .config import TraceRequest, Workload
from .result import EngineResult, quantile

BENCH_TOOLS = ("vllm", "sglang")
DATASETS = ("random",)
SHARED_PREFIX_ID = "random-prefix"


@dataclass(frozen=True)
class BenchSpec:
    """One benchmark client run. `request_rate` None is inf (every request due at t = 0)."""

    bench_tool: str = "vllm"
    dataset_name: str = "random"
    num_prompts: int = 1000
    random_input_len: int = 1024
    random_output_len: int = 128
    random_range_ratio: float = 0.0
    random_prefix_len: int = 0
    request_rate: float | None = None
    burstiness: float = 1.0
    max_concurrency: int | None = None
    seed: int = 0
    # Lengths a result file lists request by request (vLLM's --save-detailed); they replace the
    # dataset's draws.
    input_lens: tuple[int, ...] | None = None
    output_lens: tuple[int, ...] | None = None

    def with_(self, **changes) -> BenchSpec:
        return replace(self, **changes)


def validate_spec(b: BenchSpec) -> list[Issue]:
    issues = check_numbers(b, BENCH_FIELDS)
    issues += [i for i in (check_choice("bench_tool", b.bench_tool, BENCH_TOOLS), check_choice("dataset_name", b.dataset_name, DATASETS))
               if i is not None]
    if b.bench_tool == "vllm" and not any(i.field == "random_range_ratio" for i in issues) and b.random_range_ratio >= 1:
        issues.append(Issue("random_range_ratio", f"must be below 1 for vllm bench serve (it samples [L(1-r), L(1+r)]), "
                                                  f"got {b.random_range_ratio:g}"))
    for name in ("input_lens", "output_lens"):
        lens = getattr(b, name)
        if lens is not None and (len(lens) != b.num_prompts or not all(isinstance(n, int) and n >= 1 for n in lens)):
            issues.append(Issue(name, f"must list {b.num_prompts:,} lengths of at least 1 token, one per prompt"))
    return issues


def length_range(tool: str, length: int, ratio: float) -> tuple[int, int]:
    """The lowest and highest length the tool draws around `length` (both at least 1)."""
    if tool == "vllm":
        low, high = math.floor(length * (1 - ratio)), math.ceil(length * (1 + ratio))
    else:
        low, high = int(length * ratio), length
    return max(low, 1), max(high, 1)


def arrivals_s(b: BenchSpec, rng: random.Random) -> list[float]:
    """When each request comes due at the client, from the start of the run."""
    n = b.num_prompts
    if b.request_rate is None:
        return [0.0] * n
    rate = b.request_rate
    if b.bench_tool == "vllm":
        shape = b.burstiness
        gaps = [rng.gammavariate(shape, 1.0 / (rate * shape)) for _ in range(n)]
    else:
        gaps = [rng.expovariate(rate) for _ in range(n)]
    out, t = [], 0.0
    for g in gaps:
        t += g
        out.append(t)
    if b.bench_tool == "vllm" and out[-1] > 0:
        scale = (n / rate) / out[-1]
        out = [x * scale for x in out]
    return out


def workload(b: BenchSpec) -> Workload:
    """The engine's workload for `b` (assumed valid): one trace row per prompt."""
    rng = random.Random(b.seed)
    n = b.num_prompts
    if b.input_lens is not None:
        prompts = list(b.input_lens)
    else:
        lo, hi = length_range(b.bench_tool, b.random_input_len, b.random_range_ratio)
        prompts = [b.random_prefix_len + rng.randint(lo, hi) for _ in range(n)]
    if b.output_lens is not None:
        outputs = list(b.output_lens)
    else:
        lo, hi = length_range(b.bench_tool, b.random_output_len, b.random_range_ratio)
        outputs = [rng.randint(lo, hi) for _ in range(n)]
    times = arrivals_s(b, rng)
    prefix = b.random_prefix_len if b.input_lens is None else 0
    rows = tuple(TraceRequest(t, p, o, SHARED_PREFIX_ID if prefix and p > prefix else None, prefix if p > prefix else 0)
                 for t, p, o in zip(times, prompts, outputs, strict=True))
    return Workload(arrival="trace", trace=rows, num_requests=n, max_concurrency=b.max_concurrency, seed=b.seed)


# ------------------------------------------------------------------------------------------
# The client's summary
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Stat:
    """One latency metric as the tools print it, in milliseconds."""

    mean_ms: float = 0.0
    median_ms: float = 0.0
    std_ms: float = 0.0
    p99_ms: float = 0.0


@dataclass(frozen=True)
class BenchMetrics:
    """What the client computes at the end of a run (serve.py's BenchmarkMetrics, by name)."""

    completed: int = 0
    failed: int = 0
    duration_s: float = 0.0
    total_input: int = 0
    total_output: int = 0
    request_throughput: float = 0.0
    output_throughput: float = 0.0
    total_token_throughput: float = 0.0
    ttft: Stat = Stat()
    tpot: Stat = Stat()
    itl: Stat = Stat()
    e2el: Stat = Stat()

    def flat(self) -> dict[str, float]:
        """The figures under the keys of vLLM's result file."""
        out = {"duration": self.duration_s, "completed": self.completed, "failed": self.failed,
               "total_input_tokens": self.total_input, "total_output_tokens": self.total_output,
               "request_throughput": self.request_throughput, "output_throughput": self.output_throughput,
               "total_token_throughput": self.total_token_throughput}
        for name in ("ttft", "tpot", "itl", "e2el"):
            s = getattr(self, name)
            out.update({f"mean_{name}_ms": s.mean_ms, f"median_{name}_ms": s.median_ms, f"std_{name}_ms": s.std_ms,
                        f"p99_{name}_ms": s.p99_ms})
        return out


def _stat(values_s: list[float]) -> Stat:
    v = sorted(values_s)
    if not v:
        return Stat()
    mean = math.fsum(v) / len(v)
    std = math.sqrt(math.fsum((x - mean) ** 2 for x in v) / len(v))  # numpy's np.std: the population deviation
    return Stat(mean * 1e3, quantile(v, 0.5) * 1e3, std * 1e3, quantile(v, 0.99) * 1e3)


def _itl_stat(r: EngineResult) -> Stat:
    """ITL pooled over every token gap. The engine keeps gaps in a log-binned histogram, not one by
    one (a run may hold 10^8 of them), so the deviation is the histogram's, at its bin width."""
    p = r.itl_s
    edges, weights = r.itl_density.get("edges_s", []), r.itl_density.get("weights", [])
    total = math.fsum(weights)
    var = 0.0
    if total:
        mids = [(a + b) / 2 for a, b in zip(edges, edges[1:], strict=False)]
        var = math.fsum(w * (m - p.mean) ** 2 for m, w in zip(mids, weights, strict=False)) / total
    return Stat(p.mean * 1e3, p.p50 * 1e3, math.sqrt(var) * 1e3, p.p99 * 1e3)


def bench_metrics(r: EngineResult) -> BenchMetrics:
    """The client's summary of an engine run whose clock started with the benchmark (t = 0)."""
    q = r.requests
    if not q or not q.get("id"):
        return BenchMetrics()
    arrival, e2e, ttft = q["arrival_s"], q["e2e_s"], q["ttft_s"]
    outputs = q["output_tokens"]
    duration = max(a + e for a, e in zip(arrival, e2e, strict=True))
    tpots = [t for t, o in zip(q["tpot_s"], outputs, strict=True) if o > 1]
    total_in, total_out = sum(q["prompt_tokens"]), sum(outputs)
    n = len(arrival)
    return BenchMetrics(
        completed=n, failed=0, duration_s=duration, total_input=total_in, total_output=total_out,
        request_throughput=n / duration, output_throughput=total_out / duration,
        total_token_throughput=(total_in + total_out) / duration,
        ttft=_stat(ttft), tpot=_stat(tpots), itl=_itl_stat(r), e2el=_stat(e2e))


def _row(label: str, value, digits: bool = True) -> str:
    return f"{label:<40} {value:<10.2f}" if digits else f"{label:<40} {value!s:<10}"


def summary_lines(m: BenchMetrics, b: BenchSpec) -> list[str]:
    """The block `vllm bench serve` prints (serve.py's benchmark(), same labels and widths). Its
    peak-throughput lines are left out: they need each token's time, which the engine does not keep."""
    out = [f"{' Serving Benchmark Result ':=^50}", _row("Successful requests:", m.completed, False),
           _row("Failed requests:", m.failed, False)]
    if b.max_concurrency is not None:
        out.append(_row("Maximum request concurrency:", b.max_concurrency, False))
    if b.request_rate is not None:
        out.append(_row("Request rate configured (RPS):", b.request_rate))
    out += [_row("Benchmark duration (s):", m.duration_s), _row("Total input tokens:", m.total_input, False),
            _row("Total generated tokens:", m.total_output, False), _row("Request throughput (req/s):", m.request_throughput),
            _row("Output token throughput (tok/s):", m.output_throughput),
            _row("Total token throughput (tok/s):", m.total_token_throughput)]
    for name, label, header in (("ttft", "TTFT", "Time to First Token"), ("tpot", "TPOT", "Time per Output Token (excl. 1st token)"),
                                ("itl", "ITL", "Inter-token Latency")):
        s = getattr(m, name)
        out += [f"{header:-^50}", _row(f"Mean {label} (ms):", s.mean_ms), _row(f"Median {label} (ms):", s.median_ms),
                _row(f"P99 {label} (ms):", s.p99_ms)]
    out.append("=" * 50)
    return out


def result_json(m: BenchMetrics, b: BenchSpec, *, model_id: str, date: str, kvlab: dict) -> dict:
    """The object `vllm bench serve --save-result` writes (serve.py's result_json, by key), with
    what kvlab simulated under one more key, "kvlab"."""
    out = {"date": date, "endpoint_type": "kvlab", "backend": "kvlab", "label": None, "model_id": model_id,
           "tokenizer_id": model_id, "num_prompts": b.num_prompts,
           "request_rate": "inf" if b.request_rate is None else b.request_rate, "burstiness": b.burstiness,
           "max_concurrency": b.max_concurrency, "request_goodput": None}
    out.update(m.flat())
    out["kvlab"] = kvlab
    return out


SPEC_FIELDS = tuple(f.name for f in fields(BenchSpec))
