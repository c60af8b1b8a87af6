"""GPU launch overhead of a decode step as a function of its kernel count, by CUDA-graph replay.

Engines (vLLM, SGLang, TensorRT-LLM) capture a decode step in a CUDA graph and replay it, so what
a step costs beyond its kernels' work is one graph launch and one synchronise, plus a small gap
per kernel node inside the graph. Graphs of n empty kernels are captured for each n of the plan
(plan.overhead_kernel_counts) and timed two ways:
- wall:   host clock around one replay + synchronise, median of trials: the step's round trip;
- device: many replays back to back between one event pair: the GPU time per replay.
A least-squares line wall(n) = a + b n gives step_overhead_s = a and kernel_overhead_s = b, so
sim charges step_overhead_s + kernels_per_step x kernel_overhead_s per step.

If graph capture fails the fit does NOT fall back to eager launches: the failure is recorded and
the profile's notes say so. Eager launching is timed only when the plan asks (--eager-overhead),
and only recorded.
"""

from __future__ import annotations

import statistics

from ..backend import BackendUnavailable
from ..plan import kernels_per_step
from ..timing import quantile
from . import Context


def units(plan, models) -> int:
    return len(plan.overhead_kernel_counts) + (1 if plan.eager_overhead else 0)


def _stats(samples: list[float]) -> dict:
    s = sorted(samples)
    return {"time_s": statistics.median(s), "time_p10_s": quantile(s, 0.1), "time_p90_s": quantile(s, 0.9), "repeats": len(s)}


def run(ctx: Context, models) -> dict:
    be, plan = ctx.backend, ctx.plan
    model = models[0]
    out: dict = {"model": model.id, "kernels_per_step_eager": kernels_per_step(model.num_hidden_layers),
                 "method": "CUDA graph of n empty kernels: wall = replay + synchronise (host clock), "
                           "device = back-to-back replays between one event pair",
                 "points": [], "graph": None}
    try:
        out["event_floor_s"] = statistics.median(be.event_floor_s() for _ in range(20))
    except Exception as exc:
        out["event_floor_s"] = None
        out["event_floor_error"] = f"{type(exc).__name__}: {exc}"
    out["timing_note"] = ("every other benchmark times many back-to-back calls between one event pair; "
                          "event_floor_s is what an empty pair reads")
    for n in plan.overhead_kernel_counts:
        label = f"overhead graph n={n}"
        if ctx.out_of_time(label):
            continue
        if out["graph"] is not None and out["graph"] != "ok":
            ctx.done(label + " (graph unavailable)")
            continue
        try:
            be.graph_step_wall_s(n)  # capture, upload, first replay
            wall = [be.graph_step_wall_s(n) for _ in range(max(plan.overhead_trials, 1))]
            device = [be.graph_replay_s(n, 20) for _ in range(5)]
        except BackendUnavailable as exc:
            out["graph"] = f"unavailable: {exc}"
            ctx.log(f"  overhead: CUDA graph unavailable ({exc}); step overhead NOT measured (no eager fallback)")
        except Exception as exc:  # a CUDA error: record it, keep the rest of the suite
            out["graph"] = f"failed: {type(exc).__name__}: {exc}"
            ctx.log(f"  overhead: CUDA graph failed ({exc}); step overhead NOT measured (no eager fallback)")
        else:
            out["graph"] = "ok"
            out["points"].append({"variant": "cuda-graph", "kernels": n, **_stats(wall),
                                  "device_time_s": statistics.median(device)})
        ctx.done(label)
    if plan.eager_overhead:
        n = out["kernels_per_step_eager"]
        try:
            be.step_skeleton_s(n, False)
            stats = _stats([be.step_skeleton_s(n, False) for _ in range(max(plan.overhead_trials, 1))])
            out["eager"] = {"variant": "eager", "kernels": n, **stats}
        except Exception as exc:
            out["eager"] = {"variant": "eager", "kernels": n, "unavailable": f"{type(exc).__name__}: {exc}"}
        ctx.done("overhead eager")
    return out
