"""The KV formula of a model with its numbers filled in, for display (the KV formula view)."""

from __future__ import annotations

from .architecture import Architecture


def bytes_per_token_formula(arch: Architecture, dtype_bytes: float, tp: int = 1, attention_dp: int = 1, pp: int = 1) -> str:
    """The KV formula with this model's numbers filled in, for display (one rank of the fullest
    pipeline stage)."""
    total = arch.kv_bytes_per_token(dtype_bytes, tp, attention_dp, pp)
    stage = -(-arch.num_layers // pp)
    layers = f"{stage} of {arch.num_layers} layers" if pp > 1 else f"{arch.num_layers} layers"
    shared = f" / {attention_dp} attention groups" if attention_dp > 1 else ""
    if arch.indexer is not None:  # DSA: the latent (FP8: vLLM's 656-byte layout) and the indexer's key
        latent = arch.kv_bytes_per_token_per_layer(dtype_bytes) - arch.indexer.key_bytes
        return (f"{layers} x ({latent:,.0f} B latent + {arch.indexer.key_bytes} B indexer key){shared} = {total:,.0f} B; "
                f"a query reads at most {arch.indexer.topk:,} latents")
    if arch.mla is not None:
        m = arch.mla
        return (f"{layers} x ({m.kv_lora_rank} latent + {m.qk_rope_head_dim} rope) x "
                f"{dtype_bytes:g} B{shared} = {total:,.0f} B")
    heads = arch.kv_heads_per_rank(tp // attention_dp)
    if arch.linear is not None:
        on_stage = f" x {stage}/{arch.num_layers} (this stage's share)" if pp > 1 else ""
        return (f"2 x {arch.kv_layers} attention layers (of {arch.num_layers}) x {heads} kv_heads x {arch.head_dim} head_dim x "
                f"{dtype_bytes:g} B{shared}{on_stage} = {total:,.0f} B")
    return (f"2 x {layers} x {heads} kv_heads x {arch.head_dim} head_dim x "
            f"{dtype_bytes:g} B{shared} = {total:,.0f} B")
