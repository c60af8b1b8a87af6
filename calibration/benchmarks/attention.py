"""Decode attention: the effective bandwidth of reading a KV cache for batched one-token queries.

For a batch of B sequences of L cached tokens, one decode step of one layer reads
    kv_bytes = 2 (K and V) x B x kv_heads x L x head_dim x bytes_per_element
and does little arithmetic per byte (grouped-query attention does q_heads / kv_heads multiply-adds
per cached element and matmul), so its time is the time to stream the cache. Effective bandwidth = kv_bytes / time; its
best value over the grid, divided by the datasheet HBM bandwidth, is kv_bandwidth_efficiency.

Method: two batched matmuls and a softmax in CuPy (fp16; bf16 has the same bytes), with K and V
laid out [B, kv_heads, L, head_dim] and used without transposing them, so each is read once:
    scores[B, Hkv, L, G] = K @ q^T;  softmax over L;  out[B, Hkv, G, D] = p^T @ V
This is not a fused, paged kernel (FlashAttention, FlashInfer): the softmax round trip and the
block tables are missing, so the figure is a plain-CuPy lower bound on what an engine reaches
with a contiguous cache. Grid points whose cache exceeds the plan's cap or free memory are skipped.
"""

from __future__ import annotations

import math

from ..timing import rotating_sets
from . import Context


def units(plan, models) -> int:
    return len(models[:1]) * len(plan.attention_batches) * len(plan.attention_contexts)


def _decode_attention(xp, q, k, v, scale):
    scores = xp.matmul(k, xp.swapaxes(q, -1, -2))  # [B, Hkv, L, G]
    scores *= scale
    scores -= scores.max(axis=-2, keepdims=True)
    probs = xp.exp(scores)
    probs /= probs.sum(axis=-2, keepdims=True)
    return xp.matmul(xp.swapaxes(probs, -1, -2), v)  # [B, Hkv, G, D]


def run(ctx: Context, models) -> dict:
    be, plan = ctx.backend, ctx.plan
    model = models[0]
    hkv, d = model.num_key_value_heads, model.head_dim
    group = max(1, model.num_attention_heads // hkv)
    dtype = "fp16"
    eb = be.dtype_bytes(dtype)
    scale = 1.0 / math.sqrt(d)
    out: dict = {"model": model.id, "kv_heads": hkv, "q_heads_per_kv_head": group, "head_dim": d,
                 "dtype": dtype, "element_bytes": eb, "points": []}
    l2 = be.l2_bytes()
    for b in plan.attention_batches:
        for ctx_len in plan.attention_contexts:
            label = f"attention B={b} L={ctx_len}"
            kv_bytes = 2 * b * hkv * ctx_len * d * eb
            if kv_bytes > plan.attention_max_kv_bytes:
                ctx.skipped.append(f"{label}: cache of {kv_bytes / 2**30:.2f} GiB exceeds the plan's cap")
                ctx.done(label + " (skipped)")
                continue
            if ctx.out_of_time(label):
                continue
            if not ctx.fits_in_memory(label, 2 * kv_bytes):
                ctx.done(label + " (skipped)")
                continue
            n_sets = rotating_sets(kv_bytes, l2, be.free_memory_bytes(), max_fraction_of_free=0.3)
            ks = [be.random((b, hkv, ctx_len, d), dtype, ctx.seed + 200 + j) for j in range(n_sets)]
            vs = [be.random((b, hkv, ctx_len, d), dtype, ctx.seed + 300 + j) for j in range(n_sets)]
            qs = [be.random((b, hkv, group, d), dtype, ctx.seed + 400 + j) for j in range(n_sets)]

            def call(i, ks=ks, vs=vs, qs=qs, n_sets=n_sets):
                j = i % n_sets
                _decode_attention(be.xp, qs[j], ks[j], vs[j], scale)

            t = ctx.time_point(call, n_sets)
            out["points"].append({"batch": b, "context_tokens": ctx_len, "kv_bytes": kv_bytes, **t.as_dict(),
                                  "bytes_per_s": kv_bytes / t.median_s, "rotating_sets": n_sets})
            del ks, vs, qs
            be.release()
            ctx.done(label)
    return out
