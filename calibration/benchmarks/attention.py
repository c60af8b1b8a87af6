"""Decode attention through a fused kernel that reads a paged KV cache.

For a batch of B sequences of L cached tokens, one decode step of one layer must read
    kv_bytes = 2 (K and V) x B x kv_heads x L x head_dim x 2 bytes (bf16)
and does little arithmetic per byte (grouped-query attention: q_heads / kv_heads multiply-adds per
cached element for the scores and as many for the output), so its time is the time to stream the
cache. Effective bandwidth = kv_bytes / time; over the datasheet HBM bandwidth it is the fraction
sim applies to KV bytes.

The kernel (paged_attention_kernel.py on a GPU; a float64 NumPy reference on the CPU backend) is
what engines run: one pass over K and V through a block table of 16-token pages, an online
softmax, split-KV with a small merge kernel. Pages are scattered: each sequence's blocks are a
random draw from a pool of at least 4 x L2, and successive calls use different draws (rotating
sets), so neither the L2 nor page adjacency flatters the figure. Before any timing, the kernel's
output is compared with a float64 reference on a small case; a kernel that fails that check is
not timed and the profile says so.

Measured on the attention models of the plan (default: the model whose shape the profile is for,
Qwen3-8B: 8 KV heads, 4 query heads per KV head, head_dim 128; and a group-of-8 cross-check).
Each point's time includes both kernels (split and merge).

MLA (DeepSeek-V3's latent cache, plan.attention_mla_models): paged_mla_kernel.py, absorbed decode,
heads per GPU = q heads / plan.mla_tp (16 on 8 GPUs), one shared latent row of kv_lora_rank +
qk_rope_head_dim bf16 elements per token:
    kv_bytes = B x L x (kv_lora_rank + qk_rope_head_dim) x 2
checked against reference_paged_mla_decode (float64) before timing, timed on the same grid, fitted
to mla_attention_kv_efficiency. Each MLA point also records its FLOP rate (2 x heads x (latent +
kv_lora_rank) per token), because that kernel can be compute-limited.
A failure in one layout (compile, launch, check) is recorded in its section and the others run.
"""

from __future__ import annotations

import numpy as np

from ..backend import reference_paged_decode_attention, reference_paged_mla_decode
from ..paged_attention_kernel import BLOCK_TOKENS
from ..timing import L2_FLUSH_FACTOR
from . import Context

BF16_BYTES = 2
CHECK_TOLERANCE = 2e-2  # max |out - ref| / max |ref|: bf16 inputs and output, fp32 accumulation


def _layout_units(plan) -> int:
    return len(plan.attention_batches) * len(plan.attention_contexts) + 1


def units(plan, models) -> int:
    return len(plan.attention_models) * _layout_units(plan)


def _random_table(lens: list[int], seed: int) -> tuple[np.ndarray, int]:
    """A block table for sequences of `lens` tokens over a shuffled pool, and the pool's size."""
    blocks_per_seq = [-(-n // BLOCK_TOKENS) for n in lens]
    n_blocks = sum(blocks_per_seq) + 3
    perm = np.random.default_rng(seed).permutation(n_blocks)
    table = np.zeros((len(lens), max(blocks_per_seq)), dtype=np.int32)
    used = 0
    for i, nb in enumerate(blocks_per_seq):
        table[i, :nb] = perm[used:used + nb]
        used += nb
    return table, n_blocks


def _rel_err(got, ref) -> tuple[float, bool]:
    with np.errstate(invalid="ignore", over="ignore"):  # an unwritten output may hold NaN or inf
        err = float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-30))
    return err, bool(np.isfinite(got).all() and err <= CHECK_TOLERANCE)


def _check(ctx: Context, model, seed: int) -> dict:
    """Run the kernel on a small ragged batch and compare with the float64 reference."""
    be = ctx.backend
    hkv, d = model.num_key_value_heads, model.head_dim
    hq = model.num_attention_heads
    lens = [1, 17, 300, 1029]
    table, n_blocks = _random_table(lens, seed)
    k, v = be.paged_kv_cache(n_blocks, BLOCK_TOKENS, hkv, d, seed)
    q = be.random((len(lens), hq, d), "bf16", seed + 7)
    out = be.empty((len(lens), hq, d), "bf16")
    be.paged_decode_attention(q, k, v, be.int_array(table), be.int_array(lens), out, max(lens))
    be.synchronize()
    ref = reference_paged_decode_attention(be.to_host(q), be.to_host(k), be.to_host(v), table, lens)
    err, ok = _rel_err(be.to_host(out), ref)
    return {"seq_lens": lens, "max_rel_err": err, "tolerance": CHECK_TOLERANCE, "passed": ok}


def mla_heads(model, plan) -> int:
    """Query heads per GPU of the MLA layout: DeepSeek-V3's 128 over plan.mla_tp = 8 GPUs -> 16."""
    return max(1, model.num_attention_heads // plan.mla_tp)


def mla_scale(model) -> float:
    """The softmax scale of MLA: 1 / sqrt(qk_nope_head_dim + qk_rope_head_dim) (1/sqrt(192) for V3)."""
    return 1.0 / float(model.qk_nope_head_dim + model.qk_rope_head_dim) ** 0.5


def _check_mla(ctx: Context, model, heads: int, seed: int) -> dict:
    """The MLA kernel on a small ragged batch against the float64 reference."""
    be = ctx.backend
    latent, lora = model.kv_lora_rank + model.qk_rope_head_dim, model.kv_lora_rank
    lens = [1, 17, 300, 1029]
    table, n_blocks = _random_table(lens, seed)
    cache = be.paged_mla_cache(n_blocks, BLOCK_TOKENS, latent, seed)
    q = be.random((len(lens), heads, latent), "bf16", seed + 7)
    out = be.empty((len(lens), heads, lora), "bf16")
    be.paged_mla_decode(q, cache, be.int_array(table), be.int_array(lens), out, max(lens), lora, mla_scale(model))
    be.synchronize()
    ref = reference_paged_mla_decode(be.to_host(q), be.to_host(cache), table, lens, lora, mla_scale(model))
    err, ok = _rel_err(be.to_host(out), ref)
    return {"seq_lens": lens, "max_rel_err": err, "tolerance": CHECK_TOLERANCE, "passed": ok}


def run(ctx: Context, models) -> dict:
    return run_layouts(ctx, models, [(m, _run_layout) for m in ctx.plan.attention_models])


def run_mla(ctx: Context, models) -> dict:
    """The MLA layouts (its own benchmark, run after the GEMM sweeps: a new kernel that faulted
    would leave the CUDA context unusable for everything after it)."""
    return run_layouts(ctx, models, [(m, _run_mla_layout) for m in ctx.plan.attention_mla_models])


def run_layouts(ctx: Context, models, jobs) -> dict:
    out: dict = {"kernel": "paged split-KV decode (calibration/paged_attention_kernel.py, paged_mla_kernel.py)"
                 if ctx.backend.is_gpu else "NumPy float64 reference (CPU pipeline check)",
                 "block_tokens": BLOCK_TOKENS, "dtype": "bf16", "layouts": []}
    from ..catalog import load_models

    catalog = {m.id.split("/")[0]: m for m in models}
    for model_id, runner in jobs:
        model = catalog.get(model_id)
        if model is None:
            full = load_models().get(model_id)
            if full is None:
                ctx.skipped.append(f"attention {model_id}: not in sim/data/models")
                ctx.done(f"attention {model_id} (skipped)", _layout_units(ctx.plan))
                continue
            model = full.scaled_down(ctx.plan.width_divisor) if ctx.plan.width_divisor > 1 else full
        left = ctx.units_left
        try:
            out["layouts"].append(runner(ctx, model))
        except Exception as exc:  # one layout's failure must not lose the others (nor the suite)
            error = f"{type(exc).__name__}: {exc}"
            ctx.log(f"  attention {model.id}: FAILED: {error}")
            out["layouts"].append({"model": model.id, "layout": "mla" if runner is _run_mla_layout else "gqa",
                                   "error": error, "check": {"passed": False, "error": error}, "points": []})
            ctx.done(f"attention {model.id} (failed)", max(0, _layout_units(ctx.plan) - (left - ctx.units_left)))
            ctx.backend.release()
    return out


def _run_layout(ctx: Context, model) -> dict:
    be, plan = ctx.backend, ctx.plan
    hkv, d, hq = model.num_key_value_heads, model.head_dim, model.num_attention_heads
    layout = {"model": model.id, "layout": "gqa", "kv_heads": hkv, "q_heads": hq, "q_heads_per_kv_head": hq // hkv,
              "head_dim": d, "points": []}
    n_grid = len(plan.attention_batches) * len(plan.attention_contexts)
    if model.mla:
        layout["skipped"] = "MLA latent cache: not measured yet"
        ctx.done(f"attention {model.id} (skipped)", n_grid + 1)
        return layout
    versions = ("v2", "v1") if hasattr(be, "attention_kernel") else (None,)
    layout["check"] = {"passed": False, "error": "not run"}
    for version in versions:  # the GPU kernel: version 2, else the slower version 1, and say which
        if version is not None:
            be.attention_kernel = version
        try:
            check = _check(ctx, model, ctx.seed + 500)
        except Exception as exc:  # a compile or launch error: say so, measure nothing with this kernel
            check = {"passed": False, "error": f"{type(exc).__name__}: {exc}"}
        if version is not None:
            check["kernel_version"] = version
            layout.setdefault("checks", []).append(check)
        layout["check"] = check
        if check["passed"]:
            break
        ctx.log(f"  attention {model.id}: kernel {version} FAILED its correctness check: {check}")
    ctx.done(f"attention {model.id} check")
    if not layout["check"]["passed"]:
        ctx.done(f"attention {model.id} (not timed)", n_grid)
        return layout
    token_bytes = 2 * hkv * d * BF16_BYTES  # K and V of one token, one layer
    for b, ctx_len, kv_bytes, pool_bytes in _grid(ctx, plan, be, f"attention {model.id}", token_bytes):
        layout["points"].append(_point(ctx, b, ctx_len, hkv, hq, d, kv_bytes, pool_bytes, token_bytes))
    return layout


def _grid(ctx, plan, be, what: str, token_bytes: int):
    """(batch, context, cache bytes, pool bytes) of each attention point to time, in the plan's order;
    a point over the plan's cache cap, out of time or out of memory is logged as skipped. After each
    point the caller timed, its buffers are released and its progress counted."""
    l2 = be.l2_bytes()
    for b in plan.attention_batches:
        for ctx_len in plan.attention_contexts:
            label = f"{what} B={b} L={ctx_len}"
            kv_bytes = b * ctx_len * token_bytes
            if kv_bytes > plan.attention_max_kv_bytes:
                ctx.skipped.append(f"{label}: cache of {kv_bytes / 2**30:.2f} GiB exceeds the plan's cap")
                ctx.done(label + " (skipped)")
                continue
            if ctx.out_of_time(label):
                continue
            pool_bytes = max(kv_bytes, L2_FLUSH_FACTOR * l2)
            if not ctx.fits_in_memory(label, pool_bytes):
                ctx.done(label + " (skipped)")
                continue
            yield b, ctx_len, kv_bytes, pool_bytes  # the caller times the point
            be.release()
            ctx.done(label)


def _point(ctx, b, ctx_len, hkv, hq, d, kv_bytes, pool_bytes, token_bytes) -> dict:
    be = ctx.backend
    blocks_per_seq = -(-ctx_len // BLOCK_TOKENS)
    need = b * blocks_per_seq
    pool_blocks = max(need, -(-pool_bytes // (BLOCK_TOKENS * token_bytes)))
    n_sets = max(1, min(16, pool_blocks // need))
    rng = np.random.default_rng(ctx.seed + b * 7919 + ctx_len)
    perm = rng.permutation(pool_blocks).astype(np.int32)
    tables = [be.int_array(perm[j * need:(j + 1) * need].reshape(b, blocks_per_seq)) for j in range(n_sets)]
    k, v = be.paged_kv_cache(pool_blocks, BLOCK_TOKENS, hkv, d, ctx.seed + 11)
    qs = [be.random((b, hq, d), "bf16", ctx.seed + 40 + j) for j in range(n_sets)]
    lens = be.int_array(np.full(b, ctx_len, dtype=np.int32))
    o = be.empty((b, hq, d), "bf16")

    def call(i):
        j = i % n_sets
        be.paged_decode_attention(qs[j], k, v, tables[j], lens, o, ctx_len)

    t = ctx.time_point(call, n_sets)
    return {"batch": b, "context_tokens": ctx_len, "kv_bytes": kv_bytes, **t.as_dict(),
            "bytes_per_s": kv_bytes / t.median_s, "rotating_sets": n_sets, "pool_blocks": int(pool_blocks)}


def _run_mla_layout(ctx: Context, model) -> dict:
    be, plan = ctx.backend, ctx.plan
    heads = mla_heads(model, plan)
    latent, lora = model.kv_lora_rank + model.qk_rope_head_dim, model.kv_lora_rank
    layout = {"model": model.id, "layout": "mla", "q_heads": heads, "q_heads_total": model.num_attention_heads,
              "tp": plan.mla_tp, "kv_lora_rank": lora, "qk_rope_head_dim": model.qk_rope_head_dim,
              "latent_dim": latent, "softmax_scale": mla_scale(model), "points": [],
              "kernel": "paged MLA absorbed decode (calibration/paged_mla_kernel.py)" if be.is_gpu
              else "NumPy float64 reference (CPU pipeline check)"}
    n_grid = len(plan.attention_batches) * len(plan.attention_contexts)
    if not model.mla:
        layout["skipped"] = "not an MLA model"
        ctx.done(f"attention {model.id} (skipped)", n_grid + 1)
        return layout
    try:
        layout["check"] = _check_mla(ctx, model, heads, ctx.seed + 600)
    except Exception as exc:  # compile or launch error: measure nothing with this kernel
        layout["check"] = {"passed": False, "error": f"{type(exc).__name__}: {exc}"}
    ctx.done(f"attention {model.id} MLA check")
    if not layout["check"]["passed"]:
        ctx.log(f"  attention {model.id} (MLA): kernel FAILED its correctness check: {layout['check']}")
        ctx.done(f"attention {model.id} MLA (not timed)", n_grid)
        return layout
    token_bytes = latent * BF16_BYTES  # one shared latent row per token and layer
    flops_per_token = 2.0 * heads * (latent + lora)  # scores over the latent row, output over its first lora elements
    for b, ctx_len, kv_bytes, pool_bytes in _grid(ctx, plan, be, f"attention {model.id} MLA", token_bytes):
        point = _mla_point(ctx, model, b, ctx_len, heads, kv_bytes, pool_bytes, token_bytes)
        point["flops"] = flops_per_token * b * ctx_len
        point["flops_per_s"] = point["flops"] / point["time_s"]
        layout["points"].append(point)
    return layout


def _mla_point(ctx, model, b, ctx_len, heads, kv_bytes, pool_bytes, token_bytes) -> dict:
    be = ctx.backend
    latent, lora = model.kv_lora_rank + model.qk_rope_head_dim, model.kv_lora_rank
    blocks_per_seq = -(-ctx_len // BLOCK_TOKENS)
    need = b * blocks_per_seq
    pool_blocks = max(need, -(-pool_bytes // (BLOCK_TOKENS * token_bytes)))
    n_sets = max(1, min(16, pool_blocks // need))
    rng = np.random.default_rng(ctx.seed + b * 7919 + ctx_len + 1)
    perm = rng.permutation(pool_blocks).astype(np.int32)
    tables = [be.int_array(perm[j * need:(j + 1) * need].reshape(b, blocks_per_seq)) for j in range(n_sets)]
    cache = be.paged_mla_cache(pool_blocks, BLOCK_TOKENS, latent, ctx.seed + 13)
    qs = [be.random((b, heads, latent), "bf16", ctx.seed + 70 + j) for j in range(n_sets)]
    lens = be.int_array(np.full(b, ctx_len, dtype=np.int32))
    o = be.empty((b, heads, lora), "bf16")
    scale = mla_scale(model)

    def call(i):
        j = i % n_sets
        be.paged_mla_decode(qs[j], cache, tables[j], lens, o, ctx_len, lora, scale)

    t = ctx.time_point(call, n_sets)
    return {"batch": b, "context_tokens": ctx_len, "kv_bytes": kv_bytes, **t.as_dict(),
            "bytes_per_s": kv_bytes / t.median_s, "rotating_sets": n_sets, "pool_blocks": int(pool_blocks)}
