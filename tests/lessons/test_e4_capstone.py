"""The capstone: each case's first key is the limit sim names for its run, clear of every rule's threshold;
its second is the lever the simulator scores best, ahead of the runner-up by 10% or more; and the recap's
matrix is the figures the reveals were read from."""

from __future__ import annotations

import pytest
from kvlab.lessons import course
from kvlab.lessons.content import e4_capstone as e4

# The limit each case was written to teach, by the lever that relieves it.
WINNERS = {"tail": "replica", "saturation": "hbm", "cliff": "replica", "rag": "prefix", "single": "fp8"}


# The limit each case was written to show, as sim names it (sim/engine/diagnosis.py).
LIMITS = {"tail": "prefill", "saturation": "pool", "cliff": "arrivals", "rag": "repeated_prefill", "single": "decode_step"}


@pytest.fixture(scope="module")
def lesson():
    return course.lesson("E4")


@pytest.mark.parametrize("case", e4.CASES, ids=lambda c: c.key)
def test_each_case_is_won_by_its_lever_by_ten_percent(lesson, case):
    (best, top), (second, runner) = e4.ranked(case)[:2]
    assert best.key == WINNERS[case.key], f"{case.name}: {best.short} now wins, ahead of {second.short}"
    assert top.goodput_per_s >= 1.1 * runner.goodput_per_s, (top.goodput_per_s, runner.goodput_per_s)
    p = next(p for p in lesson.predictions if p.key == f"e4-{case.key}")
    assert p.answer == best.label
    assert [c.label for c in sorted(p.choices, key=lambda c: c.label)] == sorted(lv.label for lv in e4.levers(case))


@pytest.mark.parametrize("case", e4.CASES, ids=lambda c: c.key)
def test_each_case_first_asks_the_limit_sim_names(lesson, case):
    b = e4.as_is(case).binding_limit
    assert b["limit"] == LIMITS[case.key], f"{case.name}: sim now names {b['name']} ({b['reason']})"
    assert b["margin"] >= e4.LIMIT_MARGIN, (case.key, b["margin"])
    keys = [p.key for p in lesson.predictions]
    p = lesson.predictions[keys.index(f"e4-{case.key}-limit")]
    assert keys.index(f"e4-{case.key}") == keys.index(p.key) + 1  # the limit, then the lever
    assert p.answer == e4.LIMIT_CHOICES[b["limit"]]
    assert sorted(c.label for c in p.choices) == sorted(e4.LIMIT_CHOICES.values())
    assert b["reason"] in p.reveal


def test_the_recap_is_the_simulated_matrix(lesson):
    rows = [r for r in lesson.recap if any(r.startswith(e4.first_up(c.name) + ":") for c in e4.CASES)]
    assert len(rows) == len(e4.CASES)
    for case, row in zip(e4.CASES, rows, strict=True):
        for lever in e4.levers(case):
            assert f"{lever.short} {e4.multiple(e4.change(case, lever))}" in row, (case.key, lever.key, row)


def test_every_lever_changes_one_thing_and_the_replica_alone_adds_gpus():
    for case in e4.CASES:
        base = e4.as_is(case)
        for lever in e4.levers(case):
            r = e4.pulled(case, lever)
            assert r.ok and r.completed == base.completed == base.num_requests, (case.key, lever.key)
            assert r.gpus == base.gpus * (2 if lever.key == "replica" else 1), (case.key, lever.key)
