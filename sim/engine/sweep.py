"""Runs of several configurations: a request-rate sweep (where is the cliff?), a side-by-side
comparison of policies on one seeded workload, and colocated against disaggregated serving on the
same number of GPUs. Each is a `Job` that advances in slices of events, reports its progress and
can be cancelled: the serving lab drives it from a periodic callback, the CLI to the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .config import Cluster, EngineConfig
from .result import EngineResult
from .run import finish, prepare


@dataclass(frozen=True)
class SweepPoint:
    rate_per_s: float
    ttft_p50_s: float
    ttft_p99_s: float
    e2e_p50_s: float
    e2e_p99_s: float
    itl_p99_s: float
    throughput_per_s: float
    goodput_per_s: float
    preemptions: int
    mean_kv_usage: float
    mean_running: float


@dataclass(frozen=True)
class BandPoint:
    """p99 TTFT at one rate across several random seeds of the same workload."""

    rate_per_s: float
    ttft_p99_low_s: float
    ttft_p99_high_s: float


@dataclass(frozen=True)
class Sweep:
    """`points` and `knee_rate_per_s` are the first seed's; with several seeds, `band` holds each
    rate's p99 TTFT range over them and `seed_knees` each seed's knee (None: no knee in range)."""

    points: list[SweepPoint] = field(default_factory=list)
    knee_rate_per_s: float | None = None
    errors: list[dict] = field(default_factory=list)
    cancelled: bool = False
    band: list[BandPoint] = field(default_factory=list)
    seed_knees: list[float | None] = field(default_factory=list)


KNEE_METRIC = "ttft_p99_s"


def knee(points: list[SweepPoint], factor: float = 3.0, metric: str = KNEE_METRIC) -> float | None:
    """The lowest swept rate whose p99 latency exceeds `factor` x the lightest-load p99: where the
    curve leaves its floor. None if it never does within the sweep.

    The default reads p99 TTFT: once the KV pool is full, new requests wait for admission and
    their first token falls off the cliff, while E2E also rises smoothly before that because every
    decode step reads a bigger cache."""
    if not points:
        return None
    base = getattr(points[0], metric)
    for p in points:
        if getattr(p, metric) > factor * base:
            return p.rate_per_s
    return None


def point(rate: float, r: EngineResult) -> SweepPoint:
    return SweepPoint(rate, r.ttft_s.p50, r.ttft_s.p99, r.e2e_s.p50, r.e2e_s.p99, r.itl_s.p99, r.throughput_per_s,
                      r.goodput_per_s, r.preemptions, r.mean_kv_usage, r.mean_running)


class Job:
    """A list of configurations run one after another, `advance(events)` at a time."""

    def __init__(self, configs: list[EngineConfig], labels: list | None = None):
        self.configs = configs
        self.labels = labels or list(range(len(configs)))
        self.results: list[EngineResult] = []
        self._current = None
        self.cancelled = False

    @property
    def done(self) -> bool:
        return self.cancelled or len(self.results) == len(self.configs)

    @property
    def progress(self) -> float:
        if not self.configs:
            return 1.0
        partial = self._current.progress if self._current is not None else 0.0
        return min(1.0, (len(self.results) + partial) / len(self.configs))

    @property
    def completed_requests(self) -> int:
        """Requests finished so far, over every run of the job."""
        done = sum(r.completed for r in self.results)
        return done + (self._current.completed if self._current is not None else 0)

    @property
    def total_requests(self) -> int:
        return sum(len(c.workload.trace or ()) if c.workload.arrival == "trace" else c.workload.num_requests for c in self.configs)

    def cancel(self) -> None:
        """Stop; the run in progress is summarised as it stands (its result says `cancelled`)."""
        if self.done:
            return
        self.cancelled = True
        if self._current is not None:
            self._current.cancel()
            self._finish_current()

    def advance(self, max_events: int = 20_000) -> bool:
        """Run up to about `max_events` events; True when every run is finished (or cancelled)."""
        budget = max_events
        while not self.done and budget > 0:
            if self._current is None:
                sim = prepare(self.configs[len(self.results)])
                if isinstance(sim, EngineResult):  # bad input: recorded, move on
                    self.results.append(sim)
                    continue
                self._current = sim
            before = self._current.events
            finished = self._current.advance(budget)
            budget -= max(self._current.events - before, 1)
            if finished:
                self._finish_current()
        return self.done

    def _finish_current(self) -> None:
        self.results.append(finish(self._current))
        self._current = None

    def run(self) -> list[EngineResult]:
        while not self.advance(1 << 30):
            pass
        return self.results


def rate_sweep_job(config: EngineConfig, rates: list[float]) -> Job:
    return Job([config.with_(rate_per_s=r) for r in rates], labels=list(rates))


def sweep_from(job: Job, factor: float = 3.0) -> Sweep:
    pts, errors = [], []
    for rate, r in zip(job.labels, job.results, strict=False):
        if r.errors:
            errors.extend(r.errors)
            continue
        if r.cancelled:
            continue  # a partial run's tail is not a point on the curve
        pts.append(point(rate, r))
    return Sweep(pts, knee(pts, factor), errors, job.cancelled)


def seed_band_job(config: EngineConfig, rates: list[float], seeds: list[int]) -> Job:
    """The rate sweep once per random seed of the workload, first seed first."""
    return Job([config.with_(rate_per_s=r, seed=s) for s in seeds for r in rates], labels=[(s, r) for s in seeds for r in rates])


def band_from(job: Job, factor: float = 3.0) -> Sweep:
    """The first seed's sweep, plus the p99 TTFT band and the knee of every seed that finished."""
    by_seed: dict[int, list[SweepPoint]] = {}
    errors = []
    for (seed, rate), r in zip(job.labels, job.results, strict=False):
        if r.errors:
            errors.extend(r.errors)
        elif not r.cancelled:
            by_seed.setdefault(seed, []).append(point(rate, r))
    seeds = list(dict.fromkeys(seed for seed, _ in job.labels))
    first = by_seed.get(seeds[0], []) if seeds else []
    complete = [by_seed[s] for s in seeds if len(by_seed.get(s, [])) == len(first)]
    band = [BandPoint(p.rate_per_s, min(c[i].ttft_p99_s for c in complete), max(c[i].ttft_p99_s for c in complete))
            for i, p in enumerate(first)] if len(complete) > 1 else []
    return Sweep(first, knee(first, factor), errors, job.cancelled, band, [knee(c, factor) for c in complete])


def rate_sweep(config: EngineConfig, rates: list[float], factor: float = 3.0) -> Sweep:
    job = rate_sweep_job(config, rates)
    job.run()
    return sweep_from(job, factor)


def compare_job(config: EngineConfig, variants: dict[str, dict]) -> Job:
    """The same seeded workload under each variant's changes (e.g. {"fcfs": {"policy": "fcfs"}})."""
    return Job([config.with_(**changes) for changes in variants.values()], labels=list(variants))


def colocated_vs_disaggregated(config: EngineConfig, prefill_instances: int, decode_instances: int) -> Job:
    """The same workload on the same number of GPUs: prefill + decode instances as colocated
    replicas, then split into separate prefill and decode pools."""
    n = prefill_instances + decode_instances
    return Job([
        config.with_(cluster=Cluster(replicas=n)),
        config.with_(cluster=Cluster(disaggregated=True, prefill_instances=prefill_instances, decode_instances=decode_instances)),
    ], labels=["colocated", "disaggregated"])
