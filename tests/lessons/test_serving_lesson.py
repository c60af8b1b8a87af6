"""Lessons are code: every claim of the serving lesson holds in the time-domain engine."""

import pytest
from kvlab.lessons.content import serving
from kvlab.sim.engine import simulate
from kvlab.sim.engine.presets import preset

LESSON = serving.build()


@pytest.mark.parametrize("claim", LESSON.claims, ids=lambda c: c.text)
def test_claim_holds(claim):
    assert claim.holds, claim.text


def test_predictions_and_prose():
    for section in LESSON.sections:
        assert "{" not in section.markdown and "}" not in section.markdown, section.title
        for p in section.predictions:
            assert p.answer in p.choices, p.question


def test_prose_quotes_the_simulated_tail():
    r = serving.shared_queue()
    text = LESSON.sections[0].markdown
    assert f"**99th percentile** is {serving._s(r.ttft_s.p99)}" in text
    assert f"{r.ttft_s.p99 / r.ttft_s.p50:.1f} times the median" in text


def test_try_this_presets_exist_and_run():
    for section in LESSON.sections:
        for step in section.try_this:
            assert step.panel == "serving_lab"
            cfg = preset(step.state["preset"])
            assert simulate(cfg.with_(num_requests=20)).ok, step.text
