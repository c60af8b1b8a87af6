"""sim loads only profiles that pass the schema (one rule: sim/profile_schema.py), and uses the
new v2 fields: the MLA attention curve for MLA models, the TP-sharded GEMM curves at their TP."""

import json
import os

import pytest
from kvlab.sim import Scenario, clear_caches, evaluate, profiles
from kvlab.sim.errors import InputError
from kvlab.sim.profile_schema import validate_profile

SHIPPED = json.loads((profiles.PROFILE_DIR / "h200.json").read_text())


@pytest.fixture
def user_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("KVLAB_DATA_DIR", str(tmp_path))
    d = tmp_path / "profiles"
    d.mkdir()
    clear_caches()
    yield d
    clear_caches()


def _write(d, name, data):
    (d / f"{name}.json").write_text(data if isinstance(data, str) else json.dumps({**data, "name": name}))


def test_an_invalid_user_profile_is_not_listed_and_loading_it_names_file_and_problem(user_dir):
    _write(user_dir, "bad-bw", {**SHIPPED, "bandwidth_efficiency": 1.3})
    _write(user_dir, "not-json", "{ nope")
    _write(user_dir, "good", SHIPPED)
    names = profiles.profile_names()
    assert "good" in names and "bad-bw" not in names and "not-json" not in names
    with pytest.raises(InputError) as err:
        profiles.load_profile("bad-bw")
    text = str(err.value)
    assert str(user_dir / "bad-bw.json") in text and "bandwidth_efficiency: must be a number in (0, 1], got 1.3" in text
    with pytest.raises(InputError, match="not-json.json is not a valid efficiency profile: is not JSON"):
        profiles.load_profile("not-json")
    # fixed on disk: listed and loaded at once (the check is remembered per mtime and size only)
    _write(user_dir, "bad-bw", {**SHIPPED, "bandwidth_efficiency": 0.9})
    os.utime(user_dir / "bad-bw.json", ns=(1, 1))
    clear_caches()
    assert "bad-bw" in profiles.profile_names()
    assert profiles.load_profile("bad-bw").bandwidth_efficiency == 0.9


def test_a_name_mismatch_or_unknown_field_is_rejected_too(user_dir):
    (user_dir / "renamed.json").write_text(json.dumps(SHIPPED))  # name "h200" in a file named renamed
    _write(user_dir, "extra", {**SHIPPED, "bandwith_efficiency": 0.9})
    with pytest.raises(InputError, match="name: must equal the file stem 'renamed'"):
        profiles.load_profile("renamed")
    with pytest.raises(InputError, match="bandwith_efficiency: unknown field"):
        profiles.load_profile("extra")


def test_schema_checks_the_new_fields():
    base = {**SHIPPED, "name": "x"}
    assert validate_profile({**base, "mla_attention_kv_efficiency": [[512, 0.3], [4096, 0.5]],
                             "tp_gemm_efficiency": {"qwen3-8b": {"2": {"bf16": [[1, 0.01], [64, 0.3]]}}}}) == []
    errors = validate_profile({**base, "mla_attention_kv_efficiency": [[512, 1.5]],
                               "tp_gemm_efficiency": {"qwen3-8b": {"1": {"bf16": [[1, 0.1]]}, "4": {"int4": [[1, 0.1]]}}},
                               "step_model": "sideways"})
    assert any(e.startswith("mla_attention_kv_efficiency[0]: efficiency must be") for e in errors)
    assert any(e.startswith("tp_gemm_efficiency.qwen3-8b.1: the key must be a tensor-parallel size >= 2") for e in errors)
    assert any(e.startswith("tp_gemm_efficiency.qwen3-8b.4.int4: dtype must be one of") for e in errors)
    assert any(e.startswith("step_model: must be one of") for e in errors)


def _kernel_s(result, kind):
    return next(k["time_s"] for k in result.decode_kernels if k["kind"] == kind)


def test_sim_uses_the_mla_curve_for_mla_models_only_and_the_tp_curve_at_its_tp(user_dir):
    # the shipped measured profile without MLA or TP curves (a later run may ship both)
    base = {k: v for k, v in SHIPPED.items() if k not in ("mla_attention_kv_efficiency", "tp_gemm_efficiency")}
    assert base["gemm_efficiency"]["llama-3.1-70b"]["bf16"]  # the model's own unsharded curve
    _write(user_dir, "base", base)
    _write(user_dir, "mla-slow", {**base, "mla_attention_kv_efficiency": [[1, 0.05]]})
    tp_curve = {"llama-3.1-70b": {"4": {"bf16": [[1, 0.0005], [16384, 0.001]]}}}
    _write(user_dir, "tp-slow", {**base, "tp_gemm_efficiency": tp_curve})

    def run(**kw):
        return evaluate(Scenario(gpu="h200", prompt_tokens=4096, output_tokens=64, concurrency=8, **kw))

    ds_base, ds_mla = run(model="deepseek-v3", tp=8, weight_dtype="fp8", profile="base"), \
        run(model="deepseek-v3", tp=8, weight_dtype="fp8", profile="mla-slow")
    assert _kernel_s(ds_mla, "attention") > 5 * _kernel_s(ds_base, "attention")
    q_base, q_mla = run(model="qwen3-8b", profile="base"), run(model="qwen3-8b", profile="mla-slow")
    assert _kernel_s(q_mla, "attention") == _kernel_s(q_base, "attention")
    l4_base, l4_tp = run(model="llama-3.1-70b", tp=4, profile="base"), run(model="llama-3.1-70b", tp=4, profile="tp-slow")
    assert _kernel_s(l4_tp, "o") > 5 * _kernel_s(l4_base, "o")
    l2_base, l2_tp = run(model="llama-3.1-70b", tp=2, profile="base"), run(model="llama-3.1-70b", tp=2, profile="tp-slow")
    assert _kernel_s(l2_tp, "o") == _kernel_s(l2_base, "o")  # no TP-2 curve: the unsharded one
