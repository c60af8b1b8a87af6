"""Read a benchmark client's result file: the run it states and the figures it measured.

Two formats:
- `vllm bench serve --save-result` (vllm/benchmarks/serve.py, result_json): one JSON object, or
  one per line with --append-result. It states model_id, num_prompts, request_rate ("inf" or a
  number), burstiness and max_concurrency, and with --save-detailed each request's input and
  output length; it does not name the dataset, so without the lengths the run is replayed with
  every request at the file's mean lengths.
- SGLang's `bench_serving` JSONL (python/sglang/bench_serving.py): one object per run with
  dataset_name, random_input_len / random_output_len / random_range_ratio, request_rate and
  max_concurrency, and no model id (give --model).

A file is untrusted input: every value is checked before use, and each problem names the key.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from ..fields import BENCH_FIELDS, check_number, shown
from .bench import BenchSpec, validate_spec

MAX_RESULT_BYTES = 64_000_000  # a --save-detailed file of 10^5 requests with their texts fits
MAX_RUNS = 100

# The figures compared, under vLLM's keys, with vLLM's labels; SGLang's file uses the same keys.
METRICS = (
    ("duration", "Benchmark duration (s)"),
    ("request_throughput", "Request throughput (req/s)"),
    ("output_throughput", "Output token throughput (tok/s)"),
    ("mean_ttft_ms", "Mean TTFT (ms)"),
    ("median_ttft_ms", "Median TTFT (ms)"),
    ("p99_ttft_ms", "P99 TTFT (ms)"),
    ("mean_tpot_ms", "Mean TPOT (ms)"),
    ("median_tpot_ms", "Median TPOT (ms)"),
    ("p99_tpot_ms", "P99 TPOT (ms)"),
    ("mean_itl_ms", "Mean ITL (ms)"),
    ("median_itl_ms", "Median ITL (ms)"),
    ("p99_itl_ms", "P99 ITL (ms)"),
)
REQUIRED = ("completed", "duration", "total_input_tokens", "total_output_tokens")
SGLANG_KEYS = ("input_throughput", "mean_e2e_latency_ms", "total_output_tokens_retokenized")


@dataclass(frozen=True)
class MeasuredRun:
    """One run of a result file: who ran it, the run to replay, and what it measured."""

    bench_tool: str
    model_id: str | None
    spec: BenchSpec
    lengths: str  # how the replay's lengths were chosen, in words
    measured: dict[str, float]


class ResultFileProblem(ValueError):
    """What is wrong with a result file, one line per problem, each naming the key."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        super().__init__("; ".join(lines))


def _objects(text: str) -> list[tuple[str, object]]:
    """(where, object) for the file's one object, or for each non-empty line of JSONL."""
    try:
        return [("", json.loads(text))]
    except ValueError:
        pass
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append((f"line {n}: ", json.loads(line)))
            except ValueError as e:
                raise ResultFileProblem([f"line {n}: not JSON ({str(e)[:60]})"]) from None
    if not out:
        raise ResultFileProblem(["no JSON object in the file"])
    return out


def _number(d: dict, key: str, where: str, problems: list[str], *, integer: bool = False, low: float = 0.0):
    v = d.get(key)
    ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= low
    if ok and integer and not float(v).is_integer():
        ok = False
    if not ok:
        problems.append(f"{where}{key}: must be {'an integer' if integer else 'a number'} of at least {low:g}, got {shown(v)}")
        return None
    return int(v) if integer else float(v)


def _rate(v, where: str, problems: list[str]) -> float | None:
    if v is None or v == "inf" or (isinstance(v, float) and v == math.inf):
        return None
    issue = check_number("request_rate", v, BENCH_FIELDS["request_rate"])
    if issue:
        problems.append(f"{where}request_rate: {issue.message} or \"inf\"")
        return None
    return float(v)


def _lengths(d: dict, key: str):
    v = d.get(key)
    if isinstance(v, list) and v and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        return v
    return None


def _run(d: dict, where: str, tool: str | None, dataset: str | None) -> MeasuredRun:
    problems = [f"{where}{k}: missing" for k in REQUIRED if k not in d]
    if problems:
        raise ResultFileProblem(problems + [f"{where}expected a result file of vllm bench serve --save-result "
                                            "or of SGLang's bench_serving"])
    completed = _number(d, "completed", where, problems, integer=True, low=1)
    for key in ("duration", "total_input_tokens", "total_output_tokens"):
        _number(d, key, where, problems, low=1e-9)
    tool = tool or ("sglang" if any(k in d for k in SGLANG_KEYS) else "vllm")
    rate = _rate(d.get("request_rate"), where, problems)
    conc = d.get("max_concurrency")
    if conc is not None:
        conc = _number(d, "max_concurrency", where, problems, integer=True, low=1)
    burst = d.get("burstiness", 1.0)
    issue = check_number("burstiness", burst, BENCH_FIELDS["burstiness"]) if burst is not None else None
    if issue:
        problems.append(f"{where}burstiness: {issue.message}")
    measured = {}
    for key, _ in METRICS:
        if key in d and d[key] is not None:
            value = _number(d, key, where, problems)
            if value is not None:
                measured[key] = value
    if problems:
        raise ResultFileProblem(problems)
    spec = BenchSpec(bench_tool=tool, num_prompts=completed, request_rate=rate, burstiness=float(burst or 1.0),
                     max_concurrency=conc, total_input_tokens=round(d["total_input_tokens"]),
                     total_output_tokens=round(d["total_output_tokens"]))
    ins, outs = _lengths(d, "input_lens"), _lengths(d, "output_lens")
    if ins and outs and len(ins) == len(outs):
        pairs = [(i, o) for i, o in zip(ins, outs, strict=True) if i >= 1 and o >= 1]  # failed requests list 0 tokens
        if len(pairs) == completed:
            spec = spec.with_(input_lens=tuple(p[0] for p in pairs), output_lens=tuple(p[1] for p in pairs),
                              total_input_tokens=None, total_output_tokens=None)
            return MeasuredRun(tool, d.get("model_id"), spec, "each request's lengths from the file", measured)
    dataset = dataset or d.get("dataset_name")
    if dataset == "sharegpt":
        fixed = d.get("sharegpt_output_len") or d.get("fixed_output_len")
        fixed = fixed if isinstance(fixed, int) and not isinstance(fixed, bool) and 1 <= fixed <= 2044 else None
        spec = spec.with_(dataset_name="sharegpt", sharegpt_output_len=fixed)
        return MeasuredRun(tool, d.get("model_id"), spec, "ShareGPT lengths as vLLM's sampler draws them"
                           + (f", every reply {fixed:,} tokens" if fixed else "") + ", scaled to the file's totals", measured)
    if dataset == "random" and all(isinstance(d.get(k), int) and d[k] >= 1
                                                 for k in ("random_input_len", "random_output_len")):
        ratio = d.get("random_range_ratio", 0.0)
        if not check_number("random_range_ratio", ratio, BENCH_FIELDS["random_range_ratio"]) and (tool != "vllm" or ratio < 1):
            spec = spec.with_(random_input_len=d["random_input_len"], random_output_len=d["random_output_len"],
                              random_range_ratio=float(ratio))
            return MeasuredRun(tool, d.get("model_id"), spec,
                               f"random dataset, {d['random_input_len']:,} in and {d['random_output_len']:,} out, "
                               f"range ratio {ratio:g} ({tool}'s sampler), scaled to the file's totals", measured)
    mean_in = max(1, round(d["total_input_tokens"] / completed))
    mean_out = max(1, round(d["total_output_tokens"] / completed))
    spec = spec.with_(random_input_len=mean_in, random_output_len=mean_out, random_range_ratio=0.0)
    return MeasuredRun(tool, d.get("model_id"), spec,
                       f"every request at the file's mean lengths, {mean_in:,} in and {mean_out:,} out", measured)


def _checked(run: MeasuredRun, where: str) -> MeasuredRun:
    """The run, or ResultFileProblem when what it states is out of the engine's bounds (a run of
    10^9 requests, a request of 10^12 tokens), naming the key."""
    keys = {"num_prompts": "completed", "random_input_len": "total_input_tokens", "random_output_len": "total_output_tokens"}
    problems = [f"{where}{keys.get(i.field, i.field)}: {i.message}" for i in validate_spec(run.spec)]
    if problems:
        raise ResultFileProblem(problems)
    return run


def read_runs(data: bytes, tool: str | None = None, dataset: str | None = None) -> list[MeasuredRun]:
    """The runs of a result file, or ResultFileProblem naming each missing or bad key. `tool` and
    `dataset` say what the file does not (vLLM's files name no dataset): without a dataset or
    per-request lengths, every request is replayed at the file's mean lengths."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ResultFileProblem(["not UTF-8 text"]) from None
    objects = _objects(text)
    if len(objects) > MAX_RUNS:
        raise ResultFileProblem([f"{len(objects):,} runs; at most {MAX_RUNS} a file"])
    runs, problems = [], []
    for where, d in objects:
        if not isinstance(d, dict):
            problems.append(f"{where}expected a JSON object, got {type(d).__name__}")
            continue
        try:
            runs.append(_checked(_run(d, where, tool, dataset), where))
        except ResultFileProblem as e:
            problems += e.lines
    if problems:
        raise ResultFileProblem(problems)
    return runs


def error(predicted: float, measured: float) -> float:
    """Signed relative error of a prediction: +0.1 is 10% above what was measured."""
    return (predicted - measured) / measured if measured else math.inf


def largest_gap(errors: dict[str, float]) -> str:
    """Which part of the model the largest error points at, in one sentence."""
    parts = []
    if "mean_tpot_ms" in errors:
        parts.append((abs(errors["mean_tpot_ms"]), f"the decode step (mean TPOT {errors['mean_tpot_ms']:+.0%}): the "
                                                   "profile's bandwidth and per-step overheads"))
    if "median_ttft_ms" in errors:
        parts.append((abs(errors["median_ttft_ms"]), f"the prefill and front end (median TTFT {errors['median_ttft_ms']:+.0%}): "
                                                     "the prefill rate, chunking, or per-request costs before the first step"))
    if "p99_ttft_ms" in errors and "median_ttft_ms" in errors:
        tail = errors["p99_ttft_ms"] - errors["median_ttft_ms"]
        parts.append((abs(tail), f"queueing (p99 TTFT {errors['p99_ttft_ms']:+.0%} against the median's "
                                 f"{errors['median_ttft_ms']:+.0%}): admission, batch limits, or the arrival pattern"))
    if not parts:
        return "the file has too few latency figures to say"
    return max(parts)[1]
