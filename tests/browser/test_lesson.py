"""The KV-cache lesson in a real Chromium: its numbers are sim's, a prediction locks and reveals,
and a "try this" link opens the panel in exactly the state the text describes."""

import pytest
from kvlab.lessons.content import kv_cache
from kvlab.sim import evaluate

pytestmark = pytest.mark.browser


def test_lesson_numbers_predictions_and_try_this(kv_page):
    page = kv_page.page
    page.goto(kv_page.base + "/kv_cache")
    page.get_by_text("Where the pool comes from").wait_for(timeout=30_000)
    r = kv_cache.run()
    # get_by_text pierces Panel's shadow DOM; the sentence must carry sim's figure
    pool_item = page.get_by_text("Everything left is the KV pool").inner_text()
    assert f"{r.kv_pool_bytes / 2**30:.1f} GiB" in pool_item
    throughput = page.get_by_text("tokens per second. At 32k only").inner_text()
    assert f"producing {r.decode_tokens_per_s:,.0f} tokens per second" in throughput

    # Predict first: a wrong choice locks every choice and reveals sim's answer.
    mha = kv_cache.run(force_mha=True)
    page.get_by_role("button", name="about half").click()
    page.get_by_text("You predicted about half. Not quite: the simulator says about a quarter.").wait_for(timeout=10_000)
    page.get_by_text(f"{mha.max_sequences} sequences instead of {r.max_sequences}").wait_for(timeout=10_000)
    assert page.get_by_role("button", name="about a quarter").first.is_disabled()

    # Try this: the link carries the state; the panel opens showing sim's numbers for it.
    step = kv_cache.prompt_length().try_this[1]
    page.get_by_role("link", name="Open it in the panel").nth(4).click()
    page.wait_for_selector('[data-kv="max_sequences"]', timeout=30_000)
    expected = evaluate(kv_cache.BASE.with_(**step.state))
    kv_page.eventually(lambda: _shows(kv_page, expected))
    assert "kv_dtype=fp8" in page.url and "prompt_tokens=32768" in page.url
    assert kv_page.errors == []


def _shows(kv_page, r):
    assert kv_page.text("max_sequences") == f"{r.max_sequences:,}"
    assert kv_page.text("batch") == f"{r.batch:,}"
