"""Pasting a config.json in the page: a valid one is evaluated by sim, a broken one gives a message
naming the field while every other setting stays, and a hostile one is shown as inert text."""

import json

import pytest
from kvlab.sim import Scenario, catalog, evaluate

pytestmark = pytest.mark.browser

PAYLOAD = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'


def paste(page, text: str) -> None:
    page.widget("model").locator("select").select_option(label="Paste a config.json\u2026")
    area = page.widget("config_text").locator("textarea")
    area.fill(text)
    area.blur()  # the text area sends its value on change, as a user leaving the box does


def qwen3_8b(**extra) -> dict:
    return dict(catalog.model_entry("qwen3-8b")["config"], **extra)


def no_script_ran(page) -> None:
    assert page.page.evaluate("window.__xss") is None
    assert page.page.locator('img[src="x"]').count() == 0
    assert not [u for u in page.requests if u.endswith("/x")]


def test_valid_config_is_evaluated_by_sim(kv_page):
    page = kv_page.open("/admission?prompt_tokens=32768")
    paste(page, json.dumps(qwen3_8b(_name_or_path="my-org/My-8B"), indent=2))
    r = evaluate(Scenario(config=qwen3_8b(), prompt_tokens=32768))
    page.eventually(lambda: _assert(page.text("max_sequences") == f"{r.max_sequences:,}" == "12"))
    assert page.text("model_name").startswith("my-org/My-8B")
    url = page.settled_url()
    assert "model=custom" in url and "config=" in url


def test_broken_config_names_the_field_and_keeps_the_rest(kv_page):
    page = kv_page.open("/admission?prompt_tokens=32768&kv_dtype=fp8")
    paste(page, '{"num_hidden_layers": 36, "hidden_size": 4096')
    page.eventually(lambda: _assert("config: is not valid JSON" in page.text("errors")))
    assert page.text("max_sequences") == "\u2014"
    paste(page, json.dumps({"num_hidden_layers": 36}))
    page.eventually(lambda: _assert("hidden_size: is missing from config.json" in page.text("errors")))
    # everything else is as it was: the slider, the precision, the link
    assert page.widget("prompt_tokens-exact").locator("input").input_value() == "32768"
    url = page.settled_url()
    assert "prompt_tokens=32768" in url and "kv_dtype=fp8" in url
    page.widget("model").locator("select").select_option(label="Qwen3-8B")
    expected = f"{evaluate(Scenario(prompt_tokens=32768, kv_dtype='fp8')).max_sequences}"
    page.eventually(lambda: _assert(page.text("max_sequences") == expected))
    assert page.errors == []


def test_hostile_config_is_rendered_inert(kv_page):
    page = kv_page.open("/admission")
    paste(page, json.dumps(qwen3_8b(_name_or_path=PAYLOAD)))
    page.eventually(lambda: _assert(page.text("model_name").startswith(PAYLOAD)))
    no_script_ran(page)
    paste(page, json.dumps({"num_hidden_layers": PAYLOAD, "hidden_size": 4096}))
    page.eventually(lambda: _assert("num_hidden_layers: must be an integer" in page.text("errors")))
    assert "<script>" in page.text("errors")
    no_script_ran(page)
    assert page.errors == []


def test_oversized_and_non_object_pastes_are_refused(kv_page):
    page = kv_page.open("/admission")
    paste(page, "[1, 2, 3]")
    page.eventually(lambda: _assert("config: must be a JSON object" in page.text("errors")))
    paste(page, '{"a": "' + "x" * 200_100 + '"}')
    page.eventually(lambda: _assert("at most 200,000 are accepted" in page.text("errors")))


def _assert(condition: bool) -> None:
    assert condition
