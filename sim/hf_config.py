"""Parsing a Hugging Face `config.json` into an Architecture: every field checked, a bad one
named in an InputError (never a traceback), sizes bounded so the arithmetic stays meaningful."""

from __future__ import annotations

import math

from .architecture import MLA, Architecture, LinearAttention, Mamba1, Mamba2, MoE, SparseIndexer
from .errors import InputError, Issue

# model_type values whose MLP is up and down only, with no gate (Nemotron-H's ReLU^2 MLP: vLLM's
# NemotronHMLP has up_proj and down_proj).
_UNGATED_MLP_TYPES = {"nemotron_h"}
# Nemotron-H's hybrid_override_pattern: one character per layer (vLLM's ALL_DECODER_LAYER_TYPES).
_NEMOTRON_BLOCKS = {"M": "Mamba-2", "*": "attention", "-": "MLP"}

# Largest accepted value of any size field: guards against pasted configs that would make the
# arithmetic meaningless (and keeps the property tests honest about their domain).
_MAX_DIM = 2**24


def _int_field(cfg: dict, key: str, *, default=None, minimum: int = 1, maximum: int = _MAX_DIM) -> int:
    value = cfg.get(key, default)
    if value is None:
        raise InputError(Issue(key, "is missing from config.json"))
    # json.loads accepts Infinity and NaN, and Python ints are unbounded: reject both before int().
    finite = isinstance(value, int) or isinstance(value, float) and math.isfinite(value)
    if isinstance(value, bool) or not finite or value != int(value):
        raise InputError(Issue(key, f"must be an integer between {minimum} and {maximum}, got {str(value)[:40]!r}"))
    value = int(value)
    if not minimum <= value <= maximum:
        raise InputError(Issue(key, f"must be between {minimum} and {maximum}, got {str(value)[:20]}"))
    return value


def _bool_field(cfg: dict, key: str) -> bool:
    value = cfg.get(key, False)
    if not isinstance(value, bool):  # bool("false") would be True
        raise InputError(Issue(key, f"must be true or false, got {str(value)[:40]!r}"))
    return value


def _first_present(cfg: dict, *keys: str):
    for k in keys:
        if cfg.get(k) is not None:
            return k
    return None


def _moe_layer_mask(cfg: dict, num_layers: int) -> tuple[bool, ...]:
    if cfg.get("n_routed_experts"):  # DeepSeek
        first_dense = _int_field(cfg, "first_k_dense_replace", default=0, minimum=0)
        freq = _int_field(cfg, "moe_layer_freq", default=1)
        return tuple(i >= first_dense and i % freq == 0 for i in range(num_layers))
    if cfg.get("num_local_experts"):  # Mixtral: every layer
        return (True,) * num_layers
    if cfg.get("expert_layer_period") is not None:  # Jamba: layer i is MoE when i % period == offset
        period = _int_field(cfg, "expert_layer_period", maximum=num_layers)
        offset = _int_field(cfg, "expert_layer_offset", default=0, minimum=0, maximum=period - 1)
        return tuple(i % period == offset for i in range(num_layers))
    only_dense = cfg.get("mlp_only_layers") or []
    if not isinstance(only_dense, list):
        raise InputError(Issue("mlp_only_layers", "must be a list of layer indices"))
    step = _int_field(cfg, "decoder_sparse_step", default=1)
    return tuple(i not in only_dense and (i + 1) % step == 0 for i in range(num_layers))


def _parse_moe(cfg: dict, hidden: int, num_layers: int):
    key = _first_present(cfg, "n_routed_experts", "num_local_experts", "num_experts")
    if key is None or not cfg.get(key):
        return None, ()
    num_experts = _int_field(cfg, key, maximum=4096)
    k = _int_field(cfg, "num_experts_per_tok", maximum=num_experts)
    width_key = "moe_intermediate_size" if cfg.get("moe_intermediate_size") else "intermediate_size"
    width = _int_field(cfg, width_key)
    shared = 0
    gate = False
    if cfg.get("n_shared_experts"):
        shared = _int_field(cfg, "n_shared_experts", maximum=64) * width
    elif cfg.get("shared_expert_intermediate_size"):
        shared = _int_field(cfg, "shared_expert_intermediate_size")
        gate = True
    moe = MoE(num_experts, k, width, shared, gate)
    return moe, _moe_layer_mask(cfg, num_layers)


def _parse_mla(cfg: dict):
    if not cfg.get("kv_lora_rank"):
        return None
    return MLA(
        kv_lora_rank=_int_field(cfg, "kv_lora_rank"),
        q_lora_rank=_int_field(cfg, "q_lora_rank", default=0, minimum=0),
        qk_rope_head_dim=_int_field(cfg, "qk_rope_head_dim"),
        qk_nope_head_dim=_int_field(cfg, "qk_nope_head_dim"),
        v_head_dim=_int_field(cfg, "v_head_dim"),
    )


def _parse_linear(cfg: dict, num_layers: int) -> tuple[LinearAttention | None, tuple[bool, ...]]:
    """Qwen3-Next's Gated DeltaNet layers: which layers they are (`layer_types`, or every layer but
    each full_attention_interval-th, as transformers' Qwen3NextConfig builds the list) and their
    shapes. None for a model without linear attention."""
    layer_types = cfg.get("layer_types")
    if isinstance(layer_types, list) and len(layer_types) == num_layers and "linear_attention" in layer_types:
        mask = tuple(t == "linear_attention" for t in layer_types)
    elif cfg.get("full_attention_interval") is not None and cfg.get("linear_num_value_heads") is not None:
        interval = _int_field(cfg, "full_attention_interval", maximum=num_layers)
        mask = tuple((i + 1) % interval != 0 for i in range(num_layers))
    else:
        return None, ()
    if all(mask):
        raise InputError(Issue("layer_types", "leaves no full-attention layer; kvlab models hybrids with at least one"))
    linear = LinearAttention(
        num_k_heads=_int_field(cfg, "linear_num_key_heads", maximum=4096),
        num_v_heads=_int_field(cfg, "linear_num_value_heads", maximum=4096),
        head_k_dim=_int_field(cfg, "linear_key_head_dim", maximum=4096),
        head_v_dim=_int_field(cfg, "linear_value_head_dim", maximum=4096),
        conv_kernel_tokens=_int_field(cfg, "linear_conv_kernel_dim", minimum=2, maximum=64),
    )
    if linear.num_v_heads % linear.num_k_heads:
        raise InputError(Issue("linear_num_value_heads", f"must be a multiple of linear_num_key_heads ({linear.num_k_heads}); "
                                                         f"got {linear.num_v_heads}"))
    return linear, mask


def _parse_mamba(cfg: dict, num_layers: int):
    """Nemotron-H: which layers are Mamba-2 ("M"), attention ("*") or MLP ("-") blocks, read from
    hybrid_override_pattern, and the Mamba-2 shapes. (None, masks of ()) for other models."""
    pattern = cfg.get("hybrid_override_pattern")
    if pattern is None:
        return None, (), (), ()
    if not isinstance(pattern, str) or len(pattern) != num_layers:
        raise InputError(Issue("hybrid_override_pattern", f"must be a string of one character per layer ({num_layers}), "
                                                          f"got {str(pattern)[:40]!r}"))
    unknown = sorted(set(pattern) - set(_NEMOTRON_BLOCKS))
    if unknown:
        known = ", ".join(f"{k!r} ({v})" for k, v in _NEMOTRON_BLOCKS.items())
        raise InputError(Issue("hybrid_override_pattern", f"may hold {known}; got {unknown[0]!r}"
                                                          + (" (MoE blocks are not modelled)" if unknown[0] == "E" else "")))
    if "*" not in pattern:
        raise InputError(Issue("hybrid_override_pattern", "has no attention layer ('*'); kvlab models hybrids with at least one"))
    mamba = Mamba2(
        num_heads=_int_field(cfg, "mamba_num_heads", maximum=4096),
        head_dim=_int_field(cfg, "mamba_head_dim", maximum=4096),
        n_groups=_int_field(cfg, "n_groups", maximum=4096),
        state_size=_int_field(cfg, "ssm_state_size", maximum=4096),
        conv_kernel_tokens=_int_field(cfg, "conv_kernel", minimum=2, maximum=64),
        conv_bias=cfg.get("use_conv_bias", True) is not False,
        proj_bias=_bool_field(cfg, "use_bias"),
    )
    if mamba.num_heads % mamba.n_groups:
        raise InputError(Issue("n_groups", f"must divide mamba_num_heads ({mamba.num_heads}); got {mamba.n_groups}"))
    return (mamba, tuple(c == "M" for c in pattern), tuple(c != "-" for c in pattern),
            tuple(c == "-" for c in pattern))


def _parse_jamba(cfg: dict, num_layers: int, hidden: int):
    """Jamba: layer i is attention when i % attn_layer_period == attn_layer_offset, Mamba otherwise
    (transformers' JambaConfig.layers_block_type); every layer also has an MLP. (None, ()) without
    attn_layer_period."""
    if cfg.get("attn_layer_period") is None:
        return None, ()
    period = _int_field(cfg, "attn_layer_period", maximum=num_layers)
    offset = _int_field(cfg, "attn_layer_offset", default=0, minimum=0, maximum=period - 1)
    mask = tuple(i % period != offset for i in range(num_layers))
    if all(mask):
        raise InputError(Issue("attn_layer_offset", f"leaves no attention layer in {num_layers}; kvlab models hybrids with at least one"))
    expand = _int_field(cfg, "mamba_expand", default=2, maximum=64)
    mamba = Mamba1(intermediate=expand * hidden,
                   state_size=_int_field(cfg, "mamba_d_state", default=16, maximum=4096),
                   conv_kernel_tokens=_int_field(cfg, "mamba_d_conv", default=4, minimum=2, maximum=64),
                   dt_rank=_int_field(cfg, "mamba_dt_rank", default=-(-hidden // 16), maximum=_MAX_DIM),
                   conv_bias=cfg.get("mamba_conv_bias", True) is not False,
                   proj_bias=_bool_field(cfg, "mamba_proj_bias"))
    return mamba, mask


def _parse_indexer(cfg: dict, mla: MLA | None) -> SparseIndexer | None:
    """DeepSeek-V3.2's lightning indexer (index_topk, index_head_dim, index_n_heads); None without."""
    if cfg.get("index_topk") is None:
        return None
    if mla is None or not mla.q_lora_rank:
        raise InputError(Issue("index_topk", "needs multi-head latent attention with a query latent (kv_lora_rank, q_lora_rank)"))
    return SparseIndexer(n_heads=_int_field(cfg, "index_n_heads", maximum=4096),
                         head_dim=_int_field(cfg, "index_head_dim", maximum=4096),
                         topk=_int_field(cfg, "index_topk", maximum=2**26))


def _sliding_mask(cfg: dict, meta: dict, num_layers: int) -> tuple[int, tuple[bool, ...]]:
    window = cfg.get("sliding_window")
    layer_types = cfg.get("layer_types")
    if layer_types is not None and not isinstance(layer_types, list):
        raise InputError(Issue("layer_types", "must be a list with one attention type per layer"))
    if layer_types:
        if len(layer_types) != num_layers:
            raise InputError(Issue("layer_types", f"has {len(layer_types)} entries but num_hidden_layers is {num_layers}"))
        mask = tuple(t == "sliding_attention" for t in layer_types)
    elif cfg.get("use_sliding_window") is False:
        return 0, ()
    else:
        pattern_source = cfg if cfg.get("sliding_window_pattern") is not None else meta
        if pattern_source.get("sliding_window_pattern"):
            p = _int_field(pattern_source, "sliding_window_pattern", maximum=1024)
            # Gemma: every p-th layer (1-based) is global, the rest are windowed.
            mask = tuple((i + 1) % p != 0 for i in range(num_layers))
        else:
            mask = (True,) * num_layers  # Mistral v0.1 style: every layer windowed
    if not window or not any(mask):
        return 0, ()
    return _int_field(cfg, "sliding_window"), mask


def from_config(cfg: dict, name: str = "custom", meta: dict | None = None) -> Architecture:
    """Build an Architecture from a config.json dict; raises InputError naming the bad field."""
    if not isinstance(cfg, dict):
        raise InputError(Issue("config", "must be a JSON object (the contents of config.json)"))
    meta = meta or {}
    if isinstance(cfg.get("text_config"), dict):  # multimodal wrappers (Gemma-3): the LM is inside
        cfg = {**cfg, **cfg["text_config"]}
    model_type = str(cfg.get("model_type", "unknown"))[:40]
    num_layers = _int_field(cfg, "num_hidden_layers", maximum=1024)
    hidden = _int_field(cfg, "hidden_size")
    q_heads = _int_field(cfg, "num_attention_heads", maximum=4096)
    kv_heads = _int_field(cfg, "num_key_value_heads", default=q_heads, maximum=4096)
    if kv_heads > q_heads or q_heads % kv_heads:
        raise InputError(Issue("num_key_value_heads", f"must divide num_attention_heads ({q_heads}); got {kv_heads}"))
    if cfg.get("head_dim") is not None:
        head_dim = _int_field(cfg, "head_dim", maximum=4096)
    else:
        if hidden % q_heads:
            raise InputError(Issue("head_dim", f"is absent and hidden_size ({hidden}) is not divisible by num_attention_heads ({q_heads})"))
        head_dim = hidden // q_heads
    mla = _parse_mla(cfg)
    moe, moe_layers = _parse_moe(cfg, hidden, num_layers)
    dense_needed = moe is None or not all(moe_layers)
    # All-MoE models (Qwen3-MoE) carry an unused intermediate_size; check it anyway, 0 if absent.
    intermediate = _int_field(cfg, "intermediate_size") if dense_needed else _int_field(cfg, "intermediate_size", default=0, minimum=0)
    window, sliding = _sliding_mask(cfg, meta, num_layers)
    linear, linear_layers = _parse_linear(cfg, num_layers)
    mixer_layers = mlp_layers = ()
    if linear is None:
        linear, linear_layers, mixer_layers, mlp_layers = _parse_mamba(cfg, num_layers)
    if linear is None:
        linear, linear_layers = _parse_jamba(cfg, num_layers, hidden)
    return Architecture(
        name=str(name)[:80],
        model_type=model_type,
        num_layers=num_layers,
        hidden_size=hidden,
        num_q_heads=q_heads,
        num_kv_heads=1 if mla else kv_heads,
        head_dim=head_dim,
        intermediate_size=intermediate,
        vocab_size=_int_field(cfg, "vocab_size"),
        tie_embeddings=_bool_field(cfg, "tie_word_embeddings"),
        max_position_embeddings=_int_field(cfg, "max_position_embeddings", default=131072, maximum=2**26),
        moe=moe,
        moe_layers=moe_layers,
        mla=mla,
        sliding_window_tokens=window,
        sliding_layers=sliding,
        linear=linear,
        linear_layers=linear_layers,
        mixer_layers=mixer_layers,
        mlp_layers=mlp_layers,
        gated_mlp=model_type not in _UNGATED_MLP_TYPES,
        indexer=_parse_indexer(cfg, mla),
    )
