"""A benchmark client's run, as `vllm bench serve` and SGLang's `bench_serving` define it.

`BenchSpec` holds the client's options under their own names (`--num-prompts`, `--request-rate`,
`--burstiness`, `--max-concurrency`, `--random-input-len` ...), `workload()` turns it into the
engine's `Workload` (the requests as trace rows, the client's concurrency cap), and
sim/engine/bench_summary.py reads the run the way the client computes its summary, and prints
and saves what the tool prints and saves.

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


SPEC_FIELDS = tuple(f.name for f in fields(BenchSpec))
