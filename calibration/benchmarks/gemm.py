"""The model's own projection GEMMs against the number of tokens in the step.

y[M, N] = x[M, K] @ W[K, N] for each weight GEMM an engine runs per layer, fused as vLLM fuses
them (catalog.ModelShapes.projection_shapes: qkv, o, gate_up, down) and the LM head, with M
(tokens per step) on a dense grid at the small end (every value 1..16, where batch-1 to batch-16
decode lives and interpolating between powers of two overstated efficiency by up to 5.6%) and in
steps above. FLOPs = 2 M K N. Each model is measured whole or not at all: a model whose GEMMs
would not fit in what is left of the budget is skipped and named, so no curve is a partial mix.

Why a curve: at M = 1 the GEMM reads K x N weights to do 2 K N FLOPs (about 1 FLOP per byte in
bf16), so it runs at the HBM rate, a fraction of a percent of the tensor-core peak; only at M in
the hundreds does it become compute-bound.

dtypes: bf16 (and fp16 in the full plan) through cublasGemmEx, fp32 accumulate. fp8 is probed
once when the plan asks: cublasGemmEx does not take fp8 operands (they need cuBLASLt), so on CuPy
the probe records "unsupported" with cuBLAS's message rather than a number; the device runner
measures fp8 separately through torch._scaled_mm where PyTorch is installed (a cross-check path).
"""

from __future__ import annotations

import time

from ..timing import rotating_sets
from . import Context


def _tokens(plan, shape_name: str) -> tuple[int, ...]:
    if shape_name == "lm_head":  # the LM head sees only the tokens that are sampled
        return tuple(m for m in plan.gemm_tokens if m <= plan.lm_head_max_tokens)
    return plan.gemm_tokens


def _model_units(plan, model) -> int:
    return sum(len(_tokens(plan, s.name)) for s in model.projection_shapes())


def units(plan, models) -> int:
    n_dtypes = len(plan.gemm_dtypes) + (1 if plan.try_fp8 else 0)
    return sum(_model_units(plan, m) for m in models) * n_dtypes


def _model_flops(plan, model) -> float:
    return sum(2.0 * m * s.k * s.n for s in model.projection_shapes() for m in _tokens(plan, s.name))


def _probe_fp8(ctx: Context) -> str | None:
    """None when an fp8 GEMM runs here, else the reason it does not."""
    be = ctx.backend
    if not be.is_gpu:
        return "the NumPy backend has no fp8"
    try:
        a = be.random((64, 256), "fp8", ctx.seed)
        b = be.random((256, 256), "fp8", ctx.seed + 1)
        c = be.empty((64, 256), "bf16")
        be.gemm(a, b, c, "fp8")
        be.synchronize()
        return None
    except Exception as exc:  # CUBLASError: CUBLAS_STATUS_NOT_SUPPORTED or INVALID_VALUE
        return f"cublasGemmEx rejected fp8 operands: {exc}"


def run(ctx: Context, models) -> dict:
    be, plan = ctx.backend, ctx.plan
    dtypes = list(plan.gemm_dtypes)
    out: dict = {"points": [], "dtypes": dtypes, "fp8": None, "storage": {}, "models": [], "skipped_models": [],
                 "layout": "row-major y = x @ W, W stored [K, N]; cublasGemmEx, fp32 accumulate"}
    n_units = {m.id: _model_units(plan, m) for m in models}
    if plan.try_fp8:
        reason = _probe_fp8(ctx)
        out["fp8"] = "measured" if reason is None else f"not measured: {reason}"
        if reason is None:
            dtypes.append("fp8")
        else:
            ctx.done("gemm fp8 (unsupported)", sum(n_units.values()))
    else:
        out["fp8"] = "not measured: not part of this plan"
    last = None  # (seconds, points, flops) of the last model measured, to decide whether the next fits
    for model in models:
        units_here = n_units[model.id] * len(dtypes)
        why = None
        if model.moe or model.mla:
            why = "an MoE or MLA model: its GEMMs are timed by the moe benchmark, at the experts' token counts"
        elif last is not None:
            # Most points cost a fixed time (warm-up, data, batches); the large ones scale with FLOPs.
            spent, points, flops = last
            need = spent * (n_units[model.id] / points) * (_model_flops(plan, model) / flops) ** 0.5
            if need > ctx.budget.remaining_s():
                why = f"needs about {need:.0f} s, {ctx.budget.remaining_s():.0f} s of the budget left"
        if why is None and ctx.budget.exhausted():
            why = "the time budget is spent"
        if why is not None:
            out["skipped_models"].append({"model": model.id, "reason": why})
            ctx.skipped.append(f"gemm {model.id}: {why}")
            ctx.done(f"gemm {model.id} (skipped)", units_here)
            continue
        t0 = time.monotonic()
        for shape in model.projection_shapes():
            for dtype in dtypes:
                _sweep_shape(ctx, model, shape, dtype, out)  # its buffers are freed when it returns
                be.release()
        out["models"].append(model.id)
        ctx.checkpoint(out)
        last = (time.monotonic() - t0, n_units[model.id], max(_model_flops(plan, model), 1.0))
    return out


def _sweep_shape(ctx: Context, model, shape, dtype: str, out: dict, tokens: tuple[int, ...] | None = None,
                 extra: dict | None = None) -> None:
    """Every M of the plan (or of `tokens`) for one (model, shape, dtype), sharing one set of
    rotating weights; `extra` is added to each point (the TP sweep's {"tp": 4})."""
    be = ctx.backend
    l2 = be.l2_bytes()
    out_dtype = "bf16" if dtype == "fp8" else dtype
    eb, out_eb = be.dtype_bytes(dtype), be.dtype_bytes(out_dtype)
    out["storage"][dtype] = {"input_bytes": eb, "output_bytes": out_eb}
    tokens = _tokens(ctx.plan, shape.name) if tokens is None else tokens
    w_bytes = shape.k * shape.n * eb
    label = f"gemm {model.id} {shape.name} {dtype}" + "".join(f" {k}={v}" for k, v in (extra or {}).items())
    if not ctx.fits_in_memory(label, w_bytes):
        ctx.done(label + " (skipped)", len(tokens))
        return
    n_w = rotating_sets(w_bytes, l2, be.free_memory_bytes(), max_fraction_of_free=0.3)
    weights = [be.random((shape.k, shape.n), dtype, ctx.seed + 10 + j) for j in range(n_w)]
    for m in tokens:
        point_label = f"{label} M={m}"
        if ctx.out_of_time(point_label):
            continue
        xy_bytes = m * shape.k * eb + m * shape.n * out_eb
        if not ctx.fits_in_memory(point_label, xy_bytes):
            ctx.done(point_label + " (skipped)")
            continue
        n_x = rotating_sets(xy_bytes, l2, be.free_memory_bytes(), max_fraction_of_free=0.3)
        n_x = min(n_x, 8)  # activations are small at decode sizes; weights dominate the traffic
        xs = [be.random((m, shape.k), dtype, ctx.seed + 100 + j) for j in range(n_x)]
        ys = [be.empty((m, shape.n), out_dtype) for _ in range(n_x)]

        def call(i, xs=xs, ys=ys, n_x=n_x):
            be.gemm(xs[i % n_x], weights[i % n_w], ys[i % n_x], dtype)

        t = ctx.time_point(call, n_w * n_x)
        flops = 2.0 * m * shape.k * shape.n
        out["points"].append({
            "model": model.id, "shape": shape.name, "dtype": dtype,
            "m": m, "k": shape.k, "n": shape.n, "flops": flops, **t.as_dict(),
            "flops_per_s": flops / t.median_s, "rotating_sets": n_w * n_x, **(extra or {}),
        })
        ctx.done(point_label)
