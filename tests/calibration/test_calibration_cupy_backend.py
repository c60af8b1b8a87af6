"""backend_cupy.py run end to end against a NumPy stand-in for CuPy (tests/calibration/fake_cupy.py).

Without a GPU this is the closest check of the code a GPU owner runs: the backend's own Python,
the cuBLAS argument order and bf16/fp16 conversions, the timing loop, the graph capture, and the
whole suite feeding a measured profile that validates.
"""

import io
import sys
import types

import numpy as np
import pytest
from kvlab.calibration.benchmarks.gemm import _probe_fp8
from kvlab.calibration.catalog import datasheet, model
from kvlab.calibration.cli import load_backend
from kvlab.calibration.plan import tiny_plan
from kvlab.calibration.profile import build_profile, datasheet_denominators, fit_profile
from kvlab.calibration.progress import RunLog
from kvlab.calibration.schema import validate_profile
from kvlab.calibration.suite import run_suite

from . import fake_cupy


@pytest.fixture
def backend(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy.make())
    return load_backend("cupy")


def _as_float(words, dtype):
    w = np.asarray(words)
    if dtype == "bf16":
        return (w.astype(np.uint32) << 16).view(np.float32)
    return w.astype(np.float32)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_gemm_matches_numpy(backend, dtype):
    a = backend.random((5, 16), dtype, 1)
    b = backend.random((16, 24), dtype, 2)
    c = backend.empty((5, 24), dtype)
    backend.gemm(a, b, c, dtype)
    expected = _as_float(a, dtype) @ _as_float(b, dtype)
    np.testing.assert_allclose(_as_float(c, dtype), expected, rtol=2e-2, atol=2e-2)


def test_random_data_is_random_and_not_zero(backend):
    for dtype in ("bf16", "fp16", "fp8", "fp32"):
        x = np.asarray(backend.random((64, 64), dtype, 3))
        assert (x != 0).all(), dtype
        assert len(np.unique(x)) > 32, dtype
    fp8 = np.asarray(backend.random((4096,), "fp8", 4))
    assert not ((fp8 & 0x7F) == 0x7F).any()  # no e4m3 NaN


def test_device_info_has_the_header_fields(backend):
    info = backend.device_info()
    for key in ("device_name", "nvidia_driver_version", "cuda_runtime_version", "cuda_driver_api_version",
                "cupy_version", "cublas_version", "l2_cache_bytes", "sm_count"):
        assert key in info, key
    assert info["device_name"] == "NVIDIA H200"
    assert info["cuda_runtime_version"] == "12.6"


def test_copy_and_read(backend):
    src = backend.random_bytes(1 << 16, 5)
    dst = backend.random_bytes(1 << 16, 6)
    backend.copy(dst[:4096], src[4096:8192])
    assert (np.asarray(dst[:4096]) == np.asarray(src[4096:8192])).all()
    backend.read(src[:4096])


def test_graph_skeleton_is_captured_once_and_replayed(backend):
    assert backend.step_skeleton_s(10, use_graph=True) >= 0
    graph = backend._graph[1][0]
    backend.step_skeleton_s(10, use_graph=True)
    assert graph is backend._graph[1][0] and graph.launches == 3  # upload + two timed launches
    assert backend.step_skeleton_s(10, use_graph=False) >= 0


def test_whole_suite_through_the_cupy_backend(backend):
    models = [model("qwen3-8b").scaled_down(32)]
    plan = tiny_plan(("qwen3-8b",), quick=True)
    log = RunLog(stream=io.StringIO())
    measurements, duration, skipped = run_suite(backend, plan, models, 7, log, progress_stream=log.stream)
    assert not any("error" in section for section in measurements.values()), measurements
    overhead = measurements["overhead"]
    assert overhead["graph"] == "ok"
    assert [p["kernels"] for p in overhead["points"]] == list(plan.overhead_kernel_counts)
    assert all(p["variant"] == "cuda-graph" and p["time_s"] >= 0 for p in overhead["points"])
    layout = measurements["attention"]["layouts"][0]
    assert layout["check"]["passed"], layout["check"]  # the Python glue: layouts, splits, merge
    assert layout["check"]["max_rel_err"] < 1e-2
    assert len(layout["points"]) == len(plan.attention_batches) * len(plan.attention_contexts)
    den = datasheet_denominators(datasheet("h200"))
    fields, notes = fit_profile(measurements, plan, models, den, "h200")
    profile = build_profile(
        name="h200", gpu_id="h200", kind="measured", description="stand-in", fields=fields, notes=notes,
        measurements=measurements, device_info=backend.device_info(), denominators=den, plan=plan, models=models,
        command="python -m calibration", date_utc="2026-11-29T00:00:00+00:00", duration_s=duration, skipped=skipped,
    )
    profile["schema_version"] = 1  # the stand-in has no NVML: the v2 provenance fields are tested elsewhere
    for field in ("gemm_efficiency", "lm_head_efficiency", "attention_kv_efficiency", "kernel_overhead_s", "notes"):
        assert field in profile, field
        profile.pop(field)
    assert validate_profile(profile, file_stem="h200") == []
    assert any("least-squares line over CUDA-graph replays" in n for n in notes)


def test_paged_attention_splits_are_merged(backend):
    """More than one split (batch 1, long context): the merge kernel's layout is what the split wrote."""
    from kvlab.calibration.backend import reference_paged_decode_attention

    rng = np.random.default_rng(0)
    k, v = backend.paged_kv_cache(80, 16, 2, 8, 3)
    q = backend.random((1, 4, 8), "bf16", 4)
    table = rng.permutation(80)[:64].reshape(1, 64).astype(np.int32)
    out = backend.empty((1, 4, 8), "bf16")
    backend.paged_decode_attention(q, k, v, backend.int_array(table), backend.int_array([1000]), out, 1024)
    ref = reference_paged_decode_attention(backend.to_host(q), backend.to_host(k), backend.to_host(v), table, [1000])
    np.testing.assert_allclose(backend.to_host(out), ref, rtol=2e-2, atol=2e-2)


def test_fp8_probe_records_the_refusal(backend):
    # cublasGemmEx has no fp8 path; the stand-in refuses like cuBLAS does.
    reason = _probe_fp8(types.SimpleNamespace(backend=backend, seed=1))
    assert reason is not None and "rejected fp8" in reason


def test_attention_falls_back_to_kernel_v1_and_says_so(backend, monkeypatch):
    from kvlab.calibration import paged_attention_kernel as pak

    monkeypatch.setitem(pak.SOURCES, "v2", "// BROKEN paged_decode_split")
    models = [model("qwen3-8b").scaled_down(32)]
    plan = tiny_plan(("qwen3-8b",), quick=True)
    log = RunLog(stream=io.StringIO())
    measurements, _, _ = run_suite(backend, plan, models, 7, log, progress_stream=log.stream)
    layout = measurements["attention"]["layouts"][0]
    assert [c["kernel_version"] for c in layout["checks"]] == ["v2", "v1"]
    assert not layout["checks"][0]["passed"] and layout["check"]["passed"] and layout["points"]
    fields, notes = fit_profile(measurements, plan, models, datasheet_denominators(datasheet("h200")), "h200")
    assert "attention_kv_efficiency" in fields
    assert any("version 2 failed its correctness check" in n for n in notes)


def test_mla_decode_glue_splits_and_merge(backend):
    """backend_cupy.paged_mla_decode's grid, argument order, buffers and scale, with the split kernel
    emulated tile by tile (fake_cupy._mla_split) and several splits merged: equal to the float64
    reference; a layout the kernel cannot serve is refused before any launch."""
    from kvlab.calibration.backend import reference_paged_mla_decode

    rng = np.random.default_rng(1)
    lora, rope, heads = 128, 8, 32
    cache = backend.paged_mla_cache(140, 16, lora + rope, 5)
    q = backend.random((2, heads, lora + rope), "bf16", 6)
    lens = [5, 1000]
    table = rng.permutation(140)[:128].reshape(2, 64).astype(np.int32)
    out = backend.empty((2, heads, lora), "bf16")
    backend.paged_mla_decode(q, cache, backend.int_array(table), backend.int_array(lens), out, 1000, lora, 0.07)
    split = backend._attention[("mla", lora, rope)][0]
    assert split.calls == 1 and split.options == ("-DKV_LORA=128", "-DROPE=8")
    ref = reference_paged_mla_decode(backend.to_host(q), backend.to_host(cache), table, lens, lora, 0.07)
    np.testing.assert_allclose(backend.to_host(out), ref, rtol=2e-2, atol=2e-2)
    with pytest.raises(ValueError, match="MLA kernel needs"):
        backend.paged_mla_decode(q[:, :12], cache, backend.int_array(table), backend.int_array(lens), out, 1000, lora, 0.07)
