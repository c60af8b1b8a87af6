"""The store calls sim and nothing else: its Result is sim's for the same settings, its curves are
sim evaluated at each point, and a broken pasted config leaves the other settings alone."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kvlab.app.views.state import CUSTOM_MODEL, Settings
from kvlab.app.views.store import Store
from kvlab.sim import Scenario, catalog, evaluate


def test_result_is_sims_for_the_same_settings():
    st_ = Store(Settings(prompt_tokens=32768, kv_dtype="fp8"))
    assert st_.result == evaluate(Scenario(prompt_tokens=32768, kv_dtype="fp8"))
    assert (st_.result.max_sequences, st_.result.batch) == (24, 24)


@settings(max_examples=25, deadline=None)
@given(prompt=st.integers(1, 200_000), conc=st.integers(1, 2000), model=st.sampled_from(["qwen3-8b", "qwen3-32b", "gemma-2-9b"]),
       gpu=st.sampled_from(["a100-80", "h100-sxm", "h200"]), kv=st.sampled_from(["bf16", "fp8"]))
def test_any_change_recomputes_to_sims_result(prompt, conc, model, gpu, kv):
    store = Store()
    store.settings.param.update(prompt_tokens=prompt, concurrency=conc, model=model, gpu=gpu, kv_dtype=kv)
    assert store.result == evaluate(Scenario(prompt_tokens=prompt, concurrency=conc, model=model, gpu=gpu, kv_dtype=kv))


def test_fit_curve_points_are_sim_evaluations_and_include_the_context():
    store = Store(Settings(model="qwen3-14b"))
    fit = store.fit
    assert fit.prompt_tokens[-1] == store.context_tokens == 40960
    for x, y in list(zip(fit.prompt_tokens, fit.max_sequences, strict=True))[::9]:
        assert y == evaluate(Scenario(model="qwen3-14b", prompt_tokens=x)).max_sequences


def test_batch_curve_runs_to_the_pool_and_matches_sim():
    store = Store(Settings(prompt_tokens=32768))
    curve = store.batch
    assert curve.batch[-1] == store.result.max_sequences == 12
    for b, tps in zip(curve.batch, curve.tokens_per_s, strict=True):
        assert tps == pytest.approx(evaluate(Scenario(prompt_tokens=32768, concurrency=b)).decode_tokens_per_s)


def test_query_follows_the_settings():
    store = Store()
    store.settings.prompt_tokens = 8192
    assert store.query == "?prompt_tokens=8192"


def test_pasted_config_is_evaluated_by_sim():
    cfg = dict(catalog.model_entry("qwen3-8b")["config"], _name_or_path="my/model")
    store = Store()
    store.settings.param.update(model=CUSTOM_MODEL, config_text=json.dumps(cfg))
    assert store.issues == []
    assert store.result.max_sequences == 93
    assert store.result.model_name == "my/model"
    assert store.query.startswith("?model=custom&config=")


@pytest.mark.parametrize(("text", "field"), [
    ("{ nope", "config"),
    ("[]", "config"),
    ('{"num_hidden_layers": 36}', "hidden_size"),
    ('{"num_hidden_layers": "<img src=x onerror=alert(1)>", "hidden_size": 4096}', "num_hidden_layers"),
])
def test_broken_config_reports_the_field_and_keeps_other_settings(text, field):
    store = Store(Settings(prompt_tokens=32768, gpu="h200", kv_dtype="fp8"))
    store.settings.param.update(model=CUSTOM_MODEL, config_text=text)
    assert store.issues and store.issues[0]["field"] == field
    assert (store.settings.prompt_tokens, store.settings.gpu, store.settings.kv_dtype) == (32768, "h200", "fp8")
    assert store.result is None or not store.result.ok
    store.settings.model = "qwen3-8b"  # back to the catalog: everything works again
    assert store.issues == []
    assert store.result == evaluate(Scenario(prompt_tokens=32768, gpu="h200", kv_dtype="fp8"))


def test_combination_that_fits_nothing_is_a_warning_not_an_error():
    store = Store(Settings(model="qwen3-32b", gpu_memory_utilization=0.72))
    assert store.issues == []
    assert store.result.max_sequences == 0 and store.batch is None
    assert "weights need" in store.result.warnings[0].lower()
