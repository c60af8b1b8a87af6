"""A transformer's shape, read from a Hugging Face `config.json`.

Everything kvlab knows about a model comes from this one frozen object: parameter counts are
derived from the shapes (never typed in), and the KV bytes per token follow from the attention
kind. Supported families: Llama / Qwen / Mistral (MHA, GQA, MQA), Gemma-2/3 (sliding-window
layers), DeepSeek V2/V3/R1 (multi-head latent attention) and mixture-of-experts models
(Mixtral, Qwen-MoE, DeepSeek).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property

from .errors import InputError, Issue

# model_type values whose attention block carries per-head RMSNorms on q and k (Qwen3).
_QK_NORM_TYPES = {"qwen3", "qwen3_moe", "gemma3", "gemma3_text"}
# model_type values with four RMSNorms per layer instead of two (pre/post attention and MLP).
_FOUR_NORM_TYPES = {"gemma2", "gemma3", "gemma3_text"}
# Largest accepted value of any size field: guards against pasted configs that would make the
# arithmetic meaningless (and keeps the property tests honest about their domain).
_MAX_DIM = 2**24


@dataclass(frozen=True)
class MoE:
    """Mixture-of-experts MLP: `num_experts` routed experts of width `expert_intermediate_size`,
    `experts_per_token` of them chosen per token, plus always-on shared experts."""

    num_experts: int
    experts_per_token: int
    expert_intermediate_size: int
    shared_intermediate_size: int  # total width of the shared expert(s); 0 if none
    shared_expert_gate: bool  # Qwen2-MoE scales the shared expert by a learned gate


@dataclass(frozen=True)
class MLA:
    """DeepSeek's multi-head latent attention: the cache holds one compressed latent of
    `kv_lora_rank` plus a shared rotary key of `qk_rope_head_dim` per layer per token."""

    kv_lora_rank: int
    q_lora_rank: int  # 0 means q is projected directly from the hidden state
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
class LayerKind:
    """One kind of decoder layer, and how many of the model's layers are of it.

    Every per-layer formula (KV bytes held and read, attention pairs, vLLM's blocks per request,
    the kernels of a step) sums over `Architecture.layer_kinds` instead of weighting full and
    sliding-window layers by hand: a Gemma-3 has two kinds (global and windowed), a DeepSeek-V3
    two (dense-MLP and MoE layers, both MLA), a Llama one.
    """

    count: int
    attention: str  # "full", "sliding" or "mla"
    window_tokens: int  # keys one query may attend to; 0 means the whole context
    mlp: str  # "dense" or "moe"

    def attended(self, context_tokens: float) -> float:
        """Cached tokens a layer of this kind keeps (and a decode query reads) at this context."""
        w = self.window_tokens
        return context_tokens if not w or context_tokens <= w else float(w)


@dataclass(frozen=True)
class Architecture:
    """The shapes of a decoder-only transformer, one instance per model configuration.

    Derived counts are cached_property: computed once per instance (the object is frozen, so
    they cannot go stale), because evaluate() asks for them several times per call.
    """

    name: str
    model_type: str
    num_layers: int
    hidden_size: int
    num_q_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int  # width of the dense MLP (layers that are not MoE)
    vocab_size: int
    tie_embeddings: bool
    max_position_embeddings: int
    moe: MoE | None = None
    moe_layers: tuple[bool, ...] = ()  # per layer: True where the MLP is the MoE block
    mla: MLA | None = None
    sliding_window_tokens: int = 0  # 0: no sliding window
    sliding_layers: tuple[bool, ...] = ()  # per layer: True where attention is windowed

    # ----- attention kind -------------------------------------------------------------
    @property
    def attention_kind(self) -> str:
        if self.mla is not None:
            return "MLA"
        if self.num_kv_heads == self.num_q_heads:
            return "MHA"
        if self.num_kv_heads == 1:
            return "MQA"
        return "GQA"

    # ----- parameter counts -----------------------------------------------------------
    def _attention_params(self) -> int:
        h = self.hidden_size
        if self.mla is not None:
            m = self.mla
            qk_dim = m.qk_nope_head_dim + m.qk_rope_head_dim
            if m.q_lora_rank:
                q = h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * self.num_q_heads * qk_dim
            else:
                q = h * self.num_q_heads * qk_dim
            kv_a = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank
            kv_b = m.kv_lora_rank * self.num_q_heads * (m.qk_nope_head_dim + m.v_head_dim)
            o = self.num_q_heads * m.v_head_dim * h
            return q + kv_a + kv_b + o
        d = self.head_dim
        q_and_o = 2 * h * self.num_q_heads * d
        k_and_v = 2 * h * self.num_kv_heads * d
        qk_norm = 2 * d if self.model_type in _QK_NORM_TYPES else 0
        return q_and_o + k_and_v + qk_norm

    def _norm_params_per_layer(self) -> int:
        return (4 if self.model_type in _FOUR_NORM_TYPES else 2) * self.hidden_size

    def _dense_mlp_params(self) -> int:
        return 3 * self.hidden_size * self.intermediate_size  # gate, up and down projections

    def _moe_params(self) -> tuple[int, int]:
        """(always-read params of one MoE layer, params of one routed expert)."""
        m = self.moe
        h = self.hidden_size
        router = h * m.num_experts
        shared = 3 * h * m.shared_intermediate_size + (h if m.shared_expert_gate else 0)
        return router + shared, 3 * h * m.expert_intermediate_size

    @cached_property
    def num_moe_layers(self) -> int:
        return sum(self.moe_layers)

    @cached_property
    def params_embedding(self) -> int:
        return self.vocab_size * self.hidden_size * (1 if self.tie_embeddings else 2)

    @cached_property
    def params_per_expert(self) -> int:
        return self._moe_params()[1] if self.moe else 0

    @cached_property
    def params_dense(self) -> int:
        """Parameters every token uses: everything except the routed experts."""
        per_layer = self._attention_params() + self._norm_params_per_layer()
        total = self.num_layers * per_layer + self.params_embedding + self.hidden_size
        dense_mlp_layers = self.num_layers - self.num_moe_layers
        total += dense_mlp_layers * self._dense_mlp_params()
        if self.moe:
            total += self.num_moe_layers * self._moe_params()[0]
        return total

    @cached_property
    def params_total(self) -> int:
        if not self.moe:
            return self.params_dense
        return self.params_dense + self.num_moe_layers * self.moe.num_experts * self.params_per_expert

    @cached_property
    def params_active(self) -> int:
        """Parameters one token's forward pass multiplies by (top-k experts, not all)."""
        if not self.moe:
            return self.params_dense
        return self.params_dense + self.num_moe_layers * self.moe.experts_per_token * self.params_per_expert

    def expected_experts_touched(self, tokens: float) -> float:
        """Expected distinct experts a layer reads when `tokens` tokens are routed together.

        With uniform, independent routing each expert is missed by one token with probability
        (1 - k/E), so E * (1 - (1 - k/E)^tokens) experts are touched. One token touches k; a few
        hundred tokens touch nearly all of them, which is why MoE decode stops being cheap at
        large batch.
        """
        if not self.moe or tokens <= 0:
            return 0.0
        e, k = self.moe.num_experts, self.moe.experts_per_token
        return e * (1.0 - (1.0 - k / e) ** tokens)

    def params_read(self, tokens: float) -> float:
        """Parameters a forward pass over `tokens` tokens must read from memory."""
        if not self.moe:
            return float(self.params_dense)
        touched = self.expected_experts_touched(tokens)
        return self.params_dense + self.num_moe_layers * touched * self.params_per_expert

    # ----- KV cache ---------------------------------------------------------------------
    def kv_heads_per_rank(self, tp: int) -> int:
        """KV heads one tensor-parallel rank stores: split when possible, replicated once the
        ranks outnumber the heads (8 KV heads on 16 ranks: every head lives on two ranks)."""
        return max(1, self.num_kv_heads // tp)

    def kv_elements_per_token_per_layer(self, tp: int = 1) -> int:
        """Cached elements one token adds to one layer on one tensor-parallel rank.

        Standard attention: 2 (K and V) x kv_heads x head_dim. MLA: kv_lora_rank +
        qk_rope_head_dim, one latent shared by all heads, so tensor parallelism cannot split it.
        """
        if self.mla is not None:
            return self.mla.kv_lora_rank + self.mla.qk_rope_head_dim
        return 2 * self.kv_heads_per_rank(tp) * self.head_dim

    def kv_bytes_per_token(self, dtype_bytes: float, tp: int = 1) -> float:
        """Bytes of cache one token costs across all layers (windowed layers included), on one
        rank: 2 x layers x kv_heads x head_dim x bytes_per_element for standard attention.

        Worked example (design.md): Qwen3-8B, BF16: 2 x 36 x 8 x 128 x 2 = 147,456 B = 144 KiB.
        """
        return self.num_layers * self.kv_elements_per_token_per_layer(tp) * dtype_bytes

    @cached_property
    def num_sliding_layers(self) -> int:
        return sum(self.sliding_layers) if self.sliding_window_tokens else 0

    @cached_property
    def layer_kinds(self) -> tuple[LayerKind, ...]:
        """The model's layers grouped by kind (attention window x MLP type), in first-seen order."""
        counts: dict[tuple[bool, bool], int] = {}
        for i in range(self.num_layers):
            windowed = bool(self.sliding_window_tokens) and bool(self.sliding_layers) and self.sliding_layers[i]
            moe = bool(self.moe_layers) and self.moe_layers[i]
            counts[(windowed, moe)] = counts.get((windowed, moe), 0) + 1
        attention = "mla" if self.mla is not None else "full"
        return tuple(LayerKind(n, "sliding" if w else attention, self.sliding_window_tokens if w else 0, "moe" if m else "dense")
                     for (w, m), n in counts.items())

    @cached_property
    def attention_kinds(self) -> tuple[tuple[int, int], ...]:
        """(layers, window tokens or 0) per distinct attention window: what KV formulas sum over."""
        by_window: dict[int, int] = {}
        for k in self.layer_kinds:
            by_window[k.window_tokens] = by_window.get(k.window_tokens, 0) + k.count
        return tuple((n, w) for w, n in by_window.items())

    @cached_property
    def window_tokens(self) -> int:
        """The sliding window (0 if every layer attends to the whole context)."""
        return max((w for _, w in self.attention_kinds), default=0)

    @cached_property
    def windowed_layer_fraction(self) -> float:
        return sum(n for n, w in self.attention_kinds if w) / self.num_layers

    def layer_mean(self, per_window) -> float:
        """Mean over layers of per_window(window_tokens or 0): the one place layers are weighted."""
        kinds = self.attention_kinds
        if len(kinds) == 1:
            return per_window(kinds[0][1])
        return math.fsum(n * per_window(w) for n, w in self.attention_kinds) / self.num_layers  # same bits on every Python

    def kv_read_tokens(self, context_tokens: float) -> float:
        """Cached tokens a sequence of `context_tokens` holds, averaged over layers (the unit the
        step model takes: multiply by kv_bytes_per_token for bytes). Windowed layers hold at
        most the window."""
        if not self.window_tokens:
            return float(context_tokens)
        return self.layer_mean(lambda w: context_tokens if not w or context_tokens <= w else float(w))

    def kv_bytes_for_context(self, context_tokens: float, dtype_bytes: float, tp: int = 1) -> float:
        """Bytes of cache one sequence of `context_tokens` holds on one rank."""
        return self.kv_bytes_per_token(dtype_bytes, tp) * self.kv_read_tokens(context_tokens)

    # ----- attention arithmetic ---------------------------------------------------------
    @cached_property
    def attention_flops_per_pair(self) -> float:
        """FLOPs of one (query, cached key) pair summed over heads and layers: QK^T and AV."""
        if self.mla is not None:
            m = self.mla
            per_head = 2 * (m.qk_nope_head_dim + m.qk_rope_head_dim) + 2 * m.v_head_dim
        else:
            per_head = 4 * self.head_dim
        return per_head * self.num_q_heads * self.num_layers

    def causal_pairs(self, new_tokens: float, cached_tokens: float = 0.0) -> float:
        """(query, key) pairs, averaged over layers, when `new_tokens` tokens attend causally to
        themselves and to `cached_tokens` earlier ones.

        Full layers: new x cached + new^2 / 2 (the causal triangle, which is where the prefill
        term 2 x layers x q_heads x head_dim x n^2 of design.md comes from). Sliding layers see at
        most `sliding_window_tokens` keys per query.
        """
        n, c = new_tokens, cached_tokens
        full = n * c + n * n / 2.0

        def pairs(w: int) -> float:
            # Query i (0-based among the new ones) sees min(c + i + 1, w) keys; integrate over i.
            start, end = c, c + n
            if not w or end <= w:
                return full
            if start >= w:
                return n * w
            below = w - start
            return below * start + below * below / 2.0 + (n - below) * w

        return full if not self.window_tokens else self.layer_mean(pairs)

    # ----- transforms -------------------------------------------------------------------
    def with_forced_mha(self) -> Architecture:
        """Every query head gets its own K and V head (the seed's "force multi-head attention"):
        k_proj and v_proj widen to q width, and the cache grows by q_heads / kv_heads."""
        if self.mla is not None:
            raise InputError(Issue("force_mha", "applies to MHA/GQA/MQA models; this model uses MLA, whose cache is a shared latent"))
        return replace(self, num_kv_heads=self.num_q_heads, name=f"{self.name} (forced MHA)")


# ----------------------------------------------------------------------------------------
# Parsing config.json
# ----------------------------------------------------------------------------------------

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
    )


def bytes_per_token_formula(arch: Architecture, dtype_bytes: float, tp: int = 1) -> str:
    """The KV formula with this model's numbers filled in, for display."""
    total = arch.kv_bytes_per_token(dtype_bytes, tp)
    if arch.mla is not None:
        m = arch.mla
        return (f"{arch.num_layers} layers x ({m.kv_lora_rank} latent + {m.qk_rope_head_dim} rope) x "
                f"{dtype_bytes:g} B = {total:,.0f} B")
    heads = arch.kv_heads_per_rank(tp)
    return (f"2 x {arch.num_layers} layers x {heads} kv_heads x {arch.head_dim} head_dim x "
            f"{dtype_bytes:g} B = {total:,.0f} B")


