"""Shared pieces of the fuzz suite: the input counts per surface and the value strategies.

Each surface checks its inputs in batches of BATCH per hypothesis example: hypothesis's own cost
per example (recording, mutating, bookkeeping) was most of a surface's time (measured: the API
surface's generation fell from 1.76 to 0.77 ms CPU an input, the links' from 1.82 to 0.43, at 8
per example). A failing input is named in the report (`check_each`) and shrunk like any other.

Locally every surface tries QUICK inputs; CI (CI=true) tries its count in CI_INPUTS (3,000 on the six
first surfaces, 300-2,000 on the file surfaces); KVLAB_FUZZ=full tries FULL per surface,
KVLAB_FUZZ=<n> any count.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
import tracemalloc

from hypothesis import HealthCheck, note, settings
from hypothesis import strategies as st

QUICK = 40
FULL = 10_000
BATCH = 10
# Inputs per surface under CI=true. The proof that every surface holds at FULL (10,000 inputs) was the
# CI run of 2026-12-01: 0 failures in 60,000 inputs, 104 s. CI keeps 3,000 a surface as a regression
# check: at 10,000 the six surfaces took 100.5 s of the 875.9 s suite of 2026-12-03 (links 31.1 s, CLI
# 21.8, engine 21.2, traces 14.4, API 5.9, config 5.9), which left too little of CI's 15 minutes;
# KVLAB_FUZZ=full runs the proof again. CPU cost per input beside each: time.process_time of
# KVLAB_FUZZ=1000 runs (batches of 10) on the shared 2-core machine.
CI_SURFACE_INPUTS = 3_000
CI_INPUTS = {
    "api": CI_SURFACE_INPUTS,  # 0.67 ms an input
    "config_json": CI_SURFACE_INPUTS,  # 0.60 ms
    "links": CI_SURFACE_INPUTS,  # 1.32 ms (three readers per query)
    "traces": CI_SURFACE_INPUTS,  # 0.8-2.0 ms
    "engine": CI_SURFACE_INPUTS,  # about 2.5 ms (a run of up to 16 requests, 1 in 20 rerun under tracemalloc)
    # nearly all the command itself (argument checks, a run of 8 requests or a steady-state
    # evaluation, the printed report)
    "cli": CI_SURFACE_INPUTS,  # about 2 ms
    # the files a user hands kvlab, each through its command line (test_fuzz_user_files.py): about
    # 9-10 ms an input for a config or a trace (a file written, read, the command run), so 1,000 each;
    # a measurements file is fitted as well, 65 ms an input (65.5 s for 1,000 in a CI-mode run of
    # 2026-12-03, which found the OverflowError of a 401-digit integer), so 300
    "files_config": 1_000,
    "files_trace": 1_000,
    "files_measurements": 300,
    "files_reader": 2_000,  # sim.userfile alone (decode, parse): about 3 ms an input, most of it generation
}
BUDGET_BYTES = 256 * 2**20  # the engine's stated memory budget per run (docs/engine.md)


def inputs(surface: str) -> int:
    env = os.environ.get("KVLAB_FUZZ", "")
    if env.isdigit():
        return int(env)
    if env == "full":
        return FULL
    if os.environ.get("CI", "").lower() == "true":
        return CI_INPUTS[surface]
    return QUICK


def fuzz(surface: str):
    """Hypothesis settings of one fuzz surface: its inputs in batches of BATCH."""
    deadline = os.environ.get("KVLAB_FUZZ_DEADLINE_MS", "")  # set it to hunt slow batches
    return settings(max_examples=-(-inputs(surface) // BATCH), deadline=int(deadline) if deadline.isdigit() else None,
                    derandomize=False, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])


def batches(strategy):
    return st.lists(strategy, min_size=BATCH, max_size=BATCH)


def check_each(batch, check) -> None:
    """Run `check` on every input of a batch; a failure names its input in hypothesis's report."""
    for item in batch:
        try:
            check(item)
        except BaseException:
            note(f"failing input: {item!r}"[:4000])
            raise


# Anything a caller could pass where a number belongs: huge and negative ints, nan, inf, 1e308,
# bools, strings (unicode, empty, numeric-looking), None, containers.
# Huge integers as (digits, leading digit): one bounded draw of 10**4000 costs hypothesis about
# 0.6 ms (it draws every bit), this 0.16 ms, and it reaches every length from 16 to 4,001 digits.
huge = st.tuples(st.integers(15, 4000), st.integers(1, 9)).map(lambda t: t[1] * 10**t[0] + t[0])
hostile = st.one_of(
    st.integers(),
    huge,
    huge.map(lambda n: -n),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e308, -1e308, 5e-324, 0.0, -0.0, 2**63, 2**64]),
    st.booleans(),
    st.none(),
    st.text(max_size=30),
    st.sampled_from(["", "1", "1e3", "nan", "../x", "/etc/passwd", "\u202e", "<script>", "9" * 500]),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


def subsets(values: dict, max_size: int):
    """Dicts of up to `max_size` of the keys of `values`, each value drawn from its own strategy.
    The strategies are built once: a strategy built per example (a flatmap) costs hypothesis a
    validation pass each time, which was most of the generation time."""
    keys = st.lists(st.sampled_from(sorted(values)), unique=True, max_size=max_size)

    @st.composite
    def draw_subset(draw):
        return {k: draw(values[k]) for k in draw(keys)}
    return draw_subset()


def in_range(low: float, high: float, integer: bool):
    """Valid values of a field, with its edges drawn often."""
    if integer:
        return st.one_of(st.sampled_from([int(low), int(high)]), st.integers(int(low), int(high)),
                         st.integers(int(low), int(high)).map(float))
    return st.one_of(st.sampled_from([low, high]), st.floats(low, high, allow_nan=False))


def finite_numbers(obj, path: str = "") -> list[str]:
    """Paths of every non-finite float inside a result (a dict, or a dataclass read field by field:
    `asdict` deep-copies the run's whole log, about 34 ms a run); nan allowed nowhere."""
    bad = []
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            bad += finite_numbers(getattr(obj, f.name), f"{path}.{f.name}")
    elif isinstance(obj, float):
        if not math.isfinite(obj):
            bad.append(path)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            bad += finite_numbers(v, f"{path}.{k}")
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj[:50]):
            bad += finite_numbers(v, f"{path}[{i}]")
    return bad


# tracemalloc slows an engine run about 9x (1.5 -> 13.5 ms a run, measured on this machine), so a
# fuzz run is first run plain, then again under tracemalloc when it is one of the runs where memory
# could grow: every MEMORY_SAMPLE_EVERY-th run (500 of the engine surface's 10,000), and every run whose simulated span passes
# LONG_SPAN_S (memory once grew with the span: a snapshot per 10 s log interval). The engine is
# deterministic, so the measured rerun must also give the same result: checked too.
MEMORY_SAMPLE_EVERY = 20
LONG_SPAN_S = 1e5
_runs = itertools.count()


def measure_memory(result) -> bool:
    """Whether this run is measured under tracemalloc (see above)."""
    return next(_runs) % MEMORY_SAMPLE_EVERY == 0 or not result.duration_s <= LONG_SPAN_S


def peak_of(run, result):
    """Rerun `run` (a no-argument function) under tracemalloc; assert it stays under the budget and
    gives the same result as the plain run. Returns the peak in bytes."""
    with Peak() as peak:
        again = run()
    assert peak.bytes < BUDGET_BYTES, (peak.bytes, BUDGET_BYTES)
    assert again == result, "the same config gave a different result"
    return peak.bytes


class Peak:
    """Peak traced Python memory of a block (tracemalloc)."""

    def __enter__(self):
        tracemalloc.start()
        return self

    def __exit__(self, *exc):
        self.bytes = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
