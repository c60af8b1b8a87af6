"""Pasted text -> config dict: every refusal names the `config` field and says why; nothing raises."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kvlab.app.viewlayer.config_paste import (
    MAX_CONFIG_CHARS,
    MAX_LINK_CONFIG_CHARS,
    decode_from_link,
    encode_for_link,
    parse_config_text,
)
from kvlab.sim import catalog


def qwen3_8b() -> dict:
    return catalog.model_entry("qwen3-8b")["config"]


def test_a_real_config_parses_to_the_same_dict():
    cfg = qwen3_8b()
    assert parse_config_text(json.dumps(cfg, indent=2)) == (cfg, [])


@pytest.mark.parametrize(("text", "says"), [
    ("", "is empty"),
    ("   \n", "is empty"),
    ("{ not json", "is not valid JSON: Expecting property name enclosed in double quotes at line 1, column 3"),
    ("[1, 2]", "must be a JSON object ({...}), got an array"),
    ('"a string"', "got a string"),
    ("42", "got a number"),
    ("null", "got null"),
    ("true", "got a boolean"),
])
def test_refusals_name_the_field_and_the_reason(text, says):
    config, issues = parse_config_text(text)
    assert config is None
    assert [i["field"] for i in issues] == ["config"]
    assert says in issues[0]["message"]


def test_oversized_text_is_refused_with_both_lengths():
    text = '{"a": "' + "x" * MAX_CONFIG_CHARS + '"}'
    config, issues = parse_config_text(text)
    assert config is None
    assert f"{len(text):,} characters" in issues[0]["message"]
    assert f"{MAX_CONFIG_CHARS:,}" in issues[0]["message"]


@pytest.mark.parametrize("text", ["[" * 100_000, "[" * 5_000 + "]" * 5_000, '{"a":' * 30 + "1" + "}" * 30])
def test_bracket_bombs_and_deep_nesting_are_refused_without_raising(text):
    config, issues = parse_config_text(text)
    assert config is None and issues and issues[0]["field"] == "config"


@given(st.text(max_size=300))
def test_any_text_gives_a_dict_or_an_issue_never_an_exception(text):
    config, issues = parse_config_text(text)
    assert (config is None) == bool(issues)
    assert config is None or isinstance(config, dict)


def test_link_encoding_round_trips_and_is_url_safe():
    cfg = qwen3_8b()
    encoded = encode_for_link(cfg)
    assert encoded is not None and set(encoded) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    text, why = decode_from_link(encoded)
    assert why is None and json.loads(text) == cfg


def test_link_refuses_bad_base64_and_oversized_values():
    assert decode_from_link("not base64 !!")[0] is None
    assert "URL-safe base64" in decode_from_link("%%%")[1]
    assert decode_from_link("A" * (MAX_LINK_CONFIG_CHARS + 1))[0] is None
    assert encode_for_link({"pad": "x" * MAX_LINK_CONFIG_CHARS}) is None
