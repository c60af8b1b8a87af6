"""Runs the benchmarks of a plan in order and collects their raw measurements."""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable
from typing import TextIO

from .backend import Backend
from .benchmarks import Context, allreduce, attention, gemm, hbm, mla, moe, overhead, tp
from .catalog import ModelShapes
from .plan import Plan
from .progress import Progress, RunLog
from .timing import Budget

# Order matters a little: the cheap, essential measurements first, so a run cut short by its
# budget still has what the fit needs.
# Attention runs before the GEMMs: it is cheap and sets the KV term of every decode step, while the
# GEMM sweep is long and skips whole models when the budget runs short.
# The MoE, TP and MLA sweeps come after the dense one, with time reserved for them (plan.reserve_s):
# the dense sweep skips its last models rather than leave them nothing. MLA attention runs last of
# the GPU kernels: a fault in its newer kernel cannot take the other measurements with it.
BENCHMARKS = (("overhead", overhead), ("hbm", hbm), ("attention", attention), ("gemm", gemm), ("moe", moe), ("tp", tp),
              ("mla_attention", mla), ("allreduce", allreduce))


def reserved_after(plan: Plan, name: str) -> float:
    """Seconds of the budget kept for the benchmarks that run after `name`."""
    names = [n for n, _ in BENCHMARKS]
    later = set(names[names.index(name) + 1:])
    return sum(s for bench, s in plan.reserve_s if bench in later)


def run_suite(backend: Backend, plan: Plan, models: list[ModelShapes], seed: int, log: RunLog,
              progress_stream: TextIO | None = None, telemetry=None,
              checkpoint: Callable[[dict], None] | None = None) -> tuple[dict, float, list[str]]:
    """(measurements by benchmark name, wall seconds, skipped points). `telemetry` (a
    telemetry.Telemetry) is told which benchmark is running; `checkpoint` is called with the
    measurements so far after each benchmark, so a run killed later still leaves them."""
    total = sum(module.units(plan, models) for _, module in BENCHMARKS)
    progress = Progress(total, stream=progress_stream if progress_stream is not None else sys.stderr)
    log.before_write = progress.clear
    ctx = Context(backend=backend, plan=plan, budget=Budget(plan.budget_s), progress=progress,
                  log=log, seed=seed, units_left=total)
    start = time.monotonic()
    measurements: dict = {}
    try:
        for name, module in BENCHMARKS:
            if telemetry is not None:
                telemetry.phase = name
            t0 = time.monotonic()
            ctx.budget.reserved_s = reserved_after(plan, name)
            if checkpoint is not None:
                ctx.save_partial = lambda section, name=name: checkpoint({**measurements, name: section})
            left = ctx.units_left
            try:
                measurements[name] = module.run(ctx, models)
            except Exception as exc:  # keep the rest of the run; the fit says what is missing
                measurements[name] = {"error": f"{type(exc).__name__}: {exc}", "points": []}
                log(f"  {name}: FAILED: {type(exc).__name__}: {exc}")
                log("    " + traceback.format_exc().strip().replace("\n", "\n    "))
                # the progress bar skips what the failed benchmark did not reach
                ctx.done(f"{name} (failed)", max(0, module.units(plan, models) - (left - ctx.units_left)))
                try:
                    backend.release()  # its buffers go back before the next benchmark
                except Exception as release_exc:  # a broken context: the next benchmark will say so
                    log(f"  {name}: release after the failure failed too: {release_exc}")
            else:
                log(f"  {name}: done in {time.monotonic() - t0:.1f} s")
            if checkpoint is not None:
                checkpoint(measurements)
        measurements["timing"] = {"host_bound_batches": getattr(backend, "host_bound_batches", 0),
                                   "method": "back-to-back calls between one event pair after a spin kernel"}
        if telemetry is not None:
            telemetry.phase = "fit"
    finally:
        progress.close()
        log.before_write = None
    return measurements, time.monotonic() - start, ctx.skipped
