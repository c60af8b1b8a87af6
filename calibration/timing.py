"""How one point of a curve is timed: warm-up, rotating buffers, median of repeats, a time budget.

The rules, and why (they follow mamf-finder and triton's do_bench):
- Warm-up calls first: the first call of a cuBLAS shape picks a kernel, loads it, and may JIT.
- Rotating buffers whose total is several times the L2 cache: timing the same 30 MB buffer
  again and again measures the 50 MB L2, not HBM. Each timed call uses the next buffer set.
- One pair of device events around many back-to-back calls (on a GPU), after a spin kernel has
  given the GPU queued work, so neither host launch latency nor the events' own few microseconds
  are charged to each call (that bias made 8-30 us small-M GEMMs look slow); on the CPU,
  time.perf_counter. A sample is (elapsed time) / (calls in the batch); the suite records the
  floor an empty event pair reads (Backend.event_floor_s) beside the results.
- The median of the samples, with the 10th and 90th percentiles kept to show the spread; a mean
  would let one preempted call move the number.
- The repeat count is sized from the warm-up estimate to fill a time slice, within bounds, and
  the whole suite shares one budget so it finishes in its promised time.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from .backend import Backend

# Rotating buffer sets together span at least this many L2 caches.
L2_FLUSH_FACTOR = 4
MAX_ROTATING_SETS = 64


@dataclass(frozen=True)
class Timing:
    median_s: float
    p10_s: float
    p90_s: float
    repeats: int
    calls_per_sample: int = 1

    def as_dict(self) -> dict:
        return {"time_s": self.median_s, "time_p10_s": self.p10_s, "time_p90_s": self.p90_s, "repeats": self.repeats,
                "calls_per_sample": self.calls_per_sample}


def quantile(sorted_samples: list[float], q: float) -> float:
    """Linear-interpolated quantile of already sorted samples, q in [0, 1]."""
    if not sorted_samples:
        raise ValueError("no samples")
    pos = q * (len(sorted_samples) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_samples) - 1)
    return sorted_samples[lo] + (pos - lo) * (sorted_samples[hi] - sorted_samples[lo])


def summarize(samples: list[float], calls_per_sample: int = 1) -> Timing:
    s = sorted(samples)
    return Timing(statistics.median(s), quantile(s, 0.1), quantile(s, 0.9), len(s), calls_per_sample)


def rotating_sets(bytes_per_set: int, l2_bytes: int, free_bytes: int, max_fraction_of_free: float = 0.5) -> int:
    """How many copies of a working set to rotate through so that together they exceed
    L2_FLUSH_FACTOR x L2, bounded by MAX_ROTATING_SETS and by a fraction of free memory.

    Worked example: a 4096 x 4096 bf16 weight (33.5 MB) on an H200 (L2 about 50 MB) needs
    ceil(4 x 50 / 33.5) = 6 sets; a 1.2 GB hidden x vocab weight needs 1.
    """
    if bytes_per_set <= 0:
        return 1
    wanted = math.ceil(L2_FLUSH_FACTOR * l2_bytes / bytes_per_set)
    affordable = int(max_fraction_of_free * free_bytes // bytes_per_set)
    return max(1, min(wanted, MAX_ROTATING_SETS, max(affordable, 1)))


class Budget:
    """A wall-clock allowance shared by the whole suite."""

    def __init__(self, total_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.total_s = total_s
        self._clock = clock
        self._start = clock()
        # Kept back for benchmarks still to come (the suite sets it before each benchmark), so a
        # long sweep cannot spend the time of the ones after it.
        self.reserved_s = 0.0

    def elapsed_s(self) -> float:
        return self._clock() - self._start

    def remaining_s(self) -> float:
        return max(0.0, self.total_s - self.reserved_s - self.elapsed_s())

    def exhausted(self) -> bool:
        return self.remaining_s() <= 0.0

    def slice_s(self, units_left: int, ceiling_s: float) -> float:
        """Time for the next unit of work: a fair share of what remains, at most ceiling_s."""
        return min(ceiling_s, self.remaining_s() / max(units_left, 1))


@dataclass(frozen=True)
class RepeatPolicy:
    warmup: int
    min_repeats: int
    max_repeats: int


def measure(backend: Backend, call: Callable[[int], None], n_sets: int, policy: RepeatPolicy, target_s: float) -> Timing:
    """Time call(set_index) over rotating sets: warm up (a first batch, discarded, then a second
    that estimates the time per call), size the batch so that min_repeats batches take about
    target_s, and return the median and spread of the per-call times of the batches.

    A batch holds between 1 and policy.max_repeats back-to-back calls: about 200 calls of a
    10 us GEMM, a single call of a 30 ms one."""
    warmup = max(policy.warmup, 1)
    backend.time_batch(lambda i: call(i % n_sets), warmup)
    estimate_s = max(backend.time_batch(lambda i: call((warmup + i) % n_sets), warmup), 1e-7)
    batches = max(policy.min_repeats, 1)
    calls = max(1, min(policy.max_repeats, int(target_s / batches / estimate_s)))
    offset = 2 * warmup
    samples = []
    for _ in range(batches):
        samples.append(backend.time_batch(lambda i, offset=offset: call((offset + i) % n_sets), calls))
        offset += calls
    return summarize(samples, calls)
