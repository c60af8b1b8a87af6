"""Panel 2 in a real Chromium: step times, throughput, duty and the binding term, against sim."""

import pytest
from kvlab.sim import Scenario, catalog, evaluate

from devtools.chromium import SET_SLIDER_JS

from .sim_readout import assert_shows

pytestmark = pytest.mark.browser


def check_phases(page, **state):
    """Every figure panel 2 shows equals sim's for `state` (waiting for the reply to arrive)."""
    return page.eventually(lambda: _check_phases(page, **state))


def _check_phases(page, **state):
    r = evaluate(Scenario(**state))
    assert_shows(page.text("ttft"), r.ttft_s, 1e3)
    assert_shows(page.text("itl"), r.itl_s, 1e3)
    assert_shows(page.text("itl"), r.itl_s, 1e3)
    assert_shows(page.text("tokens_per_s"), r.decode_tokens_per_s)
    assert_shows(page.text("per_stream"), r.per_stream_tokens_per_s)
    assert_shows(page.text("tensor_duty"), r.tensor_duty, 100)
    assert_shows(page.text("weight_share"), r.weight_share, 100)
    assert f"{r.prefill_bound}-bound" in page.text("ttft_caption")
    assert f"{r.decode_bound}-bound" in page.text("itl_caption")
    return r


def test_a100_h100_h200_comparison_of_the_seed(kv_page):
    page = kv_page.open("/phases?model=qwen3-14b&concurrency=64&gpu=a100-80")
    a100 = check_phases(page, model="qwen3-14b", concurrency=64, gpu="a100-80")
    page.widget("gpu").locator("select").select_option(label=catalog.gpu("h100-sxm").name)
    h100 = check_phases(page, model="qwen3-14b", concurrency=64, gpu="h100-sxm")
    page.widget("gpu").locator("select").select_option(label=catalog.gpu("h200").name)
    h200 = check_phases(page, model="qwen3-14b", concurrency=64, gpu="h200")
    assert a100.ttft_s / h100.ttft_s == pytest.approx(3.17, rel=0.03)
    assert h200.ttft_s == h100.ttft_s and h200.itl_s < h100.itl_s
    assert page.errors == []


def test_short_prompt_flips_prefill_to_memory_bound(kv_page):
    page = kv_page.open("/phases")
    page.page.evaluate(SET_SLIDER_JS, ["Prompt tokens (log scale)", 7.0])  # 2**7 = 128 tokens
    r = check_phases(page, prompt_tokens=128)
    assert r.prefill_bound == "memory"


def test_batch_of_short_requests_flips_decode_to_compute_bound(kv_page):
    page = kv_page.open("/phases?model=qwen3-14b&prompt_tokens=128&output_tokens=16")
    box = page.widget("concurrency-exact").locator("input")
    box.fill("256")
    box.press("Enter")
    r = check_phases(page, model="qwen3-14b", prompt_tokens=128, output_tokens=16, concurrency=256)
    assert r.decode_bound == "compute"
