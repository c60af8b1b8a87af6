"""The fits recover known efficiencies from synthetic measurements."""

import pytest
from kvlab.calibration.catalog import datasheet, model
from kvlab.calibration.fit import (
    Denominators,
    aggregate_curve,
    allreduce_fit,
    as_efficiency,
    compute_curve,
    layer_weights,
    plateau_rate,
    roofline_curve,
    roofline_gemm_time_s,
    round_sig,
    step_overhead_s,
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


def _synthetic_gemm(models, true_eff, dtype="bf16"):
    """GEMM points whose time is exactly flops / (true_eff(m) x PEAK)."""
    points = []
    for mdl in models:
        for shape in mdl.gemm_shapes():
            for m in (1, 8, 64, 512, 4096):
                flops = 2.0 * m * shape.k * shape.n
                t = flops / (true_eff(m) * PEAK)
                points.append({"model": mdl.id, "shape": shape.name, "dtype": dtype, "m": m, "k": shape.k,
                               "n": shape.n, "flops": flops, "time_s": t, "flops_per_s": flops / t})
    return points


def test_compute_curve_recovers_a_known_curve():
    true = {1: 0.004, 8: 0.03, 64: 0.25, 512: 0.7, 4096: 0.8}
    models = [model("qwen3-8b"), model("qwen3-14b")]
    curve = compute_curve(_synthetic_gemm(models, true.get), models, "bf16", PEAK)
    assert [m for m, _ in curve] == [1, 8, 64, 512, 4096]
    for m, eff in curve:
        assert eff == pytest.approx(true[m], rel=1e-3)


def test_compute_curve_ignores_other_dtypes():
    models = [model("qwen3-8b")]
    points = _synthetic_gemm(models, lambda m: 0.5) + _synthetic_gemm(models, lambda m: 0.1, dtype="fp16")
    assert {e for _, e in compute_curve(points, models, "bf16", PEAK)} == {0.5}


def test_aggregate_weights_by_time_not_by_mean_of_efficiencies():
    # Two shapes at M=1: 1 FLOP in 1 s and 3 FLOPs in 1 s; weight 1 each -> 4 FLOP / 2 s = 2 FLOP/s.
    assert aggregate_curve([(1, 1.0, 1.0, 1.0), (1, 1.0, 3.0, 1.0)], peak_flops=4.0) == [[1, 0.5]]


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


def test_step_overhead_prefers_the_graph_skeleton():
    points = [{"variant": "eager", "kernels": 436, "time_s": 2e-3},
              {"variant": "cuda-graph", "kernels": 436, "time_s": 4e-4},
              {"variant": "single-launch", "kernels": 1, "time_s": 1e-5}]
    value, basis = step_overhead_s(points)
    assert value == 4e-4 and "cuda-graph" in basis
    value, basis = step_overhead_s([points[0], {"variant": "cuda-graph", "kernels": 436, "unavailable": "x"}])
    assert value == 2e-3 and "eager" in basis


def test_allreduce_fit_recovers_efficiency_and_latency():
    n = 8
    points = []
    for size, t in ((1024, 20e-6), (1 << 20, 40e-6), (1 << 30, (1 << 30) * 2 * (n - 1) / n / 300e9)):
        algbw = size / t
        points.append({"size_bytes": size, "time_s": t, "busbw_bytes_per_s": algbw * 2 * (n - 1) / n})
    eff, latency, notes = allreduce_fit(points, 450e9)
    assert eff == pytest.approx(300 / 450, rel=1e-3)  # the 1 GiB point runs at 300 GB/s busbw
    assert latency == pytest.approx(20e-6)


def test_fit_profile_end_to_end_on_synthetic_measurements():
    sheet = datasheet("h200")
    den = datasheet_denominators(sheet)
    models = [model("qwen3-8b")]
    gemm_points = []
    for p in _synthetic_gemm(models, lambda m: 0.6):
        t = p["flops"] / (0.6 * sheet.bf16_dense_flops)
        gemm_points.append({**p, "time_s": t, "flops_per_s": p["flops"] / t})
    measurements = {
        "hbm": {"read": [{"size_bytes": 1 << 30, "bytes_per_s": 0.9 * sheet.hbm_bandwidth_bytes_per_s}],
                "copy": []},
        "gemm": {"points": gemm_points, "fp8": "not measured: test"},
        "attention": {"points": [{"batch": 8, "context_tokens": 4096,
                                  "bytes_per_s": 0.7 * sheet.hbm_bandwidth_bytes_per_s}]},
        "overhead": {"points": [{"variant": "cuda-graph", "kernels": 436, "time_s": 3e-4}]},
        "allreduce": {"skipped": "one GPU visible", "points": []},
    }
    fields, notes = fit_profile(measurements, full_plan(("qwen3-8b",)), models, den, "h200")
    assert fields["bandwidth_efficiency"] == pytest.approx(0.9)
    assert fields["kv_bandwidth_efficiency"] == pytest.approx(0.7)
    assert all(e == pytest.approx(0.6) for _, e in fields["compute_efficiency"])
    assert fields["step_overhead_s"] == 3e-4
    # One GPU: interconnect comes from the published H200 profile, and the notes say so.
    assert fields["interconnect_efficiency"] == 1.0
    assert any("h200-published" in n for n in notes)


def test_denominators_are_datasheet_figures():
    den = datasheet_denominators(datasheet("h100-sxm"))
    assert isinstance(den, Denominators)
    assert den.hbm_bytes_per_s == 3.35e12 and den.bf16_flops == 989.4e12


def test_kernels_per_step_worked_example():
    assert kernels_per_step(36) == 436
