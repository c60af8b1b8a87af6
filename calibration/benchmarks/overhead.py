"""The fixed per-step overhead: launching a decode step's kernels and synchronising once.

A "step skeleton" launches as many empty kernels as an eager decode step of the model launches
(plan.kernels_per_step: 12 per layer + 4; 436 for Qwen3-8B) and then waits for the GPU. Its
wall-clock time is what a step costs even when it moves no bytes and does no FLOPs.

Three variants are timed (host clock, median of trials):
- cuda-graph:    the skeleton captured once in a CUDA graph, replayed and synchronised. Engines
                 (vLLM, SGLang) replay decode steps as graphs, so this is the fitted step_overhead_s.
- eager:         the kernels launched one by one. Recorded, not fitted: in a real eager step the
                 host launches run ahead while the GPU computes, so they overlap the work `sim`
                 already times and adding them would count time twice.
- single-launch: one empty kernel and a synchronise: the floor of any step (a round trip to the GPU).
"""

from __future__ import annotations

import statistics

from ..backend import BackendUnavailable
from ..plan import kernels_per_step
from ..timing import quantile
from . import Context


def units(plan, models) -> int:
    return 3


def _trials(fn, n: int) -> dict:
    fn()  # warm-up: first launches load the module, first graph launch uploads it
    samples = sorted(fn() for _ in range(max(n, 1)))
    return {"time_s": statistics.median(samples), "time_p10_s": quantile(samples, 0.1),
            "time_p90_s": quantile(samples, 0.9), "repeats": len(samples)}


def run(ctx: Context, models) -> dict:
    be, plan = ctx.backend, ctx.plan
    model = models[0]
    n_kernels = kernels_per_step(model.num_hidden_layers)
    out: dict = {"model": model.id, "kernels_per_step": n_kernels, "points": []}
    variants = (("cuda-graph", n_kernels, True), ("eager", n_kernels, False), ("single-launch", 1, False))
    for variant, n, graph in variants:
        label = f"overhead {variant}"
        if ctx.out_of_time(label):
            continue
        try:
            stats = _trials(lambda n=n, graph=graph: be.step_skeleton_s(n, graph), plan.overhead_trials)
        except BackendUnavailable as exc:
            out["points"].append({"variant": variant, "kernels": n, "unavailable": str(exc)})
        except Exception as exc:  # a CUDA error in one variant must not lose the others
            out["points"].append({"variant": variant, "kernels": n, "unavailable": f"{type(exc).__name__}: {exc}"})
        else:
            out["points"].append({"variant": variant, "kernels": n, **stats, "per_kernel_s": stats["time_s"] / n})
        ctx.done(label)
    return out
