"""What each GPU of a tensor-parallel group holds, under the scenario's attention data parallelism
and expert parallelism: one structured answer (Result.rank_holds) and the sentence the log prints.

The rules themselves live where they are used (Architecture.per_rank and kv_bytes_per_token for
the bytes, Machine for the step); this module only states them per GPU for people and views.
"""

from __future__ import annotations

from .architecture import Architecture
from .scenario import Scenario


def rank_holds(arch: Architecture, s: Scenario) -> dict:
    """{gpus, pipeline_stages, layers, layers_total, attention_groups, gpus_per_attention_group,
    attention_heads, attention_heads_total, request_share, kv_replicated, experts, experts_total,
    expert_share, expert_parallel}: what one of the tp x pp GPUs holds (of the fullest pipeline
    stage). experts is whole experts with expert parallelism, else every expert as a slice of
    expert_share, in each of its layers; None for a dense model."""
    group = s.tp // s.attention_dp
    experts_total = arch.moe.num_experts if arch.moe is not None else None
    ep = bool(s.expert_parallel and experts_total)
    return {
        "gpus": s.tp * s.pp,
        "pipeline_stages": s.pp,
        "layers": -(-arch.num_layers // s.pp),
        "layers_total": arch.num_layers,
        "attention_groups": s.attention_dp,
        "gpus_per_attention_group": group,
        "attention_heads": arch.num_q_heads // group,
        "attention_heads_total": arch.num_q_heads,
        "request_share": 1 / s.attention_dp,
        # MLA's latent cannot be split by heads: every GPU of a group keeps all of it.
        "kv_replicated": arch.mla is not None and group > 1,
        "experts": (experts_total // s.tp if ep else experts_total) if experts_total else None,  # in each of its layers
        "experts_total": experts_total,
        "expert_share": (1.0 if ep else 1 / s.tp) if experts_total else None,
        "expert_parallel": ep,
    }


def rank_holds_line(h: dict) -> str:
    """The log's sentence for rank_holds (multi-GPU scenarios only)."""
    groups = h["attention_groups"]
    heads = f"{h['attention_heads']} of {h['attention_heads_total']} attention heads"
    if groups == 1:
        attention = f"{heads} for every request"
        cache = ("every request's whole latent cache (MLA's latent cannot be split by heads)" if h["kv_replicated"]
                 else "its heads' share of every request's cache")
    else:
        attention = (f"{heads} for the requests of its attention group ({groups} groups of "
                     f"{h['gpus_per_attention_group']} GPU{'s' if h['gpus_per_attention_group'] > 1 else ''}, "
                     f"1/{groups} of the requests each)")
        cache = (f"the cache of its group's requests only ({'all of the latent' if h['kv_replicated'] else 'its heads'})")
    stages = h["pipeline_stages"]
    layers = (f" ({stages} pipeline stages of {h['gpus'] // stages}, the fullest with {h['layers']} of the "
              f"{h['layers_total']} layers)") if stages > 1 else ""
    line = f"Each of the {h['gpus']} GPUs{layers} holds {attention}; {cache}"
    if h["experts"] is not None:
        line += (f"; {h['experts']} of the {h['experts_total']} experts whole (expert parallel)" if h["expert_parallel"]
                 else f"; a 1/{h['gpus'] // stages} slice of each of the {h['experts_total']} experts")
    return line + "."
