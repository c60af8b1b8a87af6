"""Shared pieces of the fuzz suite: the example budget and the value strategies.

Locally every surface tries a quick FUZZ_QUICK examples; CI (CI=true) tries FUZZ_CI, sized so the
whole suite stays under its 15 minutes on 2 cores; KVLAB_FUZZ=full runs FUZZ_FULL examples per
surface (issue 16's proof run: 2,000 per surface took 508 s on the shared 2-core machine at load
average 6-9, so 10,000 is a separate run, not every CI run). KVLAB_FUZZ=<n> sets any count.
"""

from __future__ import annotations

import math
import os
import tracemalloc

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

FUZZ_QUICK = 40
FUZZ_CI = 1_000
FUZZ_FULL = 10_000
BUDGET_BYTES = 256 * 2**20  # the engine's stated memory budget per run (docs/engine.md)


def examples(quick: int = FUZZ_QUICK) -> int:
    env = os.environ.get("KVLAB_FUZZ", "")
    if env.isdigit():
        return int(env)
    if env == "full":
        return FUZZ_FULL
    if os.environ.get("CI", "").lower() == "true":
        return FUZZ_CI
    return quick


def fuzz(quick: int = FUZZ_QUICK):
    """Hypothesis settings of one fuzz surface."""
    deadline = os.environ.get("KVLAB_FUZZ_DEADLINE_MS", "")  # set it to hunt slow inputs
    return settings(max_examples=examples(quick), deadline=int(deadline) if deadline.isdigit() else None, derandomize=False, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])


# Anything a caller could pass where a number belongs: huge and negative ints, nan, inf, 1e308,
# bools, strings (unicode, empty, numeric-looking), None, containers.
hostile = st.one_of(
    st.integers(),
    st.integers(min_value=10**15, max_value=10**4000),
    st.integers(max_value=-(10**15), min_value=-(10**4000)),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e308, -1e308, 5e-324, 0.0, -0.0, 2**63, 2**64]),
    st.booleans(),
    st.none(),
    st.text(max_size=30),
    st.sampled_from(["", "1", "1e3", "nan", "../x", "/etc/passwd", "\u202e", "<script>", "9" * 500]),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


def in_range(low: float, high: float, integer: bool):
    """Valid values of a field, with its edges drawn often."""
    if integer:
        return st.one_of(st.sampled_from([int(low), int(high)]), st.integers(int(low), int(high)),
                         st.integers(int(low), int(high)).map(float))
    return st.one_of(st.sampled_from([low, high]), st.floats(low, high, allow_nan=False))


def finite_numbers(obj, path: str = "") -> list[str]:
    """Paths of every non-finite float inside a result dict (nan allowed nowhere)."""
    bad = []
    if isinstance(obj, float):
        if not math.isfinite(obj):
            bad.append(path)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            bad += finite_numbers(v, f"{path}.{k}")
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj[:50]):
            bad += finite_numbers(v, f"{path}[{i}]")
    return bad


class Peak:
    """Peak traced Python memory of a block (tracemalloc)."""

    def __enter__(self):
        tracemalloc.start()
        return self

    def __exit__(self, *exc):
        self.bytes = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
