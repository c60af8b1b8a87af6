"""Plot the distribution, not the mean (seed 000): a histogram and a CDF of one latency, with
p50, p90, p99 and the mean marked, and the comparison policy drawn over it in a second colour.

TTFT, TPOT and E2E are one value per request; ITL is one value per generated token, read from the
run's 1%-wide histogram. Both axes of time are logarithmic because the interesting part of a
serving latency distribution is its tail, orders of magnitude above the median. Standard library
only (the histogram, the log-spaced bins and the CDF's thinning are computed here, not by numpy).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from itertools import accumulate

from . import html
from .format import seconds
from .lab_settings import METRICS, lab_choices

BINS = 48
CDF_POINTS = 400
MARKS = ("p50", "p90", "p99", "mean")
TAGS = ("h", "c")  # the histogram's and the CDF's copy of each mark
# A mark's label is written leftwards of its line from this far along the (log) axis, so it stays
# inside the plot: "p90 564 ms" is about 70 px, a quarter of the plot on a 320 px window.
LEFTWARDS_FROM = 0.6
EMPTY_HIST = {"left": [], "right": [], "top": []}
EMPTY_CDF = {"x": [], "y": []}


def samples(result, key: str) -> tuple[list[float], list[float]]:
    """(values, weights) of one latency: per request, or per token for ITL (histogram bins)."""
    if key == "itl_s":
        edges = [float(e) for e in result.itl_density.get("edges_s", [])]
        weights = [float(w) for w in result.itl_density.get("weights", [])]
        if len(edges) < 2:
            return [], []
        return [math.sqrt(a * b) for a, b in zip(edges, edges[1:], strict=False)], weights[:len(edges) - 1]
    # TPOT is 0 for one-token outputs: nothing to show on a log axis
    values = [float(v) for v in result.requests.get(key, []) if v > 0]
    return values, [1.0] * len(values)


def log_edges(lo: float, hi: float, bins: int = BINS) -> list[float]:
    """bins + 1 edges spaced evenly on a log axis from lo to hi (both exact)."""
    ratio = hi / lo
    edges = [lo * ratio ** (i / bins) for i in range(bins + 1)]
    edges[0], edges[-1] = lo, hi
    return edges


def histogram(values: list[float], weights: list[float], edges: list[float]) -> list[float]:
    """Share of the weight in each bin [e_i, e_i+1) (the last bin closed)."""
    sums = [[] for _ in range(len(edges) - 1)]
    for v, w in zip(values, weights, strict=True):
        if edges[0] <= v <= edges[-1]:
            sums[min(bisect_right(edges, v) - 1, len(sums) - 1)].append(w)
    total = math.fsum(weights)
    counts = [math.fsum(s) for s in sums]
    return [c / total for c in counts] if total else counts


def cdf(values: list[float], weights: list[float]) -> tuple[list[float], list[float]]:
    """At most CDF_POINTS points of the weighted cumulative distribution, evenly spread over the sorted values."""
    n = len(values)
    if not n:
        return [], []
    order = sorted(range(n), key=values.__getitem__)
    v = [values[i] for i in order]
    total = math.fsum(weights)
    c = [x / total for x in accumulate(weights[i] for i in order)]
    k = min(CDF_POINTS, n)
    picks = sorted({int(i * (n - 1) / (k - 1)) for i in range(k)}) if k > 1 else [0]
    return [v[i] for i in picks], [c[i] for i in picks]


def view_lab_distribution(run, values: dict) -> dict:
    metric = values["metric"]
    key = METRICS[metric]
    out: dict = {"w.lab-metric": {"active": lab_choices("metric").index(metric)}}
    runs = {"main": run.result, "compare": run.compare}
    data = {who: samples(r, key) if r is not None else ([], []) for who, r in runs.items()}
    everything = [v for vs, _ in data.values() for v in vs]
    if not everything:
        for who in runs:
            out[f"hist_{who}"] = {"data": dict(EMPTY_HIST)}
            out[f"cdf_{who}"] = {"data": dict(EMPTY_CDF)}
        out["caption"] = {"html": ""}
        return out
    lo, hi = min(everything), max(everything)
    hi = max(hi, lo * 1.05)
    edges = log_edges(lo / 1.02, hi * 1.02)
    for who, (vals, weights) in data.items():
        if vals:
            out[f"hist_{who}"] = {"data": {"left": edges[:-1], "right": edges[1:], "top": histogram(vals, weights, edges)}}
            x, y = cdf(vals, weights)
            out[f"cdf_{who}"] = {"data": {"x": x, "y": y}}
        else:
            out[f"hist_{who}"] = {"data": dict(EMPTY_HIST)}
            out[f"cdf_{who}"] = {"data": dict(EMPTY_CDF)}
    main = runs["main"]
    if main is None:
        out["caption"] = {"html": ""}
        return out
    p = getattr(main, key)
    marks = {"p50": p.p50, "p90": p.p90, "p99": p.p99, "mean": p.mean}
    for mark, v in marks.items():
        x = max(v, lo)
        leftwards = math.log(x / edges[0]) / math.log(edges[-1] / edges[0]) >= LEFTWARDS_FROM
        for tag in TAGS:
            out[f"{mark}_{tag}_span"] = {"location": x}
            out[f"{mark}_{tag}_label"] = {"x": x, "text": f"{mark} {seconds(v)}", "text_align": "right" if leftwards else "left",
                                          "x_offset": -4 if leftwards else 4}
    ratio = p.p99 / p.p50 if p.p50 else 0
    note = (f"{metric}: p50 {seconds(p.p50)}, p90 {seconds(p.p90)}, p99 {seconds(p.p99)}, max {seconds(p.max)}; "
            f"the mean ({seconds(p.mean)}) hides a p99 {ratio:.1f}x the median.")
    other = runs["compare"]
    if other is not None:
        q = getattr(other, key)
        note += f" Comparison ({other.policy}): p50 {seconds(q.p50)}, p99 {seconds(q.p99)}."
    out["caption"] = {"html": f'<p class="kv-caption" data-kv="lab-distribution">{html.esc(note)}</p>'}
    return out
