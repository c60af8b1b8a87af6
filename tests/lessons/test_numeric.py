"""Numeric predictions (issue 34): the student types an estimate, sees how far off it is, then the reveal and
a math peek. The rules here are model.py's; the pages (both runtimes) are tested in tests/browser and tests/site."""

import pytest
from kvlab.lessons import course
from kvlab.lessons.content.model import (
    estimate_limit,
    estimate_problem,
    estimate_verdict,
    number,
    place_answers,
    read_estimate,
    visible_blocks,
)

NUMERIC = [(code, s) for code in course.written() for s in course.lesson(code).steps if s.prediction.numeric]


def test_the_five_lessons_each_ask_for_one_number():
    assert sorted(code for code, _ in NUMERIC) == ["A1", "A3", "B1", "D2", "E3"]


@pytest.mark.parametrize(("x", "text"), [(327680, "327,680"), (55.70230674743652, "55.7"), (128.2949, "128"),
                                         (0.6237396, "0.624"), (24000.0, "24,000"), (999.96, "1,000"), (0.125, "0.125"),
                                         (2.5, "2.5"), (1e9, "1,000,000,000"), (0.1 + 0.2, "0.3"), (150000.5, "150,001")])
def test_one_formatter_separates_thousands_and_keeps_three_figures_without_float_noise(x, text):
    assert number(x) == text


def _a1():
    return next(s.prediction for code, s in NUMERIC if code == "A1")


@pytest.mark.parametrize("typed", ["", "   ", "abc", "0", "-5", "1e99", "inf", "nan", "0x10", "1.2.3", "<b>1</b>"])
def test_bad_estimates_are_refused_with_the_field_and_its_range(typed):
    p = _a1()
    assert read_estimate(typed, p) is None
    assert estimate_problem(p) == "KV cache per token: enter a number above 0 and at most 1,000,000,000 (bytes)."


@pytest.mark.parametrize(("typed", "value"), [("150000", 150000.0), ("150,000", 150000.0), (" 1.5e5 ", 150000.0),
                                              ("144_000", 144000.0), (".5", 0.5)])
def test_estimates_are_read_with_separators_and_exponents(typed, value):
    assert read_estimate(typed, _a1()) == value


def test_the_verdict_says_how_many_times_off_and_which_way():
    p = _a1()  # 163,840 bytes per token
    assert estimate_verdict(150000, p) == "You said 150,000 bytes; the simulator says 163,840 bytes: within 10%."
    assert estimate_verdict(p.figure * 2.5, p).endswith(": off by 2.5x (too high).")
    assert estimate_verdict(40960, p) == "You said 40,960 bytes; the simulator says 163,840 bytes: off by 4x (too low)."
    assert estimate_limit(p) == 1e9


@pytest.mark.parametrize(("code", "step"), NUMERIC, ids=[c for c, _ in NUMERIC])
def test_the_figure_and_the_peek_wait_for_the_estimate(code, step):
    lesson, p = course.lesson(code), step.prediction
    before = " ".join(text for _, text in visible_blocks(lesson, set()))
    assert not any(g in before for g in p.gives_away) and not any(c.text in before for c in p.peek)
    after = " ".join(text for kind, text in visible_blocks(lesson, {p.key}) if kind == "reveal")
    assert all(c.text in after for c in p.peek) and p.reveal in after
    assert all(c.holds for c in p.peek), [c for c in p.peek if not c.holds]
    assert set(p.peek) <= set(lesson.claims)  # the peek's lines are checked with the lesson's claims
    assert place_answers(lesson, 1).steps[lesson.steps.index(step)] == step  # nothing to place


def test_the_answer_key_lists_the_figure_and_the_equation():
    from kvlab.lessons.answer_key import answer_key, to_markdown

    key = answer_key(("D2",))
    q = key["lessons"][0]["questions"][0]
    p = course.lesson("D2").steps[0].prediction
    assert (q["answer"], q["figure"], q["unit"], q["choices"]) == ("40,112 tokens", 40112.0, "tokens", [])
    text = to_markdown(key)
    assert "Key: **40,112 tokens** (sim's figure: 4.011e+04)" in text and all(f"- `{c.text}`" in text for c in p.peek)
