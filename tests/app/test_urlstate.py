"""The URL query string: good values are kept, bad or hostile ones are dropped with a notice that
names the setting and the allowed range, and a written link reads back to the same state."""

from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kvlab.app.viewlayer.config_paste import encode_for_link
from kvlab.app.views.state import CUSTOM_MODEL, Settings
from kvlab.app.views.urlstate import MAX_KEYS, MAX_QUERY_CHARS, apply_values, encode_query, parse_query
from kvlab.sim import catalog
from kvlab.sim.scenario import FIELDS, TP_SIZES
from kvlab.sim.units import KV_DTYPES


def test_good_values_are_parsed_to_their_types():
    values, notices = parse_query("?prompt_tokens=32768&kv_dtype=fp8&gpu_memory_utilization=0.72&force_mha=true&tp=2&gpu=h200")
    assert notices == []
    assert values == {"prompt_tokens": 32768, "kv_dtype": "fp8", "gpu_memory_utilization": 0.72, "force_mha": True,
                      "tp": 2, "gpu": "h200"}


def test_bad_values_are_ignored_with_notices_and_the_rest_kept():
    values, notices = parse_query("?prompt_tokens=abc&concurrency=64&tp=3&gpu_memory_utilization=1.5&kv_dtype=fp4&output_tokens=0")
    assert values == {"concurrency": 64}
    text = "\n".join(notices)
    assert "prompt_tokens='abc' from the link: must be an integer between 1 and 2,097,152" in text
    assert "tp='3' from the link: must be one of 1, 2, 4, 8" in text
    assert "gpu_memory_utilization='1.5' from the link: must be between 0.05 and 1, got 1.5" in text
    assert "kv_dtype='fp4'" in text and ", ".join(KV_DTYPES) in text
    assert "output_tokens='0' from the link: must be between 1 and 1,048,576, got 0" in text
    assert len(notices) == 5


def test_hostile_values_are_quoted_back_truncated_never_interpreted():
    payload = "<script>alert(1)</script><img src=x onerror=alert(2)>" * 3
    values, notices = parse_query("?gpu=" + quote(payload) + "&" + quote("<b>key</b>") + "=1&concurrency=8")
    assert values == {"concurrency": 8}
    assert len(notices) == 2
    assert any(n.startswith("Ignored gpu='<script>alert(1)</script><img src=x oner\u2026'") for n in notices)
    assert "Ignored unknown setting '<b>key</b>'" in notices[1]


def test_non_finite_and_odd_numbers_are_refused():
    for raw in ("nan", "inf", "-inf", "1e999", "0x10", "1_000", "4096.5", " 12"):
        values, notices = parse_query("?prompt_tokens=" + quote(raw))
        assert values == {} and len(notices) == 1, raw
    assert parse_query("?gpu_memory_utilization=1e999")[0] == {}


def test_repeated_keys_last_valid_wins_and_theme_is_the_templates():
    assert parse_query("?concurrency=8&concurrency=16")[0] == {"concurrency": 16}
    assert parse_query("?theme=dark") == ({}, [])


def test_optional_fields_accept_none():
    values, notices = parse_query("?max_model_len=none&max_num_seqs=256")
    assert values == {"max_model_len": None, "max_num_seqs": 256} and notices == []


def test_too_long_or_too_many_settings():
    values, notices = parse_query("?" + "a" * (MAX_QUERY_CHARS + 1))
    assert values == {} and "characters long" in notices[0]
    values, notices = parse_query("?" + "&".join(["concurrency=8"] * (MAX_KEYS + 5)))
    assert values == {"concurrency": 8} and f"only the first {MAX_KEYS}" in notices[0]


def test_config_travels_in_the_link_and_a_broken_one_is_ignored():
    cfg = catalog.model_entry("qwen3-8b")["config"]
    values, notices = parse_query("?config=" + encode_for_link(cfg) + "&prompt_tokens=8192")
    assert notices == [] and values["model"] == CUSTOM_MODEL and values["prompt_tokens"] == 8192
    values, notices = parse_query("?config=" + encode_for_link({"num_hidden_layers": "<img src=x>"}) + "&concurrency=4")
    assert values == {"concurrency": 4}
    assert "Ignored config from the link" in notices[0] and "num_hidden_layers" in notices[0]
    values, notices = parse_query("?model=custom")
    assert values == {} and "model=custom" in notices[0]


def test_encode_writes_only_non_defaults():
    assert encode_query(Settings()) == ("", None)
    q, note = encode_query(Settings(prompt_tokens=32768, kv_dtype="fp8", force_mha=True))
    assert q == "?prompt_tokens=32768&kv_dtype=fp8&force_mha=true" and note is None


def test_an_oversized_pasted_config_is_left_out_of_the_link_with_a_note():
    s = Settings(model=CUSTOM_MODEL, concurrency=8)
    q, note = encode_query(s, {"pad": "x" * 20_000})
    assert q == "?concurrency=8" and "too large" in note


settable = st.fixed_dictionaries({}, optional={
    "prompt_tokens": st.integers(1, int(FIELDS["prompt_tokens"].high)),
    "output_tokens": st.integers(1, int(FIELDS["output_tokens"].high)),
    "concurrency": st.integers(1, int(FIELDS["concurrency"].high)),
    "gpu_memory_utilization": st.floats(0.05, 1.0),
    "kv_dtype": st.sampled_from(KV_DTYPES),
    "tp": st.sampled_from(TP_SIZES),
    "force_mha": st.booleans(),
    "max_num_seqs": st.none() | st.integers(1, 1000),
    "gpu": st.sampled_from(["a100-80", "h100-sxm", "h200"]),
    "model": st.sampled_from(["qwen3-8b", "qwen3-32b", "llama-3.1-8b"]),
    "spec_draft_model": st.sampled_from(["", "qwen3-0.6b"]),
    "spec_tokens": st.integers(1, 16),
})


@settings(max_examples=60, deadline=None)
@given(settable)
def test_a_written_link_reads_back_to_the_same_settings(values):
    s = Settings(**values)
    query, _ = encode_query(s)
    parsed, notices = parse_query(query)
    assert notices == []
    back = Settings(**parsed)
    # Exact, except that a float within 1e-12 of a six-figure number reads back as that number
    # (format.link_number: a widget's step noise is not carried).
    got, want = vars(back.scenario()), vars(s.scenario())
    assert got.keys() == want.keys()
    for key, value in want.items():
        if isinstance(value, float):
            assert got[key] == pytest.approx(value, rel=1e-12), key
        else:
            assert got[key] == value, key


def test_apply_values_checks_python_values_like_link_values():
    s = Settings()
    notices = apply_values(s, {"prompt_tokens": 32768, "concurrency": 0, "tp": 3, "bogus": 1, "kv_dtype": "fp8"})
    assert (s.prompt_tokens, s.concurrency, s.tp, s.kv_dtype) == (32768, 32, 1, "fp8")
    assert len(notices) == 3
    assert any("concurrency=0: must be between 1 and 1,000,000, got 0" in n for n in notices)
    assert any("tp=3: must be one of 1, 2, 4, 8" in n for n in notices)


def test_links_carry_no_float_noise():
    """A widget's repeated steps (0.82 - 0.01 = 0.8099999999999999) are written as the 0.81 they mean, in
    the panels' links and the lab's; a float that is not near a round number is written exactly."""
    from kvlab.app.viewlayer.lab_settings import lab_defaults
    from kvlab.app.viewlayer.lab_url import encode_lab_query, parse_lab_query
    from kvlab.app.viewlayer.query import encode_query as encode_values
    from kvlab.app.viewlayer.query import parse_query as parse_values
    from kvlab.app.viewlayer.settings import defaults

    noisy = 0.82 - 0.01
    assert noisy == 0.8099999999999999
    values = dict(defaults(), gpu_memory_utilization=noisy, prompt_tokens=8192)
    query, _ = encode_values(values)
    assert query == "?prompt_tokens=8192&gpu_memory_utilization=0.81"
    assert parse_values(query)[0]["gpu_memory_utilization"] == 0.81
    assert encode_values(dict(values, gpu_memory_utilization=0.6617900494507387))[0].endswith("=0.6617900494507387")
    lab = dict(lab_defaults(), gpu_memory_utilization=noisy, rate_per_s=0.1 + 0.2)
    lab_query = encode_lab_query(lab)
    assert "gpu_memory_utilization=0.81" in lab_query and "rate_per_s=0.3&" in lab_query + "&"
    assert "999" not in lab_query and "000000" not in lab_query
    read, notices = parse_lab_query("?" + lab_query)
    assert notices == [] and read["rate_per_s"] == 0.3


def test_a_draft_model_travels_in_the_link_and_none_is_the_default():
    values, notices = parse_query("?spec_draft_model=qwen3-0.6b&spec_tokens=5&spec_acceptance=0.8")
    assert notices == []
    s = Settings(**values)
    assert (s.scenario().spec_draft_model, s.scenario().spec_tokens, s.scenario().spec_acceptance) == ("qwen3-0.6b", 5, 0.8)
    assert encode_query(s)[0] == "?spec_draft_model=qwen3-0.6b&spec_tokens=5&spec_acceptance=0.8"
    assert Settings().scenario().spec_draft_model is None and encode_query(Settings())[0] == ""
    _, notices = parse_query("?spec_draft_model=nope&spec_tokens=17")
    text = "\n".join(notices)
    assert "spec_draft_model='nope' from the link: must be one of" in text
    assert "spec_tokens='17' from the link: must be between 1 and 16, got 17" in text


def test_unknown_settings_get_one_notice_naming_the_first_few():
    """A link with 101 stray keys: one notice for the 64-key limit, one for the unknown ones (it was one
    line per key, 65 lines); the known setting among them is kept."""
    query = "?" + "&".join(f"k{i}=1" for i in range(62)) + "&k3=2&concurrency=8"
    values, notices = parse_query(query)
    assert values == {"concurrency": 8}
    assert notices == ["Ignored 62 unknown settings from the link: 'k0', 'k1', 'k2', 'k3', 'k4' and 57 more."]
    values, notices = parse_query("?" + "&".join(f"k{i}=1" for i in range(101)))
    assert notices == ["The link has 101 settings; only the first 64 were read.",
                       "Ignored 64 unknown settings from the link: 'k0', 'k1', 'k2', 'k3', 'k4' and 59 more."]


def test_a_link_carries_tensorrt_llm_and_its_fields():
    values, notices = parse_query("?engine=tensorrt-llm&kv_cache_free_gpu_mem_fraction=0.8&kv_cache_max_tokens=50000"
                                  "&kv_cache_free_gpu_mem_fraction=1")
    assert values == {"engine": "tensorrt-llm", "kv_cache_free_gpu_mem_fraction": 0.8, "kv_cache_max_tokens": 50000}
    assert len(notices) == 1 and "must be between 0.05 and 0.99, got 1" in notices[0]
    q, note = encode_query(Settings(engine="tensorrt-llm", kv_cache_free_gpu_mem_fraction=0.8))
    assert q == "?engine=tensorrt-llm&kv_cache_free_gpu_mem_fraction=0.8" and note is None
