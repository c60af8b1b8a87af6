"""The projection GEMMs of one GPU under tensor parallelism (TP = 2, 4, 8).

With TP = t, vLLM (Megatron's layout) splits qkv and gate_up by columns (each rank computes 1/t
of the outputs: QKVParallelLinear, MergedColumnParallelLinear; KV heads are replicated when t
exceeds their count) and o and down by rows (each rank multiplies 1/t of the inputs and an
all-reduce adds the partial sums: RowParallelLinear). Every rank still sees all M tokens, so a
sharded GEMM is a thinner GEMM at the same M, and thinner GEMMs reach a lower fraction of the
peak at the same M: at M = 1 a quarter of the weights cost more than a quarter of the time.
catalog.ModelShapes.tp_shapes gives the four shapes per rank; each is swept over plan.tp_tokens
with gemm.py's rules (rotating weights, back-to-back timing). The fit writes
tp_gemm_efficiency[model][t]["bf16"], the time-weighted curve of the four per-rank GEMMs over the
dense peak of one GPU, which sim uses for that model when tensor_parallel = t.
Models go in plan.tp_models order; a (model, TP) pair that the rest of the budget cannot hold is
skipped and named, never measured in part.
"""

from __future__ import annotations

import time

from . import Context
from .gemm import _sweep_shape


def _pairs(plan, models_by_id) -> list:
    return [(models_by_id[m], t) for m in plan.tp_models if m in models_by_id for t in plan.tp_sizes]


def _catalog(plan) -> dict:
    from ..catalog import load_models

    full = load_models()
    if plan.width_divisor > 1:
        return {k: v.scaled_down(plan.width_divisor) for k, v in full.items() if k in plan.tp_models}
    return {k: v for k, v in full.items() if k in plan.tp_models}


def units(plan, models) -> int:
    return len(_pairs(plan, _catalog(plan))) * 4 * len(plan.tp_tokens)


def shardable(model, tp: int) -> str | None:
    """None when the model splits evenly over tp ranks, else why not."""
    if model.num_attention_heads % tp:
        return f"{model.num_attention_heads} query heads do not split over {tp} ranks"
    if model.intermediate_size % tp:
        return f"intermediate size {model.intermediate_size} does not split over {tp} ranks"
    return None


def run(ctx: Context, models) -> dict:
    be, plan = ctx.backend, ctx.plan
    out: dict = {"points": [], "measured": [], "skipped": [], "storage": {}, "dtype": "bf16", "sizes": list(plan.tp_sizes),
                 "layout": "per-rank shapes: qkv and gate_up split by columns, o and down by rows (catalog.tp_shapes)"}
    last_s = None
    n_units = 4 * len(plan.tp_tokens)
    for model, tp in _pairs(plan, _catalog(plan)):
        model_id = model.id
        why = shardable(model, tp)
        if why is None and ctx.budget.exhausted():
            why = "the time budget is spent"
        elif why is None and last_s is not None and last_s > ctx.budget.remaining_s():
            why = f"needs about {last_s:.0f} s, {ctx.budget.remaining_s():.0f} s of the budget left"
        if why is not None:
            out["skipped"].append({"model": model_id, "tp": tp, "reason": why})
            ctx.skipped.append(f"tp {model_id} tp={tp}: {why}")
            ctx.done(f"tp {model_id} tp={tp} (skipped)", n_units)
            continue
        t0, left, n_points = time.monotonic(), ctx.units_left, len(out["points"])
        try:
            for shape in model.tp_shapes(tp):
                _sweep_shape(ctx, model, shape, "bf16", out, tokens=plan.tp_tokens, extra={"tp": tp})
                be.release()
        except Exception as exc:  # one pair's failure does not lose the rest
            del out["points"][n_points:]
            reason = f"failed: {type(exc).__name__}: {exc}"
            out["skipped"].append({"model": model_id, "tp": tp, "reason": reason})
            ctx.log(f"  tp {model_id} tp={tp}: {reason}")
            ctx.done(f"tp {model_id} tp={tp} (failed)", max(0, n_units - (left - ctx.units_left)))
            be.release()
            continue
        out["measured"].append({"model": model_id, "tp": tp})
        last_s = time.monotonic() - t0
        ctx.checkpoint(out)
    return out
