"""HBM bandwidth against transfer size: a streaming read and a device-to-device copy.

Why both. Decode reads every weight once per step, so the read curve's plateau is what `sim` calls
bandwidth_efficiency. The copy (cudaMemcpyAsync device to device) is what most published figures
quote; it is kept as a cross-check and counted both ways:
  bytes_per_s       = 2 x size / time   (HBM traffic: each byte is read and written)
  copy_bytes_per_s  = size / time       (the "copy bandwidth" tools such as nvbandwidth print)

Small sizes do not reach the plateau (launch latency dominates a 4 KiB read), which is why the
suite records the whole curve and fits only sizes of at least plan.hbm_plateau_min_bytes.

Rotating buffers: two pools (source, destination) of max(4 x L2, largest size) bytes are filled
with random bytes once; a transfer of s bytes uses slice i of the pool on its i-th call, so
consecutive calls touch different memory and the L2 holds nothing useful.
"""

from __future__ import annotations

from ..timing import L2_FLUSH_FACTOR
from . import Context


def units(plan, models) -> int:
    return 2 * len(plan.hbm_sizes_bytes)


def run(ctx: Context, models) -> dict:
    be, plan = ctx.backend, ctx.plan
    l2 = be.l2_bytes()
    sizes = sorted(plan.hbm_sizes_bytes)
    # Keep the largest sizes the memory allows: two pools must fit in 60% of free memory.
    while sizes and 2 * max(L2_FLUSH_FACTOR * l2, sizes[-1]) > 0.6 * be.free_memory_bytes():
        ctx.skipped.append(f"hbm {sizes[-1]} B: two pools of that size do not fit in free memory")
        ctx.done("hbm (skipped)", 2)
        sizes.pop()
    out: dict = {"read": [], "copy": [], "pool_bytes": None, "l2_bytes": l2}
    if not sizes:
        return out
    out["pool_bytes"] = max(L2_FLUSH_FACTOR * l2, sizes[-1])
    _sweep(ctx, sizes, out)  # the pools are freed when it returns
    be.release()
    return out


def _sweep(ctx: Context, sizes: list[int], out: dict) -> None:
    be, pool_bytes = ctx.backend, out["pool_bytes"]
    src = be.random_bytes(pool_bytes, ctx.seed)
    dst = be.random_bytes(pool_bytes, ctx.seed + 1)
    for size in sizes:
        n_sets = max(1, pool_bytes // size)

        def read(i, size=size, n_sets=n_sets):
            j = i % n_sets
            be.read(src[j * size:(j + 1) * size])

        def copy(i, size=size, n_sets=n_sets):
            j, k = i % n_sets, (i + 1) % n_sets
            be.copy(dst[j * size:(j + 1) * size], src[k * size:(k + 1) * size])

        label = f"hbm read {size} B"
        if not ctx.out_of_time(label):
            t = ctx.time_point(read, n_sets)
            out["read"].append({"size_bytes": size, "bytes_moved": size, **t.as_dict(),
                                "bytes_per_s": size / t.median_s, "rotating_sets": n_sets})
            ctx.done(label)
        label = f"hbm copy {size} B"
        if not ctx.out_of_time(label):
            t = ctx.time_point(copy, n_sets)
            out["copy"].append({"size_bytes": size, "bytes_moved": 2 * size, **t.as_dict(),
                                "bytes_per_s": 2 * size / t.median_s, "copy_bytes_per_s": size / t.median_s,
                                "rotating_sets": n_sets})
            ctx.done(label)
