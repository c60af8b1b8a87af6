"""Settings is declared once, from sim: every bound, default and choice must be sim's own."""

import param
import pytest
from kvlab.app.views.state import ADVANCED_FIELDS, CUSTOM_MODEL, MAIN_FIELDS, SCENARIO_FIELDS, Settings
from kvlab.sim.scenario import ALLOCATIONS, ENGINES, FIELDS, TP_SIZES, Scenario
from kvlab.sim.units import KV_DTYPES, WEIGHT_DTYPES

from kvlab import sim


@pytest.mark.parametrize("name", sorted(FIELDS))
def test_numeric_params_carry_sims_bounds_default_and_help(name):
    p = Settings.param[name]
    bound = FIELDS[name]
    assert p.bounds == (bound.low, bound.high)
    assert isinstance(p, param.Integer) == bound.integer
    assert p.default == getattr(Scenario(), name)
    assert p.doc == bound.help
    assert p.allow_None == bound.optional


def test_choices_are_sims_tuples():
    assert Settings.param.tp.objects == list(TP_SIZES)
    assert Settings.param.kv_dtype.objects == list(KV_DTYPES)
    assert Settings.param.weight_dtype.objects == list(WEIGHT_DTYPES)
    assert Settings.param.allocation.objects == list(ALLOCATIONS)
    assert Settings.param.engine.objects == list(ENGINES)
    assert Settings.param.profile.objects == sim.profile_names()
    assert sorted(Settings.param.gpu.objects.values()) == sorted(sim.gpu_ids())
    assert sorted(Settings.param.model.objects.values()) == sorted([*sim.model_ids(), CUSTOM_MODEL])


def test_profiles_are_offered_by_what_they_are():
    """Issue 37: the profile list showed ids (h200-published); a label says the GPU and how its figures
    were made, the id last (what a link carries)."""
    labels = Settings.param.profile.names
    assert labels["NVIDIA H200 SXM 141GB, measured 2026-11-30 (h200)"] == "h200"
    assert labels["NVIDIA H100 SXM5 80GB, published figures (h100-published)"] == "h100-published"
    assert labels["Textbook: constant fractions of the datasheet peaks (textbook)"] == "textbook"
    assert all(label.endswith(f"({name})") for label, name in labels.items())


# The panels account memory as each engine's current release; an older release's rules are for the
# CLI (--engine-version) and the API, where a reader reproduces a specific deployment's log.
NOT_IN_PANELS = {"config", "engine_version"}


def test_every_scenario_field_is_a_setting_and_nothing_else():
    scenario_fields = set(Scenario().to_dict()) - NOT_IN_PANELS
    assert set(SCENARIO_FIELDS) == scenario_fields
    assert len(SCENARIO_FIELDS) == len(MAIN_FIELDS) + len(ADVANCED_FIELDS)


def test_defaults_are_the_seed_panel_and_scenario_round_trips():
    s = Settings()
    assert s.scenario() == Scenario()
    s.param.update(prompt_tokens=32768, kv_dtype="fp8", tp=2)
    assert s.scenario() == Scenario(prompt_tokens=32768, kv_dtype="fp8", tp=2)
    assert s.non_default() == {"prompt_tokens": 32768, "kv_dtype": "fp8", "tp": 2}


def test_custom_model_passes_the_config_and_ignores_the_catalog_id():
    s = Settings(model=CUSTOM_MODEL)
    cfg = {"num_hidden_layers": 2}
    assert s.scenario(cfg).config == cfg


def test_each_engine_s_memory_knob_is_live_only_under_that_engine():
    from kvlab.app.viewlayer.controls import view_controls
    base = Settings().values()
    for engine, live in (("vllm", "gpu_memory_utilization"), ("sglang", "mem_fraction_static"),
                         ("tensorrt-llm", "kv_cache_free_gpu_mem_fraction")):
        out = view_controls({**base, "engine": engine}, 40960)
        knobs = ("gpu_memory_utilization", "mem_fraction_static", "kv_cache_free_gpu_mem_fraction")
        assert [k for k in knobs if not out[f"w.{k}"]["disabled"]] == [live], engine
    assert not view_controls({**base, "engine": "tensorrt-llm"}, 40960)["w.kv_cache_max_tokens"]["disabled"]
