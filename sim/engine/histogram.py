"""A weighted histogram on a log scale, for inter-token latencies.

A run of k decode steps produces k x n inter-token gaps whose values lie on a straight line from
the first step's duration to the last one's; storing each would cost O(tokens). Instead the gaps of
a run are spread evenly over [first, last] into bins 1% wide, so quantiles come back within 1% and
the cost per run is the number of bins the line crosses (a handful: a run's step time changes by a
few percent at most). min, max, count and sum are exact.
"""

from __future__ import annotations

import math

RATIO = 1.01
_LOG_RATIO = math.log(RATIO)
_FLOOR_S = 1e-9


def _index(x: float) -> int:
    return math.floor(math.log(max(x, _FLOOR_S)) / _LOG_RATIO)


def _edge(i: int) -> float:
    return math.exp(i * _LOG_RATIO)


class LogHistogram:
    __slots__ = ("bins", "count", "total", "min", "max")

    def __init__(self):
        self.bins: dict[int, float] = {}
        self.count = 0.0
        self.total = 0.0
        self.min = math.inf
        self.max = 0.0

    def add(self, x: float, weight: float = 1.0) -> None:
        i = _index(x)
        self.bins[i] = self.bins.get(i, 0.0) + weight
        self.count += weight
        self.total += x * weight
        if x < self.min:
            self.min = x
        if x > self.max:
            self.max = x

    def add_linear(self, first: float, last: float, steps: int, weight: float) -> None:
        """`steps` values evenly spaced from `first` to `last`, each with `weight`."""
        if steps <= 0 or weight <= 0:
            return
        lo, hi = (first, last) if first <= last else (last, first)
        mass = steps * weight
        if steps == 1 or hi - lo <= 1e-12 * hi:
            self.add(first if steps == 1 else (lo + hi) / 2, mass)
            return
        self.count += mass
        self.total += mass * (lo + hi) / 2
        self.min = min(self.min, lo)
        self.max = max(self.max, hi)
        i, j = _index(lo), _index(hi)
        bins = self.bins
        if i == j:
            bins[i] = bins.get(i, 0.0) + mass
            return
        span = hi - lo
        for b in range(i, j + 1):
            a = max(lo, _edge(b))
            z = min(hi, _edge(b + 1))
            if z > a:
                bins[b] = bins.get(b, 0.0) + mass * (z - a) / span

    def merge(self, other: LogHistogram) -> None:
        for i, w in other.bins.items():
            self.bins[i] = self.bins.get(i, 0.0) + w
        self.count += other.count
        self.total += other.total
        self.min = min(self.min, other.min)
        self.max = max(self.max, other.max)

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else 0.0

    def quantile(self, q: float) -> float:
        """Value below which a fraction q of the weight lies (geometric interpolation in the bin)."""
        if not self.count:
            return 0.0
        if q >= 1.0:
            return self.max
        target = q * self.count
        cum = 0.0
        for i in sorted(self.bins):
            w = self.bins[i]
            if cum + w >= target:
                frac = (target - cum) / w if w else 0.0
                x = _edge(i) * RATIO ** frac
                return min(max(x, self.min), self.max)
            cum += w
        return self.max

    def cumulative(self, x: float) -> float:
        """Weight at or below x (what a Prometheus bucket with upper bound x counts)."""
        cum = 0.0
        k = _index(x)
        for i, w in self.bins.items():
            if i < k:
                cum += w
            elif i == k:
                lo = _edge(i)
                cum += w * min(max(math.log(x / lo) / _LOG_RATIO, 0.0), 1.0)
        return cum

    def density(self, points: int = 120) -> tuple[list[float], list[float]]:
        """(bin left edges, weights) regrouped into about `points` bins, for plotting."""
        if not self.bins:
            return [], []
        lo, hi = min(self.bins), max(self.bins)
        group = max(1, math.ceil((hi - lo + 1) / points))
        edges, weights = [], []
        for start in range(lo, hi + 1, group):
            edges.append(_edge(start))
            weights.append(math.fsum(self.bins.get(b, 0.0) for b in range(start, start + group)))
        edges.append(_edge(hi + 1 if group == 1 else lo + len(weights) * group))
        return edges, weights
