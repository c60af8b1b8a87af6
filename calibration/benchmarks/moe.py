"""MoE layers at their own token counts: the routed experts' GEMMs, grouped over the experts that
receive tokens, beside the model's attention projections.

In a decode or prefill step of M tokens, each token is routed to top_k of E experts, so expert e
runs its gate_up GEMM (hidden -> 2 x moe_intermediate) and its down GEMM (moe_intermediate ->
hidden) on the M_e tokens routed to it, M_e about M x top_k / E on average, and only the experts
with M_e > 0 run at all. That is what this benchmark times, for each model of plan.moe_models:
- routing: each token picks top_k distinct experts uniformly at random (seeded). Real routers are
  less even; engines' load balancing aims at this. n_routing draws per M are rotated so that
  successive calls touch different experts (the L2 keeps no expert's weights);
- "experts": one call = gate_up then down for every expert that received tokens, back to back
  (cublasGemmEx per expert; vLLM's fused MoE kernel does the same work in one launch), plus the
  shared expert(s) on all M tokens where the model has them (DeepSeek-V3: one, 2048 wide);
  FLOPs = sum over experts 2 M_e (hidden x 2I + I x hidden) (+ the shared expert's);
- the attention projections of the model (catalog.ModelShapes.attention_shapes: qkv and o, or
  MLA's qkv_a, q_b and o) on the same M grid, so the model's curve covers its whole layer.
The fit turns these into gemm_efficiency[<moe model>], the time-weighted efficiency of the
layer's GEMMs at M tokens per step, which sim uses for that model (catalog models with the same
shapes, DeepSeek-R1 for DeepSeek-V3, get the same curve, and the notes say so).
Each model is measured whole or skipped and named; a failure in one model is recorded and the
next model runs.
"""

from __future__ import annotations

import time

import numpy as np

from . import Context
from .gemm import _sweep_shape

N_ROUTINGS = 4  # routing draws rotated per M


def _model_units(plan, model) -> int:
    return len(plan.moe_tokens) * (len(model.attention_shapes()) + 1)


def _models(ctx: Context, models) -> list:
    from ..catalog import load_models

    catalog = load_models()
    out = []
    for model_id in ctx.plan.moe_models:
        full = catalog.get(model_id)
        if full is None:
            continue
        out.append(full.scaled_down(ctx.plan.width_divisor) if ctx.plan.width_divisor > 1 else full)
    return out


def units(plan, models) -> int:
    from ..catalog import load_models

    catalog = load_models()
    return sum(_model_units(plan, catalog[m]) for m in plan.moe_models if m in catalog)


def routed_rows(tokens: int, experts: int, top_k: int, rng: np.random.Generator) -> np.ndarray:
    """Rows each expert receives when `tokens` tokens each pick top_k distinct experts uniformly.
    Sums to tokens x top_k; e.g. 1 token, top 8 of 128: eight experts get one row each."""
    top_k = min(top_k, experts)
    choice = np.argpartition(rng.random((tokens, experts)), top_k - 1, axis=1)[:, :top_k]
    return np.bincount(choice.ravel(), minlength=experts)


def run(ctx: Context, models) -> dict:
    be = ctx.backend
    out: dict = {"points": [], "models": [], "skipped_models": [], "model_shapes": {}, "storage": {}, "dtype": "bf16",
                 "routing": f"uniform top-k without replacement, {N_ROUTINGS} draws rotated per M",
                 "grouping": "cublasGemmEx per expert that receives tokens, back to back (gate_up then down)"}
    for model in _models(ctx, models):
        units_here = _model_units(ctx.plan, model)
        if ctx.budget.exhausted():
            why = "the time budget is spent"
            out["skipped_models"].append({"model": model.id, "reason": why})
            ctx.skipped.append(f"moe {model.id}: {why}")
            ctx.done(f"moe {model.id} (skipped)", units_here)
            continue
        left, t0 = ctx.units_left, time.monotonic()
        n_points = len(out["points"])
        try:
            for shape in model.attention_shapes():
                _sweep_shape(ctx, model, shape, "bf16", out, tokens=ctx.plan.moe_tokens)
                be.release()
            _sweep_experts(ctx, model, out)
        except Exception as exc:  # one model's failure (memory, cuBLAS) does not lose the others
            why = f"failed: {type(exc).__name__}: {exc}"
            del out["points"][n_points:]  # no partial model
            out["skipped_models"].append({"model": model.id, "reason": why})
            ctx.skipped.append(f"moe {model.id}: {why}")
            ctx.log(f"  moe {model.id}: {why}")
            ctx.done(f"moe {model.id} (failed)", max(0, units_here - (left - ctx.units_left)))
        else:
            out["models"].append(model.id)
            out["model_shapes"][model.id] = [s.name for s in model.attention_shapes()] + ["experts"]
            ctx.log(f"  moe {model.id}: {time.monotonic() - t0:.1f} s")
        be.release()
        ctx.checkpoint(out)
    return out


def _sweep_experts(ctx: Context, model, out: dict) -> None:
    be, plan = ctx.backend, ctx.plan
    e_count, top_k = model.num_experts, model.experts_per_token
    h, inter = model.hidden_size, model.moe_intermediate_size
    shared = model.shared_experts * inter  # width of the shared expert(s), 0 when none
    eb = be.dtype_bytes("bf16")
    label = f"moe {model.id} experts"
    w_bytes = (e_count * 3 * h * inter + 3 * h * shared) * eb
    if not ctx.fits_in_memory(label, w_bytes):
        raise MemoryError(f"expert weights of {w_bytes / 2**30:.1f} GiB do not fit")
    gate_up = [be.random((h, 2 * inter), "bf16", ctx.seed + 1000 + e) for e in range(e_count)]
    down = [be.random((inter, h), "bf16", ctx.seed + 5000 + e) for e in range(e_count)]
    if shared:
        shared_gate_up = be.random((h, 2 * shared), "bf16", ctx.seed + 9000)
        shared_down = be.random((shared, h), "bf16", ctx.seed + 9001)
    rng = np.random.default_rng(ctx.seed + 77)
    for m in plan.moe_tokens:
        point_label = f"{label} M={m}"
        if ctx.out_of_time(point_label):
            continue
        routings = [routed_rows(m, e_count, top_k, rng) for _ in range(N_ROUTINGS)]
        rows = max(int(r.max()) for r in routings)
        # row slices [:c] of C-contiguous buffers are contiguous, as cublasGemmEx's leading dimensions assume
        x = be.random((rows, h), "bf16", ctx.seed + 200)
        act = be.random((rows, inter), "bf16", ctx.seed + 201)
        hid, y = be.empty((rows, 2 * inter), "bf16"), be.empty((rows, h), "bf16")
        active = [[(e, int(c)) for e, c in enumerate(r) if c] for r in routings]
        # views made once, outside the timed calls (a slice costs host time, not GPU time)
        views = [[(x[:c], gate_up[e], hid[:c], act[:c], down[e], y[:c]) for e, c in a] for a in active]
        shared_views = None
        if shared:
            shared_views = (be.random((m, h), "bf16", ctx.seed + 202), shared_gate_up, be.empty((m, 2 * shared), "bf16"),
                            be.random((m, shared), "bf16", ctx.seed + 203), shared_down, be.empty((m, h), "bf16"))

        def call(i, views=views, shared_views=shared_views):
            for xa, wg, hb, ab, wd, yb in views[i % N_ROUTINGS]:
                be.gemm(xa, wg, hb, "bf16")
                be.gemm(ab, wd, yb, "bf16")
            if shared_views is not None:
                xa, wg, hb, ab, wd, yb = shared_views
                be.gemm(xa, wg, hb, "bf16")
                be.gemm(ab, wd, yb, "bf16")

        t = ctx.time_point(call, N_ROUTINGS)
        # every routing sums to m x top_k rows, so the FLOPs are the same for each draw
        flops = 2.0 * m * min(top_k, e_count) * (h * 2 * inter + inter * h) + 2.0 * m * (h * 2 * shared + shared * h)
        out["points"].append({
            "model": model.id, "shape": "experts", "dtype": "bf16", "m": m, "flops": flops, **t.as_dict(),
            "flops_per_s": flops / t.median_s, "experts_touched": [len(a) for a in active], "max_rows_per_expert": rows,
            "rows_per_expert_mean": m * min(top_k, e_count) / e_count, "shared_expert_width": shared,
        })
        ctx.done(point_label)
