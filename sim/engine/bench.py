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
- Lengths of the `sharegpt` dataset: the distribution in sim/data/datasets/sharegpt.json (its
  sources and derivation are in the file): prompts from a quantile table, reference replies
  log-normal, a pair redrawn when the sampler would skip it (prompt or reply under 4 tokens,
  prompt over 1024, prompt + reply over 2048). `sharegpt_output_len` fixes every reply, as
  vLLM's --sharegpt-output-len does. Replies are the reference lengths: SGLang ignores EOS by
  default, and an instruct model served by vLLM produced 99.3-99.9% of them (same file).
- Lengths of the `sonnet` dataset (vllm/benchmarks/datasets/sonnet.py, SonnetDataset.sample):
  every prompt is the shared opening (an instruction and the first poem lines, about
  `sonnet_prefix_len` tokens) plus lines drawn at random, as many as `sonnet_input_len` holds on
  average, and a prompt longer than `sonnet_input_len` is drawn again; replies are
  `sonnet_output_len`. kvlab gives every prompt `sonnet_input_len` tokens, of which
  `sonnet_prefix_len` are shared: the sampler's prompts fall short of it by part of a poem line
  (about ten tokens), which the tokenizer decides and kvlab does not have.
- Lengths of a `custom` dataset: the user's own JSONL, one request a line with its
  `prompt_tokens` and, optionally, `output_tokens` (else `custom_output_len`, as vLLM's
  --custom-output-len). As vLLM's CustomDataset does (vllm/benchmarks/datasets/custom.py), the
  rows are shuffled with the run's seed and, when there are fewer than `num_prompts`, drawn again
  at random to make up the number (BenchmarkDataset.maybe_oversample_requests).
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

import json
import math
import random
from dataclasses import dataclass, fields, replace
from functools import lru_cache

from ..catalog import DATA_DIR
from ..engine_rules import rules
from ..errors import Issue
from ..fields import BENCH_FIELDS, check_choice, check_numbers, shown
from ..scenario import Scenario
from .config import EngineConfig, Scheduling, TraceRequest, Workload
from .result import EngineResult, percentiles

BENCH_TOOLS = ("vllm", "sglang")
DATASETS = ("random", "sharegpt", "sonnet", "custom")
# The datasets `kvlab compare` draws a result file's lengths from when the file lists none: a sonnet
# or custom run is replayed at the file's mean lengths (or its per-request lengths).
REPLAYED_DATASETS = ("random", "sharegpt")
CUSTOM_ROWS_MAX = 400_000  # as many as the client can send (BENCH_FIELDS["num_prompts"])
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
    sharegpt_output_len: int | None = None
    sonnet_input_len: int = 550  # vLLM's SonnetDataset defaults
    sonnet_output_len: int = 150
    sonnet_prefix_len: int = 200
    custom_output_len: int = 256  # vLLM's --custom-output-len default
    request_rate: float | None = None
    burstiness: float = 1.0
    max_concurrency: int | None = None
    seed: int = 0
    # Lengths a result file lists request by request (vLLM's --save-detailed); they replace the
    # dataset's draws.
    input_lens: tuple[int, ...] | None = None
    output_lens: tuple[int, ...] | None = None
    # The token totals a result file states: drawn lengths are scaled to them, so a replay
    # processes what the run processed (a model that stops at EOS writes fewer tokens than the
    # dataset asks for; ten draws can miss their distribution's mean by a third).
    total_input_tokens: int | None = None
    total_output_tokens: int | None = None

    def with_(self, **changes) -> BenchSpec:
        return replace(self, **changes)


def validate_spec(b: BenchSpec) -> list[Issue]:
    issues = check_numbers(b, BENCH_FIELDS)
    issues += [i for i in (check_choice("bench_tool", b.bench_tool, BENCH_TOOLS), check_choice("dataset_name", b.dataset_name, DATASETS))
               if i is not None]
    if b.dataset_name == "sonnet" and not issues and b.sonnet_prefix_len >= b.sonnet_input_len:
        issues.append(Issue("sonnet_prefix_len", f"must be below sonnet_input_len ({b.sonnet_input_len:,}), "
                                                 f"got {b.sonnet_prefix_len:,}"))
    if b.dataset_name == "custom" and b.input_lens is None:
        issues.append(Issue("dataset_path", "the custom dataset needs a JSONL file of lengths (--dataset-path)"))
    if b.bench_tool == "vllm" and not any(i.field == "random_range_ratio" for i in issues) and b.random_range_ratio >= 1:
        issues.append(Issue("random_range_ratio", f"must be below 1 for vllm bench serve (it samples [L(1-r), L(1+r)]), "
                                                  f"got {b.random_range_ratio:g}"))
    for name in ("total_input_tokens", "total_output_tokens"):
        total = getattr(b, name)
        if total is not None and not (isinstance(total, int) and not isinstance(total, bool) and total >= b.num_prompts):
            issues.append(Issue(name, f"must be an integer of at least one token a prompt ({b.num_prompts:,}), got {shown(total)}"))
    for name in ("input_lens", "output_lens"):
        lens = getattr(b, name)
        high = BENCH_FIELDS["random_input_len" if name == "input_lens" else "random_output_len"].high
        if lens is not None and (len(lens) != b.num_prompts or not all(isinstance(n, int) and 1 <= n <= high for n in lens)):
            issues.append(Issue(name, f"must list {b.num_prompts:,} lengths of 1 to {high:,} tokens, one per prompt"))
    return issues


def length_range(tool: str, length: int, ratio: float) -> tuple[int, int]:
    """The lowest and highest length the tool draws around `length` (both at least 1)."""
    if tool == "vllm":
        low, high = math.floor(length * (1 - ratio)), math.ceil(length * (1 + ratio))
    else:
        low, high = int(length * ratio), length
    return max(low, 1), max(high, 1)


@lru_cache(maxsize=1)
def sharegpt() -> dict:
    """The ShareGPT length distribution as vLLM's sampler draws it (sim/data/datasets/sharegpt.json)."""
    return json.loads((DATA_DIR / "datasets" / "sharegpt.json").read_text())


def _quantile_draw(points: list[list[float]], u: float) -> float:
    """The length at cumulative share `u` of a quantile table, log-linear between its points."""
    for (p0, x0), (p1, x1) in zip(points, points[1:], strict=False):
        if u <= p1:
            f = (u - p0) / (p1 - p0) if p1 > p0 else 0.0
            return math.exp(math.log(x0) + f * (math.log(x1) - math.log(x0)))
    return points[-1][1]


def sharegpt_lengths(n: int, rng: random.Random, output_len: int | None = None) -> tuple[list[int], list[int]]:
    """`n` (prompt, reply) lengths, each pair redrawn until the sampler would keep it."""
    d = sharegpt()
    rule, prompt, reply = d["sampler"], d["prompt_tokens"], d["output_tokens"]
    points = prompt["points"]
    prompts, outputs = [], []
    while len(prompts) < n:
        p = round(_quantile_draw(points, rng.random()))
        o = output_len if output_len is not None else round(rng.lognormvariate(reply["mu"], reply["sigma"]))
        short = p < rule["min_prompt_tokens"] or (output_len is None and o < rule["min_output_tokens"])
        if short or p > rule["max_prompt_tokens"] or p + o > rule["max_total_tokens"]:
            continue
        prompts.append(p)
        outputs.append(o)
    return prompts, outputs


def read_lengths(text: str) -> tuple[list[tuple[int, int | None]], list[str]]:
    """The rows of a custom dataset's JSONL (prompt tokens, output tokens or None), or the problems,
    each naming its line and field. Blank lines are skipped."""
    rows, problems = [], []
    high = {"prompt_tokens": BENCH_FIELDS["random_input_len"].high, "output_tokens": BENCH_FIELDS["random_output_len"].high}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if len(rows) >= CUSTOM_ROWS_MAX:
            problems.append(f"more than {CUSTOM_ROWS_MAX:,} rows")
            break
        try:
            row = json.loads(line)
        except ValueError:
            problems.append(f"line {n}: not a JSON object")
            continue
        if not isinstance(row, dict):
            problems.append(f"line {n}: not a JSON object")
            continue
        values = {}
        for name in ("prompt_tokens", "output_tokens"):
            v = row.get(name)
            if v is None and name == "output_tokens":
                values[name] = None
            elif isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= high[name]:
                values[name] = v
            else:
                problems.append(f"line {n}: {name} must be an integer of 1 to {high[name]:,} tokens, got {shown(v)}")
        if len(values) == 2:
            rows.append((values["prompt_tokens"], values["output_tokens"]))
        if len(problems) >= 10:
            problems.append("(the first ten problems)")
            break
    if not rows and not problems:
        problems.append("no rows: each line needs a JSON object with prompt_tokens")
    return rows, problems


def custom_lengths(b: BenchSpec, rows: list[tuple[int, int | None]]) -> BenchSpec:
    """`b` with the custom dataset's lengths, one per prompt: the rows shuffled with the run's seed,
    cut to num_prompts or made up to it by drawing rows again at random."""
    rng = random.Random(b.seed)
    rows = list(rows)
    rng.shuffle(rows)
    rows = rows[:b.num_prompts] + [rng.choice(rows) for _ in range(b.num_prompts - len(rows))]
    return b.with_(input_lens=tuple(p for p, _ in rows),
                   output_lens=tuple(b.custom_output_len if o is None else o for _, o in rows))


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


def _scaled(lengths: list[int], total: int) -> list[int]:
    """`lengths` times one factor, rounded (at least 1 each), summing to `total` within rounding."""
    factor = total / sum(lengths)
    return [max(1, round(n * factor)) for n in lengths]


def workload(b: BenchSpec) -> Workload:
    """The engine's workload for `b` (assumed valid): one trace row per prompt."""
    rng = random.Random(b.seed)
    n = b.num_prompts
    if b.input_lens is not None:
        prompts = list(b.input_lens)
    elif b.dataset_name == "sharegpt":
        prompts, drawn = sharegpt_lengths(n, rng, b.sharegpt_output_len)
    elif b.dataset_name == "sonnet":
        prompts = [b.sonnet_input_len] * n
    else:
        lo, hi = length_range(b.bench_tool, b.random_input_len, b.random_range_ratio)
        prompts = [b.random_prefix_len + rng.randint(lo, hi) for _ in range(n)]
    if b.output_lens is not None:
        outputs = list(b.output_lens)
    elif b.dataset_name == "sharegpt":
        outputs = drawn
    elif b.dataset_name == "sonnet":
        outputs = [b.sonnet_output_len] * n
    else:
        lo, hi = length_range(b.bench_tool, b.random_output_len, b.random_range_ratio)
        outputs = [rng.randint(lo, hi) for _ in range(n)]
    if b.input_lens is None and b.total_input_tokens is not None:
        prompts = _scaled(prompts, b.total_input_tokens)
    if b.output_lens is None and b.total_output_tokens is not None:
        outputs = _scaled(outputs, b.total_output_tokens)
    times = arrivals_s(b, rng)
    prefix = 0 if b.input_lens is not None else {"random": b.random_prefix_len, "sonnet": b.sonnet_prefix_len}.get(b.dataset_name, 0)
    rows = tuple(TraceRequest(t, p, o, SHARED_PREFIX_ID if prefix and p > prefix else None, prefix if p > prefix else 0)
                 for t, p, o in zip(times, prompts, outputs, strict=True))
    return Workload(arrival="trace", trace=rows, num_requests=n, max_concurrency=b.max_concurrency, seed=b.seed)


def engine_config(scenario: Scenario, b: BenchSpec, replicas: int = 1) -> EngineConfig:
    """The engine serving `b` as the scenario's engine runs by default: vLLM's V0 releases (before
    0.8) prefill whole prompts in steps of their own, V1 and SGLang chunk prefills into the decode
    steps (the rule set's `mode`, sim/data/engine_rules.json)."""
    v0 = scenario.engine == "vllm" and rules("vllm", scenario.engine_version).mode == "V0"
    return EngineConfig(scenario=scenario, workload=workload(b), scheduling=Scheduling(policy="fcfs" if v0 else "chunked")
                        ).with_(replicas=replicas)


def profile_note(scenario: Scenario) -> str | None:
    """A warning for a prediction on the textbook profile, which no measurement backs."""
    if scenario.profile != "textbook":
        return None
    return (f"note: no measured or published efficiency profile for {scenario.gpu}: the textbook profile runs every kernel "
            "at its ideal rate, so predicted times come out short")


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
    p95_ms: float = 0.0  # SGLang prints these two for ITL only
    max_ms: float = 0.0


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
    # vLLM's peaks over whole seconds of the run (serve.py, calculate_metrics): the most output
    # tokens in one second, and the most requests in flight during any part of one second.
    max_output_tokens_per_s: float = 0.0
    max_concurrent_requests: int = 0
    ttft: Stat = Stat()
    tpot: Stat = Stat()
    itl: Stat = Stat()
    e2el: Stat = Stat()

    def flat(self) -> dict[str, float]:
        """The figures under the keys of vLLM's result file."""
        out = {"duration": self.duration_s, "completed": self.completed, "failed": self.failed,
               "total_input_tokens": self.total_input, "total_output_tokens": self.total_output,
               "request_throughput": self.request_throughput, "output_throughput": self.output_throughput,
               "total_token_throughput": self.total_token_throughput,
               "max_output_tokens_per_s": self.max_output_tokens_per_s,
               "max_concurrent_requests": self.max_concurrent_requests}
        for name in ("ttft", "tpot", "itl", "e2el"):
            s = getattr(self, name)
            out.update({f"mean_{name}_ms": s.mean_ms, f"median_{name}_ms": s.median_ms, f"std_{name}_ms": s.std_ms,
                        f"p99_{name}_ms": s.p99_ms})
        return out


def _stat(values_s: list[float]) -> Stat:
    p = percentiles(values_s)  # the engine's own: numpy's linear interpolation, as the tools use
    if not p.count:
        return Stat()
    std = math.sqrt(math.fsum((x - p.mean) ** 2 for x in values_s) / p.count)  # np.std: the population deviation
    return Stat(p.mean * 1e3, p.p50 * 1e3, std * 1e3, p.p99 * 1e3)


def _itl_stat(r: EngineResult) -> Stat:
    """ITL pooled over every token gap. The engine keeps gaps in a log-binned histogram, not one by
    one (a run may hold 10^8 of them), so the deviation and the 95th percentile are the
    histogram's, at its bin width; the mean, median, p99 and maximum are the engine's own."""
    p = r.itl_s
    edges, weights = r.itl_density.get("edges_s", []), r.itl_density.get("weights", [])
    total = math.fsum(weights)
    var = 0.0
    if total:
        mids = [(a + b) / 2 for a, b in zip(edges, edges[1:], strict=False)]
        var = math.fsum(w * (m - p.mean) ** 2 for m, w in zip(mids, weights, strict=False)) / total
    return Stat(p.mean * 1e3, p.p50 * 1e3, math.sqrt(var) * 1e3, p.p99 * 1e3,
                _density_quantile(edges, weights, 0.95, p.max) * 1e3, p.max * 1e3)


def _density_quantile(edges: list[float], weights: list[float], q: float, largest: float) -> float:
    """The value below which a fraction q of a binned density lies (geometric interpolation inside
    the bin, as the engine's LogHistogram.quantile), capped at the largest value seen."""
    total = math.fsum(weights)
    if not total:
        return 0.0
    target, cum = q * total, 0.0
    for lo, hi, w in zip(edges, edges[1:], weights, strict=False):
        if w and cum + w >= target:
            return min(lo * (hi / lo) ** ((target - cum) / w), largest)
        cum += w
    return largest


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
    peak_tokens, peak_requests = _peaks(arrival, ttft, e2e, outputs)
    return BenchMetrics(
        completed=n, failed=0, duration_s=duration, total_input=total_in, total_output=total_out,
        request_throughput=n / duration, output_throughput=total_out / duration,
        total_token_throughput=(total_in + total_out) / duration,
        max_output_tokens_per_s=peak_tokens, max_concurrent_requests=peak_requests,
        ttft=_stat(ttft), tpot=_stat(tpots), itl=_itl_stat(r), e2el=_stat(e2e))


def _peaks(start_s: list[float], ttft_s: list[float], e2e_s: list[float], outputs: list[int]) -> tuple[float, int]:
    """vLLM's two peaks (serve.py, calculate_metrics), over whole seconds counted from the first
    request's start: the most output tokens whose times fall in one second, and the most requests
    whose [start, end] touches one second (each counted in every second from int(start) to
    int(end)). The engine keeps no per-token times, so a request's tokens are placed evenly from
    its first token to its last (its TPOT apart); every other figure of the summary is exact."""
    t0 = min(start_s)
    seconds = int(math.ceil(max(s + e for s, e in zip(start_s, e2e_s, strict=True)) - t0)) + 1
    tokens = [0] * seconds
    active = [0] * (seconds + 1)  # differences: +1 where a request's seconds begin, -1 after they end
    for s, f, e, o in zip(start_s, ttft_s, e2e_s, outputs, strict=True):
        active[int(s - t0)] += 1
        active[min(int(s + e - t0), seconds - 1) + 1] -= 1
        first, gap = s + f - t0, ((e - f) / (o - 1) if o > 1 else 0.0)
        i = 0  # tokens placed so far; token i lands at first + i x gap
        while i < o:
            k = int(first + i * gap)
            # every token before the next whole second goes into bucket k
            j = o if gap <= 0 else min(o, max(i + 1, math.ceil((k + 1 - first) / gap)))
            tokens[min(k, seconds - 1)] += j - i
            i = j
    in_flight, peak = 0, 0
    for d in active[:seconds]:
        in_flight += d
        peak = max(peak, in_flight)
    return float(max(tokens)), peak


def _row(label: str, value, digits: bool = True) -> str:
    return f"{label:<40} {value:<10.2f}" if digits else f"{label:<40} {value!s:<10}"


def summary_lines(m: BenchMetrics, b: BenchSpec, accept_length: float | None = None) -> list[str]:
    """The block the run's client prints: `vllm bench serve`'s, or SGLang's `bench_serving`'s
    (`b.bench_tool`). `accept_length`: a speculative run's tokens per verify step (SGLang prints it)."""
    return _sglang_lines(m, b, accept_length) if b.bench_tool == "sglang" else _vllm_lines(m, b)


def _vllm_lines(m: BenchMetrics, b: BenchSpec) -> list[str]:
    """vllm/benchmarks/serve.py's benchmark(): same labels, widths and order (its peak output rate
    with each request's tokens evenly spaced: `_peaks`)."""
    out = [f"{' Serving Benchmark Result ':=^50}", _row("Successful requests:", m.completed, False),
           _row("Failed requests:", m.failed, False)]
    if b.max_concurrency is not None:
        out.append(_row("Maximum request concurrency:", b.max_concurrency, False))
    if b.request_rate is not None:
        out.append(_row("Request rate configured (RPS):", b.request_rate))
    out += [_row("Benchmark duration (s):", m.duration_s), _row("Total input tokens:", m.total_input, False),
            _row("Total generated tokens:", m.total_output, False), _row("Request throughput (req/s):", m.request_throughput),
            _row("Output token throughput (tok/s):", m.output_throughput),
            _row("Peak output token throughput (tok/s):", m.max_output_tokens_per_s),
            _row("Peak concurrent requests:", m.max_concurrent_requests),
            _row("Total token throughput (tok/s):", m.total_token_throughput)]
    for name, label, header in (("ttft", "TTFT", "Time to First Token"), ("tpot", "TPOT", "Time per Output Token (excl. 1st token)"),
                                ("itl", "ITL", "Inter-token Latency")):
        s = getattr(m, name)
        out += [f"{header:-^50}", _row(f"Mean {label} (ms):", s.mean_ms), _row(f"Median {label} (ms):", s.median_ms),
                _row(f"P99 {label} (ms):", s.p99_ms)]
    out.append("=" * 50)
    return out


def _sglang_concurrency(m: BenchMetrics) -> float:
    """SGLang's "Concurrency": the requests' summed end-to-end latency over the run's duration."""
    return m.e2el.mean_ms / 1e3 * m.completed / m.duration_s if m.duration_s else 0.0


def _sglang_lines(m: BenchMetrics, b: BenchSpec, accept_length: float | None) -> list[str]:
    """python/sglang/bench_serving.py's benchmark() (sgl-project/sglang at 0033168f): same labels,
    widths and order; no TPOT section, ITL with its 95th percentile and maximum. "Backend" says
    kvlab, as the saved line does; "(retokenized)" repeats the generated count, since kvlab's
    tokens have no text to tokenize again."""
    rate = float("inf") if b.request_rate is None else float(b.request_rate)
    out = [f"{' Serving Benchmark Result ':=^50}", _row("Backend:", "kvlab", False),
           _row("Traffic request rate:", rate, False),
           _row("Max request concurrency:", b.max_concurrency if b.max_concurrency else "not set", False),
           _row("Successful requests:", m.completed, False), _row("Benchmark duration (s):", m.duration_s),
           _row("Total input tokens:", m.total_input, False), _row("Total generated tokens:", m.total_output, False),
           _row("Total generated tokens (retokenized):", m.total_output, False),
           _row("Request throughput (req/s):", m.request_throughput),
           _row("Input token throughput (tok/s):", m.total_input / m.duration_s if m.duration_s else 0.0),
           _row("Output token throughput (tok/s):", m.output_throughput),
           _row("Total token throughput (tok/s):", m.total_token_throughput),
           _row("Concurrency:", _sglang_concurrency(m))]
    if accept_length:
        out.append(_row("Accept length:", accept_length))
    out += [f"{'End-to-End Latency':-^50}", _row("Mean E2E Latency (ms):", m.e2el.mean_ms),
            _row("Median E2E Latency (ms):", m.e2el.median_ms),
            f"{'Time to First Token':-^50}", _row("Mean TTFT (ms):", m.ttft.mean_ms), _row("Median TTFT (ms):", m.ttft.median_ms),
            _row("P99 TTFT (ms):", m.ttft.p99_ms),
            f"{'Inter-Token Latency':-^50}", _row("Mean ITL (ms):", m.itl.mean_ms), _row("Median ITL (ms):", m.itl.median_ms),
            _row("P95 ITL (ms):", m.itl.p95_ms), _row("P99 ITL (ms):", m.itl.p99_ms), _row("Max ITL (ms):", m.itl.max_ms),
            "=" * 50]
    return out


def result_json(m: BenchMetrics, b: BenchSpec, *, model_id: str, date: str, kvlab: dict,
                accept_length: float | None = None) -> dict:
    """What the run's client saves, by key, with what kvlab simulated under one more key, "kvlab":
    `vllm bench serve --save-result`'s object (serve.py's result_json), or the line SGLang's
    `bench_serving` appends to its JSONL output file."""
    if b.bench_tool == "sglang":
        return _sglang_json(m, b, accept_length) | {"kvlab": kvlab}
    out = {"date": date, "endpoint_type": "kvlab", "backend": "kvlab", "label": None, "model_id": model_id,
           "tokenizer_id": model_id, "num_prompts": b.num_prompts,
           "request_rate": "inf" if b.request_rate is None else b.request_rate, "burstiness": b.burstiness,
           "max_concurrency": b.max_concurrency, "request_goodput": None}
    out.update(m.flat())
    out["kvlab"] = kvlab
    return out


def _sglang_json(m: BenchMetrics, b: BenchSpec, accept_length: float | None) -> dict:
    """bench_serving.py's `result` dict (sgl-project/sglang at 0033168f), key for key. Its
    request_rate is a float, inf when unset, which Python's json writes as Infinity."""
    d = m.duration_s
    out = {"backend": "kvlab", "dataset_name": b.dataset_name,
           "request_rate": float("inf") if b.request_rate is None else float(b.request_rate),
           "max_concurrency": b.max_concurrency, "sharegpt_output_len": b.sharegpt_output_len,
           "random_input_len": b.random_input_len, "random_output_len": b.random_output_len,
           "random_range_ratio": b.random_range_ratio, "duration": d, "completed": m.completed,
           "total_input_tokens": m.total_input, "total_output_tokens": m.total_output,
           "total_output_tokens_retokenized": m.total_output, "request_throughput": m.request_throughput,
           "input_throughput": m.total_input / d if d else 0.0, "output_throughput": m.output_throughput}
    for name, key in (("e2el", "e2e_latency"), ("ttft", "ttft"), ("tpot", "tpot"), ("itl", "itl")):
        s = getattr(m, name)
        out.update({f"mean_{key}_ms": s.mean_ms, f"median_{key}_ms": s.median_ms, f"std_{key}_ms": s.std_ms})
        if name == "itl":
            out["p95_itl_ms"] = s.p95_ms
        out[f"p99_{key}_ms"] = s.p99_ms
    out.update({"concurrency": _sglang_concurrency(m), "accept_length": accept_length})
    return out


SPEC_FIELDS = tuple(f.name for f in fields(BenchSpec))
