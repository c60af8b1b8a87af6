"""The fits recover known efficiencies from synthetic (injected) measurements, and every clamp and
fallback is written into the notes."""

import json

import pytest
from kvlab.calibration.catalog import PROFILE_DIR, datasheet, model
from kvlab.calibration.fit import (
    Denominators,
    allreduce_fit,
    as_efficiency,
    attention_curve,
    gemm_model_curves,
    isotonic_increasing,
    layer_weights,
    lm_head_curve,
    overhead_line,
    plateau_rate,
    roofline_curve,
    roofline_gemm_time_s,
    round_sig,
)
from kvlab.calibration.plan import full_plan, kernels_per_step
from kvlab.calibration.profile import datasheet_denominators, fit_profile

PEAK = 1000e12


def test_layer_weights_worked_example():
    w = layer_weights(model("qwen3-8b"))
    assert w["hidden x hidden"] == pytest.approx(2.5)
    assert w["hidden x intermediate"] == 3.0
    assert w["hidden x vocab"] == pytest.approx(1 / 36)


def test_layer_weights_use_q_heads_not_hidden():
    # Qwen3-32B: 64 q heads x 128 = 8192 > hidden 5120, 8 kv heads.
    w = layer_weights(model("qwen3-32b"))
    assert w["hidden x hidden"] == pytest.approx((2 * 8192 + 2 * 1024) / 5120)


def test_roofline_worked_example_a100_gemv():
    t = roofline_gemm_time_s(1, 4096, 12288, 2, 2, 1.75e12, 271.2e12)
    assert t == pytest.approx(57.5e-6, rel=1e-3)
    achieved = 2 * 4096 * 12288 / t
    assert achieved / 312e12 == pytest.approx(0.0056, rel=0.01)


def test_roofline_is_compute_bound_at_large_m():
    t = roofline_gemm_time_s(16384, 4096, 12288, 2, 2, 1.75e12, 271.2e12)
    assert t == pytest.approx(2 * 16384 * 4096 * 12288 / 271.2e12)


def _synthetic_gemm(models, true_eff, dtype="bf16", tokens=(1, 2, 3, 8, 16, 64, 512, 4096), peak=PEAK):
    """Projection GEMM points whose time is exactly flops / (true_eff(m) x peak)."""
    points = []
    for mdl in models:
        for shape in mdl.projection_shapes():
            for m in tokens:
                flops = 2.0 * m * shape.k * shape.n
                t = flops / (true_eff(m) * peak)
                points.append({"model": mdl.id, "shape": shape.name, "dtype": dtype, "m": m, "k": shape.k,
                               "n": shape.n, "flops": flops, "time_s": t, "flops_per_s": flops / t})
    return points


def test_gemm_curves_are_per_model_and_recover_a_known_curve():
    models = [model("qwen3-8b"), model("llama-3.1-70b")]
    true = {"qwen3-8b": lambda m: min(0.8, 0.004 * m), "llama-3.1-70b": lambda m: min(0.7, 0.005 * m)}
    points = [p for mdl in models for p in _synthetic_gemm([mdl], true[mdl.id])]
    notes = []
    curves = gemm_model_curves(points, "bf16", PEAK, notes)
    assert set(curves) == {"qwen3-8b", "llama-3.1-70b"}  # no blended curve
    for mdl in models:
        for m, e in curves[mdl.id]:
            assert e == pytest.approx(true[mdl.id](m), rel=1e-3)
    assert notes == []


def test_gemm_curve_excludes_the_lm_head_and_other_dtypes():
    mdl = model("qwen3-8b")
    points = _synthetic_gemm([mdl], lambda m: 0.5) + _synthetic_gemm([mdl], lambda m: 0.1, dtype="fp16")
    points = [dict(p, time_s=p["time_s"] * 10) if p["shape"] == "lm_head" else p for p in points]
    curve = gemm_model_curves(points, "bf16", PEAK, [])["qwen3-8b"]
    assert {e for _, e in curve} == {0.5}
    lm = lm_head_curve(points, "qwen3-8b", PEAK, [])
    assert all(e == pytest.approx(0.05) for _, e in lm)


def test_isotonic_pools_adjacent_violators():
    assert isotonic_increasing([1.0, 3.0, 2.0, 4.0]) == [1.0, 2.5, 2.5, 4.0]
    assert isotonic_increasing([3.0, 2.0, 1.0]) == [2.0, 2.0, 2.0]
    assert isotonic_increasing([1.0, 2.0]) == [1.0, 2.0]


def test_gemm_times_are_made_monotone_in_m_and_noted():
    mdl = model("qwen3-8b")
    points = _synthetic_gemm([mdl], lambda m: min(0.8, 0.004 * m))
    # M=3 of the qkv GEMM ran faster than M=2: a noisy dip; it is pooled and noted
    two = next(p for p in points if p["shape"] == "qkv" and p["m"] == 2)
    three = next(p for p in points if p["shape"] == "qkv" and p["m"] == 3)
    three["time_s"] = two["time_s"] * 0.8
    notes = []
    curve = dict((m, e) for m, e in gemm_model_curves(points, "bf16", PEAK, notes)["qwen3-8b"])
    note = next(n for n in notes if "qkv" in n)
    assert "of 8 times pooled" in note and "monotone" in note and "M=3" in note
    # the pooled time makes per-token efficiency rise with M, never the dip's jump
    assert curve[1] < curve[2] < curve[3] < curve[8]


def test_gemm_model_missing_a_shape_gets_no_curve_and_a_note():
    mdl = model("qwen3-8b")
    points = [p for p in _synthetic_gemm([mdl], lambda m: 0.5) if p["shape"] != "down"]
    notes = []
    assert gemm_model_curves(points, "bf16", PEAK, notes) == {}
    assert any("down not measured" in n for n in notes)


def test_gemm_m_missing_for_one_shape_is_dropped_with_a_note():
    mdl = model("qwen3-8b")
    points = [p for p in _synthetic_gemm([mdl], lambda m: 0.5) if not (p["shape"] == "o" and p["m"] == 16)]
    notes = []
    curve = gemm_model_curves(points, "bf16", PEAK, notes)["qwen3-8b"]
    assert 16 not in [m for m, _ in curve]
    assert any("M [16] dropped" in n for n in notes)


def test_efficiency_above_one_is_capped_and_noted():
    mdl = model("qwen3-8b")
    points = _synthetic_gemm([mdl], lambda m: 1.2)
    notes = []
    curve = gemm_model_curves(points, "bf16", PEAK, notes)["qwen3-8b"]
    assert all(e == 1.0 for _, e in curve)
    assert any("capped at 1.0" in n for n in notes)


def test_attention_curve_takes_the_best_batch_and_is_monotone_in_context():
    bw = 4.8e12
    pts = [{"batch": 1, "context_tokens": 1024, "bytes_per_s": 0.2 * bw},
           {"batch": 64, "context_tokens": 1024, "bytes_per_s": 0.6 * bw},
           {"batch": 64, "context_tokens": 4096, "bytes_per_s": 0.8 * bw},
           {"batch": 64, "context_tokens": 16384, "bytes_per_s": 0.76 * bw}]  # a dip past the plateau
    notes = []
    curve = attention_curve(pts, bw, notes)
    assert [c for c, _ in curve] == [1024, 4096, 16384]
    assert curve[0][1] == pytest.approx(0.6)
    assert curve[1][1] == pytest.approx(0.78) and curve[2][1] == pytest.approx(0.78)
    assert any("L=16384" in n and "monotone" in n for n in notes)


def test_overhead_line_recovers_intercept_and_slope():
    pts = [{"kernels": n, "time_s": 12e-6 + n * 1.5e-6} for n in (1, 16, 64, 256, 1024)]
    a, b = overhead_line(pts)
    assert a == pytest.approx(12e-6) and b == pytest.approx(1.5e-6)
    with pytest.raises(ValueError):
        overhead_line(pts[:1])


def test_roofline_curve_has_bandwidth_bound_start_and_plateau():
    a100 = datasheet("a100-80")
    curve = roofline_curve([model("qwen3-8b")], [1, 16384], 2, 2, 1.75e12, 271.2e12, a100.bf16_dense_flops)
    assert curve[0][1] == pytest.approx(0.0056, rel=0.01)
    assert curve[1][1] == pytest.approx(271.2 / 312, rel=1e-3)


def test_plateau_uses_large_sizes_only():
    points = [{"size_bytes": s, "bytes_per_s": r} for s, r in ((1 << 12, 9e12), (1 << 28, 3.0e12), (1 << 30, 3.1e12))]
    rate, sizes = plateau_rate(points, "size_bytes", "bytes_per_s", 1 << 28)
    assert rate == 3.1e12 and sizes == [1 << 28, 1 << 30]  # the 4 KiB L2-resident outlier is ignored
    assert plateau_rate(points[:1], "size_bytes", "bytes_per_s", 1 << 28)[0] == 9e12  # nothing large: all


def test_as_efficiency_caps_and_explains():
    assert as_efficiency(3.0, 4.0) == (0.75, None)
    eff, note = as_efficiency(480e9, 450e9)
    assert eff == 1.0 and "capped" in note
    with pytest.raises(ValueError):
        as_efficiency(0.0, 1.0)


def test_round_sig():
    assert round_sig(0.0056071) == 0.005607
    assert round_sig(123456.0, 3) == 123000.0


def test_allreduce_fit_recovers_efficiency_and_latency():
    n = 8
    points = []
    for size, t in ((1024, 20e-6), (1 << 20, 40e-6), (1 << 30, (1 << 30) * 2 * (n - 1) / n / 300e9)):
        algbw = size / t
        points.append({"size_bytes": size, "time_s": t, "busbw_bytes_per_s": algbw * 2 * (n - 1) / n})
    eff, latency, notes = allreduce_fit(points, 450e9)
    assert eff == pytest.approx(300 / 450, rel=1e-3)  # the 1 GiB point runs at 300 GB/s busbw
    assert latency == pytest.approx(20e-6)


def _measurements(sheet, models, overhead_points=None, attention_check=True):
    gemm_points = _synthetic_gemm(models, lambda m: 0.6, peak=sheet.bf16_dense_flops)
    bw = sheet.hbm_bandwidth_bytes_per_s
    return {
        "hbm": {"read": [{"size_bytes": 1 << 30, "bytes_per_s": 0.9 * bw}], "copy": []},
        "gemm": {"points": gemm_points, "fp8": "not measured: test", "skipped_models": [
            {"model": "llama-3.1-405b", "reason": "needs about 90 s, 10 s of the budget left"}]},
        "attention": {"layouts": [
            {"model": "qwen3-8b", "kv_heads": 8, "q_heads_per_kv_head": 4, "head_dim": 128,
             "check": {"passed": attention_check, "max_rel_err": 3e-3},
             "points": [{"batch": 8, "context_tokens": 4096, "bytes_per_s": 0.7 * bw},
                        {"batch": 8, "context_tokens": 1024, "bytes_per_s": 0.5 * bw}]}]},
        "overhead": {"graph": "ok" if overhead_points else "unavailable: capture failed (test)",
                     "points": overhead_points or []},
        "allreduce": {"skipped": "one GPU visible", "points": []},
    }


def test_fit_profile_end_to_end_on_synthetic_measurements():
    sheet = datasheet("h200")
    den = datasheet_denominators(sheet)
    models = [model("qwen3-8b")]
    graph = [{"variant": "cuda-graph", "kernels": n, "time_s": 10e-6 + n * 1e-6} for n in (1, 64, 256, 1024)]
    fields, notes = fit_profile(_measurements(sheet, models, graph), full_plan(("qwen3-8b",)), models, den, "h200")
    assert fields["bandwidth_efficiency"] == pytest.approx(0.9)
    assert fields["attention_kv_efficiency"] == [[1024, 0.5], [4096, 0.7]]
    assert fields["kv_bandwidth_efficiency"] == pytest.approx(0.7)  # the plateau of the curve
    assert all(e == pytest.approx(0.6) for _, e in fields["compute_efficiency"])
    assert fields["gemm_efficiency"]["qwen3-8b"]["bf16"] == fields["compute_efficiency"]
    assert all(e == pytest.approx(0.6) for _, e in fields["lm_head_efficiency"])
    assert fields["step_overhead_s"] == pytest.approx(10e-6) and fields["kernel_overhead_s"] == pytest.approx(1e-6)
    # One GPU: interconnect comes from the published H200 profile, and the notes say so.
    assert fields["interconnect_efficiency"] == 1.0
    assert any("h200-published" in n for n in notes)
    assert any("llama-3.1-405b not measured" in n for n in notes)  # a skipped model is named


def test_failed_graph_capture_is_noted_and_never_replaced_by_eager():
    sheet = datasheet("h200")
    fields, notes = fit_profile(_measurements(sheet, [model("qwen3-8b")]), full_plan(("qwen3-8b",)),
                                [model("qwen3-8b")], datasheet_denominators(sheet), "h200")
    assert "kernel_overhead_s" not in fields
    published = json.loads((PROFILE_DIR / "h200-published.json").read_text())["step_overhead_s"]
    assert fields["step_overhead_s"] == published
    assert any("step_overhead_s: NOT measured" in n and "capture failed" in n and "no eager fallback" in n for n in notes)


def test_negative_overhead_intercept_is_clamped_and_noted():
    sheet = datasheet("h200")
    graph = [{"variant": "cuda-graph", "kernels": n, "time_s": -5e-6 + n * 1e-6} for n in (16, 64, 256)]
    fields, notes = fit_profile(_measurements(sheet, [model("qwen3-8b")], graph), full_plan(("qwen3-8b",)),
                                [model("qwen3-8b")], datasheet_denominators(sheet), "h200")
    assert fields["step_overhead_s"] == 0.0 and fields["kernel_overhead_s"] == pytest.approx(1e-6)
    assert any("negative; clamped to 0" in n for n in notes)


def test_attention_kernel_failing_its_check_is_not_fitted():
    sheet = datasheet("h200")
    graph = [{"variant": "cuda-graph", "kernels": n, "time_s": 1e-5 + n * 1e-6} for n in (1, 64)]
    fields, notes = fit_profile(_measurements(sheet, [model("qwen3-8b")], graph, attention_check=False),
                                full_plan(("qwen3-8b",)), [model("qwen3-8b")], datasheet_denominators(sheet), "h200")
    assert "attention_kv_efficiency" not in fields and "kv_bandwidth_efficiency" not in fields
    assert any("failed its correctness check" in n for n in notes)


def test_denominators_are_datasheet_figures():
    den = datasheet_denominators(datasheet("h100-sxm"))
    assert isinstance(den, Denominators)
    assert den.hbm_bytes_per_s == 3.35e12 and den.bf16_flops == 989.4e12


def test_kernels_per_step_worked_example():
    assert kernels_per_step(36) == 436


def test_torch_crosscheck_merge_adds_fp8_curves_and_prefill_and_notes():
    from kvlab.calibration.torch_crosscheck import merge

    sheet = datasheet("h200")
    mdl = model("qwen3-8b")
    fp8 = [p for p in _synthetic_gemm([mdl], lambda m: 0.3, dtype="fp8", peak=sheet.fp8_dense_flops) if p["shape"] != "lm_head"]
    profile = {"gemm_efficiency": {"qwen3-8b": {"bf16": [[1, 0.004]]}}, "notes": ["fp8_compute_efficiency: not measured: x"],
               "provenance": {"fit_notes": []}, "measurements": {}}
    section = {"torch_version": "2.11", "fp8_points": fp8, "notes": ["fp8 qwen3-8b o M=3: padded"],
               "prefill_attention": [{"tokens": 4096, "flops_per_s": 0.5 * sheet.bf16_dense_flops},
                                     {"tokens": 16384, "flops_per_s": 0.6 * sheet.bf16_dense_flops}]}
    merged, notes = merge(profile, section, sheet)
    assert all(e == pytest.approx(0.3) for _, e in merged["gemm_efficiency"]["qwen3-8b"]["fp8"])
    assert merged["fp8_compute_efficiency"] == merged["gemm_efficiency"]["qwen3-8b"]["fp8"]
    assert merged["prefill_attention_efficiency"] == pytest.approx(0.6)
    assert not any(n.startswith("fp8_compute_efficiency: not measured") for n in merged["notes"])
    assert any("padded" in n for n in notes) and any("torch._scaled_mm" in n for n in notes)
    assert profile["notes"] == ["fp8_compute_efficiency: not measured: x"]  # the input is not changed
