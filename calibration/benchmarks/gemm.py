"""Dense GEMM throughput against the number of tokens in the step, at the model's weight shapes.

y[M, N] = x[M, K] @ W[K, N] with K x N one of hidden x hidden, hidden x intermediate and
hidden x vocab, and M (tokens per step) swept from 1 to 16384. FLOPs = 2 M K N.

Why a curve: at M = 1 the GEMM reads K x N weights to do 2 K N FLOPs (about 1 FLOP per byte in
bf16), so it runs at the HBM rate, a fraction of a percent of the tensor-core peak; only at M in
the hundreds does it become compute-bound. `sim` interpolates this curve so a decode step at
batch 8 is not credited with the rate of an 8192-token prefill.

dtypes: bf16 and fp16 through cublasGemmEx (fp32 accumulate). fp8 is attempted once when the plan
asks for it: cublasGemmEx does not accept fp8 operands (fp8 needs cublasLt, which CuPy does not
wrap), so on current CuPy the attempt records "unsupported" with cuBLAS's message rather than a number.
"""

from __future__ import annotations

from ..timing import rotating_sets
from . import Context


def units(plan, models) -> int:
    n_dtypes = len(plan.gemm_dtypes) + (1 if plan.try_fp8 else 0)
    return _points_per_dtype(plan, models) * n_dtypes


def _points_per_dtype(plan, models) -> int:
    return sum(len(m.gemm_shapes()) for m in models) * len(plan.gemm_tokens)


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
    out: dict = {"points": [], "dtypes": dtypes, "fp8": None, "storage": {}}
    if plan.try_fp8:
        reason = _probe_fp8(ctx)
        out["fp8"] = "measured" if reason is None else f"not measured: {reason}"
        if reason is None:
            dtypes.append("fp8")
        else:
            ctx.done("gemm fp8 (unsupported)", _points_per_dtype(plan, models))
    else:
        out["fp8"] = "not measured: not part of this plan"
    for model in models:
        for shape in model.gemm_shapes():
            for dtype in dtypes:
                _sweep_shape(ctx, model, shape, dtype, out)  # its buffers are freed when it returns
                be.release()
    return out


def _sweep_shape(ctx: Context, model, shape, dtype: str, out: dict) -> None:
    """Every M of the plan for one (model, shape, dtype), sharing one set of rotating weights."""
    be, plan = ctx.backend, ctx.plan
    l2 = be.l2_bytes()
    out_dtype = "bf16" if dtype == "fp8" else dtype
    eb, out_eb = be.dtype_bytes(dtype), be.dtype_bytes(out_dtype)
    out["storage"][dtype] = {"input_bytes": eb, "output_bytes": out_eb}
    w_bytes = shape.k * shape.n * eb
    label = f"gemm {model.id} {shape.name} {dtype}"
    if not ctx.fits_in_memory(label, w_bytes):
        ctx.done(label + " (skipped)", len(plan.gemm_tokens))
        return
    n_w = rotating_sets(w_bytes, l2, be.free_memory_bytes(), max_fraction_of_free=0.3)
    weights = [be.random((shape.k, shape.n), dtype, ctx.seed + 10 + j) for j in range(n_w)]
    for m in plan.gemm_tokens:
        point_label = f"{label} M={m}"
        if ctx.out_of_time(point_label):
            continue
        xy_bytes = m * shape.k * eb + m * shape.n * out_eb
        if not ctx.fits_in_memory(point_label, xy_bytes):
            ctx.done(point_label + " (skipped)")
            continue
        n_x = rotating_sets(xy_bytes, l2, be.free_memory_bytes(), max_fraction_of_free=0.3)
        xs = [be.random((m, shape.k), dtype, ctx.seed + 100 + j) for j in range(n_x)]
        ys = [be.empty((m, shape.n), out_dtype) for _ in range(n_x)]

        def call(i, xs=xs, ys=ys, n_x=n_x):
            be.gemm(xs[i % n_x], weights[i % n_w], ys[i % n_x], dtype)

        t = ctx.time_point(call, n_w * n_x)
        flops = 2.0 * m * shape.k * shape.n
        out["points"].append({
            "model": model.id, "shape": shape.name, "dtype": dtype,
            "m": m, "k": shape.k, "n": shape.n, "flops": flops, **t.as_dict(),
            "flops_per_s": flops / t.median_s, "rotating_sets": n_w * n_x,
        })
        ctx.done(point_label)
