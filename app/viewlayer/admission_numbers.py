"""Panel 1's headline: how many sequences fit, and the batch the engine actually runs."""

from __future__ import annotations

from . import format as fmt
from . import html, readouts
from .palette import COLORS

LIMIT_CAPTIONS = {
    "concurrency": "all {c:,} requests run",
    "kv_pool": "the KV pool is full: {w:,} wait",
    "max_num_seqs": "capped by max_num_seqs",
}


def cost_tiles(r) -> list[str]:
    """The price of output tokens, shown wherever a price per GPU-hour is set: sim's
    served_dollars_per_million_tokens (all the GPUs' time, the prompts' prefills too), with the
    decode steps' share beside it, so the headline is never the decode-only figure."""
    s = readouts.scenario(r)
    price = s.get("dollars_per_gpu_hour")
    if price is None:
        return []
    ok = r is not None and r.ok and r.served_dollars_per_million_tokens is not None
    value = f"${r.served_dollars_per_million_tokens:,.2f}" if ok else fmt.DASH
    gpus = (r.rank_holds or {}).get("gpus", s["tp"]) if ok else s["tp"]  # sim bills tp x pp GPUs
    caption = (f"per million output tokens, prefills included, at ${price:g} per GPU-hour x {gpus} GPU(s); "
               f"the decode steps alone: ${r.decode_dollars_per_million_tokens:,.2f}; holding one sequence's cache: "
               f"${r.dollars_per_sequence_hour:,.3f} an hour" if ok
               else "nothing runs, so nothing is produced")
    return [html.tile("served_dollars_per_million_tokens", "Cost per million tokens", value, caption, COLORS["compute"])]


def view_admission_numbers(result) -> dict:
    r, s = result, readouts.scenario(result)
    ok = r is not None and r.ok
    seqs = r.max_sequences if ok else None
    batch = r.batch if ok else None
    if ok and r.batch > 0:
        limit = LIMIT_CAPTIONS[r.batch_limited_by].format(c=s["concurrency"], w=max(s["concurrency"] - r.batch, 0))
    elif ok:
        limit = "nothing fits"
    else:
        limit = ""
    seq_caption = f"of {fmt.tokens(s['prompt_tokens'] + s['output_tokens'])} tokens each" if ok else ""
    stop = readouts.refusal(r)
    if stop is not None:
        # Nothing runs: say why instead of a batch (and, past the context, a fit) that cannot happen.
        batch, limit = None, stop[0]
        if r.batch_limited_by == "context":
            seqs, seq_caption = None, stop[0]
    return {"pane": {"html": html.tiles(
        html.tile("max_sequences", "Sequences that fit", fmt.count(seqs), seq_caption, COLORS["kv_used"], hero=True),
        html.tile("batch", "Batch actually run", fmt.count(batch), limit, COLORS["decode"], hero=True),
        html.tile("kv_pool", "KV pool", fmt.gib(r.kv_pool_bytes) if ok else fmt.DASH,
                  f"{r.kv_pool_tokens:,} tokens" if ok else "", COLORS["kv_free"]),
        html.tile("kv_per_token", "KV cache per token", fmt.per_token_bytes(r.kv_bytes_per_token) if ok else fmt.DASH,
                  f"{r.kv_bytes_per_token:,.0f} bytes" if ok else "", COLORS["kv"]),
        *cost_tiles(r),
    )}}
