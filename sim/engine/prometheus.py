"""The run's counters as a Prometheus text exposition under vLLM V1's metric names and buckets
(vllm/v1/metrics/loggers.py, v0.10-v0.11), one series per engine, as `/metrics` would show them at
the end of the run. Counters carry prometheus_client's `_total` suffix; histograms their
`_bucket`/`_sum`/`_count` series. Inter-token latency buckets are read from the run's 1%-wide
log histogram, so a bucket boundary falling inside a bin is interpolated within that bin.
"""

from __future__ import annotations

import math

TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
ITL_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0)
REQUEST_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
                   480.0, 960.0, 1920.0, 7680.0)


def _labels(model: str, engine: int, **extra) -> str:
    items = {"engine": str(engine), "model_name": model, **extra}
    return "{" + ",".join(f'{k}="{v}"' for k, v in items.items()) + "}"


def _num(x: float) -> str:
    if isinstance(x, int):
        return f"{float(x)!r}"
    return repr(float(x)) if math.isfinite(x) else ("+Inf" if x > 0 else "NaN")


class _Writer:
    def __init__(self, model: str, engines: list[int]):
        self.model = model
        self.engines = engines
        self.lines: list[str] = []

    def scalar(self, name: str, kind: str, doc: str, values: dict[int, float], suffix: str = "", **extra) -> None:
        self.lines += [f"# HELP {name} {doc}", f"# TYPE {name} {kind}"]
        for e in self.engines:
            self.lines.append(f"{name}{suffix}{_labels(self.model, e, **extra)} {_num(values.get(e, 0.0))}")

    def histogram(self, name: str, doc: str, buckets, per_engine: dict[int, tuple]) -> None:
        """per_engine: engine -> (cumulative count function, count, sum)."""
        self.lines += [f"# HELP {name} {doc}", f"# TYPE {name} histogram"]
        for e in self.engines:
            below, n, total = per_engine.get(e, (lambda x: 0, 0, 0.0))
            for b in buckets:
                self.lines.append(f"{name}_bucket{_labels(self.model, e, le=repr(float(b)))} {_num(float(round(below(b))))}")
            self.lines.append(f"{name}_bucket{_labels(self.model, e, le='+Inf')} {_num(float(round(n)))}")
            self.lines.append(f"{name}_count{_labels(self.model, e)} {_num(float(round(n)))}")
            self.lines.append(f"{name}_sum{_labels(self.model, e)} {_num(total)}")


def _sample_histogram(values: list[float]):
    srt = sorted(values)

    def below(x: float) -> int:
        lo, hi = 0, len(srt)
        while lo < hi:
            mid = (lo + hi) // 2
            if srt[mid] <= x:
                lo = mid + 1
            else:
                hi = mid
        return lo
    return below, len(srt), math.fsum(srt)


def exposition(metrics, instances, model: str) -> str:
    engines = [i.index for i in instances]
    w = _Writer(model, engines)
    w.scalar("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.",
             {i.index: len(i.running) for i in instances})
    w.scalar("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
             {i.index: len(i.waiting) for i in instances})
    w.scalar("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.",
             {i.index: i.blocks.used() / i.blocks.total for i in instances})
    w.scalar("vllm:prefix_cache_queries", "counter", "Prefix cache queries, in terms of number of queried tokens.",
             {i.index: i.prefix_queries for i in instances}, suffix="_total")
    w.scalar("vllm:prefix_cache_hits", "counter", "Prefix cache hits, in terms of number of cached tokens.",
             {i.index: i.prefix_hits for i in instances}, suffix="_total")
    w.scalar("vllm:num_preemptions", "counter", "Cumulative number of preemption from the engine.",
             {i.index: i.preemptions for i in instances}, suffix="_total")
    w.scalar("vllm:prompt_tokens", "counter", "Number of prefill tokens processed.",
             {i.index: metrics.inst[i.index].prompt_tokens for i in instances}, suffix="_total")
    w.scalar("vllm:generation_tokens", "counter", "Number of generation tokens processed.",
             {i.index: metrics.inst[i.index].generation_tokens for i in instances}, suffix="_total")
    w.scalar("vllm:request_success", "counter", "Count of successfully processed requests.",
             {i.index: metrics.inst[i.index].finished for i in instances}, suffix="_total", finished_reason="length")
    by_engine: dict[str, dict[int, list[float]]] = {"ttft": {}, "e2e": {}, "queue": {}}
    for r in range(len(metrics.finish_s)):
        f = metrics.finish_s[r]
        if f != f:
            continue
        a = metrics.arrival_s[r]
        by_engine["ttft"].setdefault(metrics.first_instance[r], []).append(metrics.first_token_s[r] - a)
        by_engine["e2e"].setdefault(metrics.finish_instance[r], []).append(f - a)
        by_engine["queue"].setdefault(metrics.first_instance[r], []).append(metrics.admitted_s[r] - metrics.ready_s[r])
    w.histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", TTFT_BUCKETS,
                {e: _sample_histogram(v) for e, v in by_engine["ttft"].items()})
    w.histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", ITL_BUCKETS,
                {i.index: (metrics.inst[i.index].itl.cumulative, metrics.inst[i.index].itl.count, metrics.inst[i.index].itl.total)
                 for i in instances})
    w.histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", REQUEST_BUCKETS,
                {e: _sample_histogram(v) for e, v in by_engine["e2e"].items()})
    w.histogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", REQUEST_BUCKETS,
                {e: _sample_histogram(v) for e, v in by_engine["queue"].items()})
    return "\n".join(w.lines) + "\n"
