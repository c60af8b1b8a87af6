"""Lessons are code: every claim the KV-cache lesson makes must hold in the simulator."""

import pytest
from kvlab.lessons.content import kv_cache

LESSON = kv_cache.build()


@pytest.mark.parametrize("claim", LESSON.claims, ids=lambda c: c.text)
def test_claim_holds(claim):
    assert claim.holds, claim.text


def test_every_prediction_answer_is_a_choice():
    for section in LESSON.sections:
        for p in section.predictions:
            assert p.answer in p.choices, p.question


def test_prose_has_no_unfilled_placeholders():
    for section in LESSON.sections:
        assert "{" not in section.markdown and "}" not in section.markdown, section.title


def test_numbers_in_prose_come_from_sim(monkeypatch):
    # The fill-order section quotes the pool and the sequence count; they must be sim's...
    r = kv_cache.run()
    text = LESSON.sections[1].markdown
    assert f"{r.kv_pool_bytes / 2**30:.1f} GiB" in text
    assert f"**{r.max_sequences}** fit" in text
    # ...and follow the simulator when its inputs change: rebuild on an H200.
    monkeypatch.setattr(kv_cache, "BASE", kv_cache.BASE.with_(gpu="h200"))
    kv_cache.run.cache_clear()
    try:
        h200 = kv_cache.run()
        rebuilt = kv_cache.fill_order().markdown
    finally:
        kv_cache.run.cache_clear()
    assert h200.max_sequences != r.max_sequences
    assert f"**{h200.max_sequences}** fit" in rebuilt and f"**{r.max_sequences}** fit" not in rebuilt


def test_try_this_states_are_valid_scenarios():
    from kvlab.sim import evaluate

    for section in LESSON.sections:
        for step in section.try_this:
            assert evaluate(kv_cache.BASE.with_(**step.state)).ok, step.text
