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
    """Efficiency curve implied by the roofline, aggregated over layers by `layer_weights`."""
    rows = []
    for model in models:
        weights = layer_weights(model)
        for shape in model.gemm_shapes():
            for m in tokens:
                t = roofline_gemm_time_s(m, shape.k, shape.n, in_bytes, out_bytes, bandwidth_bytes_per_s, large_gemm_flops)
                rows.append((m, weights[shape.name], 2.0 * m * shape.k * shape.n, t))
    return aggregate_curve(rows, peak_flops)


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


# -- schema 2 fits: per model, monotone where physics says so, every adjustment noted -------------

PROJECTIONS = ("qkv", "o", "gate_up", "down")
ADJUST_NOTE_THRESHOLD = 0.02  # isotonic adjustments larger than this (relative) are listed in notes


def isotonic_increasing(values: list[float], weights: list[float] | None = None) -> list[float]:
    """The non-decreasing sequence closest to `values` in weighted least squares (pool adjacent
    violators). Example: [1, 3, 2, 4] -> [1, 2.5, 2.5, 4]."""
    w = list(weights) if weights is not None else [1.0] * len(values)
    blocks: list[list[float]] = []  # [mean, weight, count]
    for v, wi in zip(values, w, strict=True):
        blocks.append([v, wi, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2, c2 = blocks.pop()
            m1, w1, c1 = blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, c1 + c2])
    out: list[float] = []
    for mean, _, count in blocks:
        out += [mean] * count
    return out


def monotone_times(points: list[dict], label: str, notes: list[str]) -> dict[int, float]:
    """tokens -> time_s of one GEMM shape, made non-decreasing in tokens (a step with more tokens
    does not take less time; a dip is noise or a kernel switch, e.g. cuBLAS picking a faster kernel
    at M = 64 than at M = 1, and is pooled with its neighbours). One note per curve says how many
    points moved by more than ADJUST_NOTE_THRESHOLD and the largest move."""
    pts = sorted(points, key=lambda p: p["m"])
    raw = [p["time_s"] for p in pts]
    fitted = isotonic_increasing(raw)
    moved = [(abs(f - r) / r, p["m"], r, f) for p, r, f in zip(pts, raw, fitted, strict=True)
             if abs(f - r) > ADJUST_NOTE_THRESHOLD * r]
    if moved:
        worst = max(moved)
        notes.append(f"{label}: {len(moved)} of {len(pts)} times pooled to keep time non-decreasing in M (monotone); "
                     f"largest move {worst[0]:.1%} at M={worst[1]} ({worst[2] * 1e6:.2f} -> {worst[3] * 1e6:.2f} us)")
    return {p["m"]: f for p, f in zip(pts, fitted, strict=True)}


def _clamped(eff: float, label: str, notes: list[str]) -> float:
    if eff > 1.0:
        notes.append(f"{label}: efficiency {eff:.4f} above 1 capped at 1.0 (check the denominator)")
        return 1.0
    return max(round_sig(eff), 1e-6)


def gemm_model_curves(points: list[dict], dtype: str, peak_flops: float, notes: list[str],
                      shapes_by_model: dict[str, list[str]] | None = None, label: str = "gemm_efficiency") -> dict[str, list[list[float]]]:
    """model id -> [[M, efficiency]] for one dtype: the time-weighted efficiency of the model's
    projection GEMMs, i.e. their FLOPs over their summed (monotone) times over the dense peak.
    The shapes are the four dense projections (qkv, o, gate_up, down) unless `shapes_by_model`
    names a model's own (an MoE layer: its attention projections and "experts"). Only M values
    measured for every shape are kept; a model missing a shape gets no curve, and the notes say so."""
    shapes_by_model = shapes_by_model or {}
    by_model: dict[str, dict[str, list[dict]]] = {}
    for p in points:
        if p["dtype"] == dtype and p["shape"] in shapes_by_model.get(p["model"], PROJECTIONS):
            by_model.setdefault(p["model"], {}).setdefault(p["shape"], []).append(p)
    curves: dict[str, list[list[float]]] = {}
    for model, shapes in by_model.items():
        wanted = tuple(shapes_by_model.get(model, PROJECTIONS))
        missing = [s for s in wanted if s not in shapes]
        if missing:
            notes.append(f"{label} {model} {dtype}: no curve, shapes {', '.join(missing)} not measured")
            continue
        prefix = "gemm" if label == "gemm_efficiency" else label
        times = {s: monotone_times(shapes[s], f"{prefix} {model} {s} {dtype}", notes) for s in wanted}
        flops = {s: {p["m"]: p["flops"] for p in shapes[s]} for s in wanted}
        common = sorted(set.intersection(*(set(t) for t in times.values())))
        dropped = sorted(set.union(*(set(t) for t in times.values())) - set(common))
        if dropped:
            notes.append(f"{label} {model} {dtype}: M {dropped} dropped (not measured for every shape)")
        curve = []
        for m in common:
            total_flops = sum(flops[s][m] for s in wanted)
            total_time = sum(times[s][m] for s in wanted)
            curve.append([m, _clamped(total_flops / total_time / peak_flops, f"{label} {model} {dtype} M={m}", notes)])
        if curve:
            curves[model] = curve
    return curves


def lm_head_curve(points: list[dict], model: str, peak_flops: float, notes: list[str]) -> list[list[float]]:
    pts = [p for p in points if p["dtype"] == "bf16" and p["shape"] == "lm_head" and p["model"] == model]
    if not pts:
        return []
    times = monotone_times(pts, f"lm_head {model}", notes)
    flops = {p["m"]: p["flops"] for p in pts}
    return [[m, _clamped(flops[m] / times[m] / peak_flops, f"lm_head_efficiency M={m}", notes)] for m in sorted(times)]


def attention_curve(points: list[dict], hbm_bytes_per_s: float, notes: list[str]) -> list[list[float]]:
    """[[context_tokens, efficiency]]: at each context length the best KV read rate over the batch
    sizes measured (at small batch the fixed cost of a launch dominates, and sim charges that
    through kernel_overhead_s), made non-decreasing in context (a longer context amortises the
    per-sequence setup of the same kernel over more bytes)."""
    best: dict[int, float] = {}
    for p in points:
        best[p["context_tokens"]] = max(best.get(p["context_tokens"], 0.0), p["bytes_per_s"])
    if not best:
        return []
    ctxs = sorted(best)
    raw = [best[c] / hbm_bytes_per_s for c in ctxs]
    fitted = isotonic_increasing(raw)
    curve = []
    for c, r, f in zip(ctxs, raw, fitted, strict=True):
        if abs(f - r) > ADJUST_NOTE_THRESHOLD * r:
            notes.append(f"attention_kv_efficiency L={c}: {r:.4f} pooled to {f:.4f} (monotone in context)")
        curve.append([c, _clamped(f, f"attention_kv_efficiency L={c}", notes)])
    return curve


def overhead_line(points: list[dict]) -> tuple[float, float]:
    """Least-squares wall(n) = a + b n over graph points: (a, b) in seconds (unclamped)."""
    xs = [float(p["kernels"]) for p in points]
    ys = [float(p["time_s"]) for p in points]
    if len(xs) < 2 or len(set(xs)) < 2:
        raise ValueError("the overhead line needs graphs of at least two kernel counts")
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b
