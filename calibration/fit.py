"""From raw measurements to the efficiencies `sim` uses.

Every efficiency is (achieved rate) / (denominator), where the denominator is the datasheet peak
in sim/data/gpus.json for a GPU run. The CPU pipeline check has no datasheet, so it divides by the
best rate it measured itself ("self-normalised"), which keeps its numbers in (0, 1] and makes plain
that they describe nothing.

The GEMM curve is aggregated over a decoder layer: a step runs all the weight shapes, so its
efficiency at M tokens is total FLOPs / total time of one layer's GEMMs, each shape weighted by how
many hidden x hidden blocks of parameters it stands for (`layer_weights`). The published profiles
use the same aggregation on roofline times (`roofline_gemm_time_s`), so measured and published
curves mean the same thing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .catalog import ModelShapes


@dataclass(frozen=True)
class Denominators:
    """What each efficiency is divided by, and where that figure comes from."""

    hbm_bytes_per_s: float
    bf16_flops: float
    fp8_flops: float | None
    interconnect_bytes_per_s: float
    source: str


def round_sig(x: float, digits: int = 4) -> float:
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, digits - 1 - int(math.floor(math.log10(abs(x)))))


def as_efficiency(achieved: float, peak: float) -> tuple[float, str | None]:
    """achieved / peak, rounded, kept inside (0, 1]. Returns (efficiency, a note when capped)."""
    if peak <= 0 or achieved <= 0:
        raise ValueError(f"efficiency needs positive rates, got {achieved} / {peak}")
    eff = achieved / peak
    if eff > 1.0:
        return 1.0, f"achieved {achieved:.4g} exceeds the denominator {peak:.4g} (ratio {eff:.3f}); capped at 1.0"
    return max(round_sig(eff), 1e-6), None


def plateau_rate(points: list[dict], size_key: str, rate_key: str, min_size: float) -> tuple[float, list[int]]:
    """Best rate among points of size >= min_size (all points when none is that large).
    Returns (rate, sizes considered)."""
    if not points:
        raise ValueError("no measurements to fit")
    large = [p for p in points if p[size_key] >= min_size] or points
    return max(p[rate_key] for p in large), sorted(p[size_key] for p in large)


def layer_weights(model: ModelShapes) -> dict[str, float]:
    """How many hidden x hidden parameter blocks each measured shape stands for in one layer.

    Attention projections: q (hidden x q_dim), k and v (hidden x kv_dim each), o (q_dim x hidden),
    i.e. (2 q_dim + 2 kv_dim) / hidden blocks of hidden x hidden. The MLP's gate, up and down are
    three hidden x intermediate blocks. The LM head runs once per step, 1 / layers of it per layer.
    Worked example, Qwen3-8B (hidden 4096, 32 q heads, 8 kv heads, head_dim 128, 36 layers):
    hidden x hidden 2.5, hidden x intermediate 3, hidden x vocab 1/36.
    """
    q_dim = model.num_attention_heads * model.head_dim
    kv_dim = model.num_key_value_heads * model.head_dim
    return {
        "hidden x hidden": (2 * q_dim + 2 * kv_dim) / model.hidden_size,
        "hidden x intermediate": 3.0,
        "hidden x vocab": 1.0 / model.num_hidden_layers,
    }


def aggregate_curve(rows: list[tuple[int, float, float, float]], peak_flops: float) -> list[list[float]]:
    """rows of (tokens, weight, flops, time_s) -> [[tokens, efficiency], ...] sorted by tokens,
    where efficiency = sum(weight x flops) / sum(weight x time) / peak_flops."""
    by_m: dict[int, list[float]] = {}
    for m, w, flops, t in rows:
        acc = by_m.setdefault(m, [0.0, 0.0])
        acc[0] += w * flops
        acc[1] += w * t
    curve = []
    for m in sorted(by_m):
        flops, t = by_m[m]
        if t > 0:
            curve.append([m, min(1.0, max(round_sig(flops / t / peak_flops), 1e-6))])
    return curve


def compute_curve(gemm_points: list[dict], models: list[ModelShapes], dtype: str, peak_flops: float) -> list[list[float]]:
    """The measured GEMM efficiency curve for one dtype, aggregated over the models' layers."""
    weights = {m.id: layer_weights(m) for m in models}
    rows = [
        (p["m"], weights[p["model"]][p["shape"]], p["flops"], p["time_s"])
        for p in gemm_points
        if p["dtype"] == dtype and p["model"] in weights and p["shape"] in weights[p["model"]]
    ]
    return aggregate_curve(rows, peak_flops)


def roofline_gemm_time_s(m: int, k: int, n: int, in_bytes: float, out_bytes: float,
                         bandwidth_bytes_per_s: float, flops_per_s: float) -> float:
    """Roofline time of y[m, n] = x[m, k] @ W[k, n]: the larger of moving its bytes at the achieved
    bandwidth and doing its 2 m k n FLOPs at the achieved large-GEMM rate.

    bytes = in_bytes x (m k + k n) + out_bytes x m n. Worked example (A100: 1.75e12 B/s, 271.2e12
    FLOP/s), m = 1, k = 4096, n = 12288, bf16: 100.7 MB in 57.5 us vs 1.0e8 FLOP in 0.37 us, so
    57.5 us: the GEMM runs at 1.75 TFLOP/s, 0.56% of the 312 TFLOP/s peak.
    """
    nbytes = in_bytes * (m * k + k * n) + out_bytes * m * n
    return max(nbytes / bandwidth_bytes_per_s, 2.0 * m * k * n / flops_per_s)


def roofline_curve(models: list[ModelShapes], tokens: list[int], in_bytes: float, out_bytes: float,
                   bandwidth_bytes_per_s: float, large_gemm_flops: float, peak_flops: float) -> list[list[float]]:
    """Efficiency curve implied by the roofline, aggregated over layers like `compute_curve`."""
    rows = []
    for model in models:
        weights = layer_weights(model)
        for shape in model.gemm_shapes():
            for m in tokens:
                t = roofline_gemm_time_s(m, shape.k, shape.n, in_bytes, out_bytes, bandwidth_bytes_per_s, large_gemm_flops)
                rows.append((m, weights[shape.name], 2.0 * m * shape.k * shape.n, t))
    return aggregate_curve(rows, peak_flops)


def step_overhead_s(points: list[dict]) -> tuple[float, str]:
    """The CUDA-graph skeleton when it ran, else the eager one (see benchmarks/overhead.py)."""
    by_variant = {p["variant"]: p for p in points if "time_s" in p}
    for variant in ("cuda-graph", "eager", "single-launch"):
        if variant in by_variant:
            p = by_variant[variant]
            return round_sig(p["time_s"]), f"{variant} skeleton of {p['kernels']} empty kernels + synchronise"
    raise ValueError("no overhead measurement ran")


def allreduce_fit(points: list[dict], interconnect_bytes_per_s: float) -> tuple[float, float, list[str]]:
    """(interconnect_efficiency, allreduce_latency_s, notes) from all-reduce points."""
    if not points:
        raise ValueError("no all-reduce measurements")
    best = max(p["busbw_bytes_per_s"] for p in points)
    eff, note = as_efficiency(best, interconnect_bytes_per_s)
    smallest = min(points, key=lambda p: p["size_bytes"])
    notes = [f"best busbw {best / 1e9:.1f} GB/s over datasheet {interconnect_bytes_per_s / 1e9:.0f} GB/s"]
    if note:
        notes.append(note)
    notes.append(f"latency: time of the {smallest['size_bytes']} B all-reduce")
    return eff, round_sig(smallest["time_s"]), notes
