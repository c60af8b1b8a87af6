"""validate_profile accepts good profiles and names the field of every problem in a bad one."""

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kvlab.calibration.catalog import PROFILE_DIR
from kvlab.calibration.schema import validate_profile


def good() -> dict:
    return {
        "schema_version": 1,
        "name": "h200",
        "gpu": "h200",
        "description": "a measured profile",
        "bandwidth_efficiency": 0.9,
        "kv_bandwidth_efficiency": 0.8,
        "compute_efficiency": [[1, 0.005], [64, 0.3], [4096, 0.8]],
        "fp8_compute_efficiency": [[1, 0.004], [4096, 0.7]],
        "step_overhead_s": 3e-4,
        "interconnect_efficiency": 0.8,
        "allreduce_latency_s": 2e-5,
        "provenance": {
            "kind": "measured", "device_name": "NVIDIA H200", "nvidia_driver_version": "560.35.03",
            "cuda_runtime_version": "12.6", "cupy_version": "13.3.0", "date_utc": "2026-11-29T00:00:00+00:00",
            "command": "python -m calibration", "method_version": "kvlab-calibration/1",
        },
        "measurements": {"hbm": {}},
    }


def test_good_profile_is_valid():
    assert validate_profile(good(), file_stem="h200") == []


def test_textbook_shape_is_valid():
    textbook = json.loads((PROFILE_DIR / "textbook.json").read_text())
    assert validate_profile(textbook, file_stem="textbook") == []


def _errors(mutate) -> list[str]:
    p = copy.deepcopy(good())
    mutate(p)
    return validate_profile(p, file_stem="h200")


@pytest.mark.parametrize("mutate, field, hint", [
    (lambda p: p.update(bandwidth_efficiency=1.3), "bandwidth_efficiency", "(0, 1]"),
    (lambda p: p.update(bandwidth_efficiency=0), "bandwidth_efficiency", "(0, 1]"),
    (lambda p: p.update(bandwidth_efficiency=True), "bandwidth_efficiency", "(0, 1]"),
    (lambda p: p.update(bandwidth_efficiency=float("nan")), "bandwidth_efficiency", "(0, 1]"),
    (lambda p: p.update(kv_bandwidth_efficiency="high"), "kv_bandwidth_efficiency", "(0, 1]"),
    (lambda p: p.update(interconnect_efficiency=1.07), "interconnect_efficiency", "(0, 1]"),
    (lambda p: p.update(step_overhead_s=-1e-3), "step_overhead_s", ">= 0"),
    (lambda p: p.update(allreduce_latency_s=None), "allreduce_latency_s", ">= 0"),
    (lambda p: p.update(compute_efficiency=[]), "compute_efficiency", "non-empty"),
    (lambda p: p.update(compute_efficiency=[[64, 0.3], [1, 0.005]]), "compute_efficiency[1]", "strictly increasing"),
    (lambda p: p.update(compute_efficiency=[[1, 0.0]]), "compute_efficiency[0]", "(0, 1]"),
    (lambda p: p.update(compute_efficiency=[[0, 0.5]]), "compute_efficiency[0]", ">= 1"),
    (lambda p: p.update(compute_efficiency=[[1, 0.5, 3]]), "compute_efficiency[0]", "[tokens, efficiency]"),
    (lambda p: p.update(fp8_compute_efficiency=[[1, 2.0]]), "fp8_compute_efficiency[0]", "(0, 1]"),
    (lambda p: p.pop("step_overhead_s"), "step_overhead_s", "missing"),
    (lambda p: p.update(schema_version=3), "schema_version", "must be 1 or 2"),
    (lambda p: p.update(kernel_overhead_s=1e-6), "kernel_overhead_s", "unknown field"),  # a v2 field in v1
    (lambda p: p.update(name="h100"), "name", "file stem"),
    (lambda p: p.update(gpu="h300"), "gpu", "one of"),
    (lambda p: p.update(colour="green"), "colour", "unknown field"),
    (lambda p: p["provenance"].update(kind="guess"), "provenance.kind", "one of"),
    (lambda p: p["provenance"].pop("cupy_version"), "provenance.cupy_version", "required"),
    (lambda p: p.pop("measurements"), "measurements", "raw measurements"),
    (lambda p: p.update(gpu=None), "gpu", "measured profile"),
    (lambda p: p.update(provenance="measured"), "provenance", "object"),
])
def test_bad_profiles_name_the_field(mutate, field, hint):
    errors = _errors(mutate)
    assert errors, "expected a problem"
    assert any(e.startswith(field + ":") and hint in e for e in errors), errors


def good_v2() -> dict:
    p = good()
    p["schema_version"] = 2
    p.update(
        gemm_efficiency={"qwen3-8b": {"bf16": [[1, 0.004], [16, 0.06], [4096, 0.8]], "fp8": [[1, 0.003], [4096, 0.7]]}},
        lm_head_efficiency=[[1, 0.005], [1024, 0.7]],
        attention_kv_efficiency=[[1024, 0.6], [4096, 0.75], [32768, 0.8]],
        prefill_attention_efficiency=0.55,
        kernel_overhead_s=1.2e-6,
        notes=["gemm qwen3-8b qkv bf16 M=3: time pooled (monotone in M)"],
    )
    p["provenance"].update(
        gpu_uuid="GPU-1234", mig={"mode": "disabled", "whole_gpu": True}, driver="580.159.04",
        cuda={"runtime": "13.0"}, cupy="14.2.0", clocks={"max_mhz": {"sm": 1980}}, throttle={"throttled": False},
        kvlab_version="0.1.0", git_commit="abc123", date="2026-11-30T19:00:00+00:00")
    return p


def test_good_v2_profile_is_valid():
    assert validate_profile(good_v2(), file_stem="h200") == []


@pytest.mark.parametrize("mutate, field, hint", [
    (lambda p: p.update(gemm_efficiency={"qwen3-8b": {"bf16": [[1, 1.4]]}}), "gemm_efficiency.qwen3-8b.bf16[0]", "(0, 1]"),
    (lambda p: p.update(gemm_efficiency={"qwen3-8b": {"int4": [[1, 0.4]]}}), "gemm_efficiency.qwen3-8b.int4", "dtype"),
    (lambda p: p.update(gemm_efficiency={"qwen3-8b": []}), "gemm_efficiency.qwen3-8b", "object"),
    (lambda p: p.update(gemm_efficiency={}), "gemm_efficiency", "non-empty"),
    (lambda p: p.update(attention_kv_efficiency=[[4096, 0.7], [1024, 0.6]]), "attention_kv_efficiency[1]", "increasing"),
    (lambda p: p.update(lm_head_efficiency=[[0, 0.5]]), "lm_head_efficiency[0]", ">= 1"),
    (lambda p: p.update(prefill_attention_efficiency=1.5), "prefill_attention_efficiency", "(0, 1]"),
    (lambda p: p.update(kernel_overhead_s=-1e-6), "kernel_overhead_s", ">= 0"),
    (lambda p: p.update(notes="one note"), "notes", "list of strings"),
    (lambda p: p["provenance"].pop("git_commit"), "provenance.git_commit", "required"),
    (lambda p: p["provenance"].pop("mig"), "provenance.mig", "required"),
])
def test_bad_v2_profiles_name_the_field(mutate, field, hint):
    p = good_v2()
    mutate(p)
    errors = validate_profile(p, file_stem="h200")
    assert any(e.startswith(field + ":") and hint in e for e in errors), errors


def test_cpu_check_cannot_claim_a_gpu():
    p = good()
    p.update(name="cpu-check-numpy", gpu="h200")
    p["provenance"] = {"kind": "cpu-pipeline-check", "device_name": "CPU", "numpy_version": "2.0",
                       "date_utc": "x", "command": "python -m calibration --backend numpy", "method_version": "v"}
    errors = validate_profile(p, file_stem="cpu-check-numpy")
    assert any(e.startswith("gpu:") and "null" in e for e in errors)
    p["gpu"] = None
    assert validate_profile(p, file_stem="cpu-check-numpy") == []
    p["name"] = "h200"
    assert any(e.startswith("name:") and "cpu-check-" in e for e in validate_profile(p))


def test_gpu_profile_cannot_use_the_cpu_prefix():
    p = good()
    p["name"] = "cpu-check-h200"
    assert any(e.startswith("name:") and "reserved" in e for e in validate_profile(p))


def test_published_needs_citations():
    p = good()
    p["provenance"] = {"kind": "published", "citations": {}}
    assert any(e.startswith("provenance.citations:") for e in validate_profile(p))


def test_not_an_object():
    assert validate_profile([1, 2]) == ["profile: must be a JSON object, got list"]


json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(list(good()) + ["x"]), json_values, max_size=12))
def test_validate_never_raises_on_arbitrary_json(profile):
    errors = validate_profile(profile)
    assert isinstance(errors, list) and all(isinstance(e, str) and ":" in e for e in errors)
