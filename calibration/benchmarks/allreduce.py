"""All-reduce bandwidth and latency across the GPUs of one machine (NCCL through CuPy).

Runs only with the CuPy backend and two or more visible GPUs; otherwise it records why it did not.
One process drives every GPU: `NcclCommunicator.initAll` makes a communicator per device and each
all-reduce is issued inside groupStart/groupEnd, as nccl-tests does with -g N.

Per message size S (fp16, out of place, sum), time per operation t over back-to-back iterations:
    algbw = S / t
    busbw = algbw x 2 (n - 1) / n     (the traffic a ring all-reduce puts on each link)
The fit: interconnect_efficiency = best busbw / datasheet per-direction interconnect bandwidth,
capped at 1.0 (NVLink SHARP on H100/H200 reduces inside the switch and reports busbw above the
line rate); allreduce_latency_s = t at the smallest size.
"""

from __future__ import annotations

import statistics
import time

from ..timing import quantile
from . import Context


def units(plan, models) -> int:
    return max(len(plan.allreduce_sizes_bytes), 1)


def run(ctx: Context, models) -> dict:
    be, plan = ctx.backend, ctx.plan
    n_units = units(plan, models)
    reason = None
    if not be.is_gpu:
        reason = "the NumPy backend has one process and no NCCL"
    elif be.device_count() < 2:
        reason = "one GPU visible: nothing to all-reduce with"
    elif not plan.allreduce_sizes_bytes:
        reason = "not part of this plan"
    if reason is not None:
        ctx.done("allreduce (skipped)", n_units)
        return {"skipped": reason, "points": []}
    try:
        return _run_nccl(ctx)
    except Exception as exc:  # NCCL missing from this CuPy build, or a NCCL error
        ctx.done("allreduce (failed)", max(0, min(n_units, ctx.units_left)))
        return {"skipped": f"NCCL all-reduce failed: {exc}", "points": []}


def _run_nccl(ctx: Context) -> dict:
    be, plan = ctx.backend, ctx.plan
    cp = be.cp
    from cupy.cuda import nccl

    n = be.device_count()
    devices = list(range(n))
    comms = nccl.NcclCommunicator.initAll(devices)
    streams = []
    for d in devices:
        with cp.cuda.Device(d):
            streams.append(cp.cuda.Stream(non_blocking=True))
    out: dict = {"ranks": n, "dtype": "fp16", "points": [], "nccl_version": str(nccl.get_version())}
    for size in plan.allreduce_sizes_bytes:
        label = f"allreduce {size} B x {n} GPUs"
        if ctx.out_of_time(label):
            continue
        out["points"].append(_one_size(ctx, nccl, comms, streams, size))
        ctx.done(label)
    return out


def _one_size(ctx: Context, nccl, comms, streams, size: int) -> dict:
    """Time an out-of-place fp16 sum all-reduce of `size` bytes on every GPU at once."""
    cp = ctx.backend.cp
    n = len(comms)
    count = size // 2
    send, recv = [], []
    for d in range(n):
        with cp.cuda.Device(d):
            rng = cp.random.default_rng(ctx.seed + d)
            send.append(rng.standard_normal(count, dtype=cp.float32).astype(cp.float16))
            recv.append(cp.empty(count, dtype=cp.float16))

    def once():
        nccl.groupStart()
        for d in range(n):
            with cp.cuda.Device(d):
                comms[d].allReduce(send[d].data.ptr, recv[d].data.ptr, count,
                                   nccl.NCCL_FLOAT16, nccl.NCCL_SUM, streams[d].ptr)
        nccl.groupEnd()

    def sync():
        for s in streams:
            s.synchronize()

    for _ in range(3):
        once()
    sync()
    t0 = time.perf_counter()
    once()
    sync()
    estimate = max(time.perf_counter() - t0, 1e-6)
    iters = max(1, min(200, int(0.2 * ctx.target_s() / estimate)))
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(iters):
            once()
        sync()
        samples.append((time.perf_counter() - t0) / iters)
    samples.sort()
    t = statistics.median(samples)
    algbw = size / t
    return {"size_bytes": size, "time_s": t, "time_p10_s": quantile(samples, 0.1), "time_p90_s": quantile(samples, 0.9),
            "repeats": len(samples), "iters": iters, "algbw_bytes_per_s": algbw,
            "busbw_bytes_per_s": algbw * 2 * (n - 1) / n}
