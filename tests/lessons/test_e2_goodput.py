"""E2's goodput is sim's: a request counts if its first token meets the TTFT target and its mean inter-token
latency the ITL target. The questions state both targets, and step 2's try-this opens the lab at the state
the step's answer comes from (it used to omit the 25 ms target, and at 15 ms the verdict flips)."""

from kvlab.lessons import course
from kvlab.lessons.content import runs
from kvlab.lessons.content.e2_disaggregation import PRESET


def test_questions_state_both_targets():
    for p, rate, itl in zip(course.lesson("E2").predictions, (8.0, 12.0), (0.015, 0.025), strict=True):
        r = runs.lab(PRESET, rate_per_s=rate, itl_target_s=itl)
        assert f"{r.ttft_target_s:g} s" in p.question, p.question
        assert f"{r.itl_target_s * 1e3:.0f} ms" in p.question, p.question


def test_step_two_try_this_reproduces_its_answer():
    step = course.lesson("E2").steps[1]
    (try_this,) = step.try_this
    start = dict(try_this.start)
    disagg = runs.lab(start.pop("preset"), **start)
    assert f"disaggregated {disagg.goodput_per_s:.2f} requests/s" in step.prediction.reveal, (try_this.start, step.prediction.reveal)
