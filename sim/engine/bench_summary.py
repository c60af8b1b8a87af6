"""A benchmark client's summary of an engine run: `bench_metrics()` reads an `EngineResult` the way
`vllm bench serve` and SGLang's `bench_serving` compute their figures, `summary_lines()` prints the
block the chosen client prints, and `result_json()` is what it saves (sources beside each)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .bench import BenchSpec
from .result import EngineResult, percentiles


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
    one (a run may hold 10^8 of them): its quantiles are within the 1% bins, and the deviation is
    the plotted density's, at that density's bin width; the mean and the maximum are exact."""
    p = r.itl_s
    edges, weights = r.itl_density.get("edges_s", []), r.itl_density.get("weights", [])
    total = math.fsum(weights)
    var = 0.0
    if total:
        mids = [(a + b) / 2 for a, b in zip(edges, edges[1:], strict=False)]
        var = math.fsum(w * (m - p.mean) ** 2 for m, w in zip(mids, weights, strict=False)) / total
    return Stat(p.mean * 1e3, p.p50 * 1e3, math.sqrt(var) * 1e3, p.p99 * 1e3, p.p95 * 1e3, p.max * 1e3)


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
