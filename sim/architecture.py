"""A transformer's shape, read from a Hugging Face `config.json`.

Everything kvlab knows about a model comes from this one frozen object: parameter counts are
derived from the shapes (never typed in), and the KV bytes per token follow from the attention
kind. Supported families: Llama / Qwen / Mistral (MHA, GQA, MQA), Gemma-2/3 (sliding-window
layers), DeepSeek V2/V3/R1 (multi-head latent attention), mixture-of-experts models (Mixtral,
Qwen-MoE, DeepSeek), hybrids of attention and a recurrent mixer with a fixed state per sequence
instead of a cache that grows (Qwen3-Next's Gated DeltaNet, Nemotron-H's Mamba-2, whose layers are
single blocks: a mixer or an MLP), and DeepSeek-V3.2's sparse attention (a lightning indexer picks
the cached latents a query reads). The layer parts and their rules live in sim/layer_parts.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property

from .errors import InputError, Issue
from .layer_parts import (
    MLA,
    STATE_BYTES_PER_ELEMENT,
    LayerKind,
    LinearAttention,
    Mamba1,
    Mamba2,
    MoE,
    SparseIndexer,
    sparse_latent_bytes,
)

__all__ = ["MLA", "Architecture", "LayerKind", "LinearAttention", "Mamba1", "Mamba2", "MoE", "SparseIndexer"]

# model_type values whose attention block carries per-head RMSNorms on q and k (Qwen3).
_QK_NORM_TYPES = {"qwen3", "qwen3_moe", "qwen3_next", "gemma3", "gemma3_text"}
# model_type values whose q_proj also emits a per-head output gate (Qwen3-Next's gated attention:
# q_proj is 2 x heads x head_dim wide, transformers' Qwen3NextAttention).
_GATED_Q_TYPES = {"qwen3_next"}
# model_type values with four RMSNorms per layer instead of two (pre/post attention and MLP).
_FOUR_NORM_TYPES = {"gemma2", "gemma3", "gemma3_text"}
# model_type values whose layers are single blocks (a mixer or an MLP, never both) with one
# RMSNorm each: Nemotron-H (vLLM's NemotronH*DecoderLayer: one `norm` per layer).
_ONE_NORM_TYPES = {"nemotron_h"}
# Layer kinds that cache no tokens: a recurrent mixer keeps a fixed state, an MLP-only block nothing.
_NO_CACHE_KINDS = ("linear", "mamba", "none")


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
    # The recurrent mixer of a hybrid's linear-time layers (Gated DeltaNet, Mamba or Mamba-2), and per
    # layer True where a layer is one: these keep a fixed state per sequence instead of a cache.
    linear: LinearAttention | Mamba1 | Mamba2 | None = None
    linear_layers: tuple[bool, ...] = ()
    # Single-block layers (Nemotron-H): per layer, False where a layer has no token mixer (an MLP
    # block) / no MLP (a mixer block). Empty: every layer has both, as in a transformer.
    mixer_layers: tuple[bool, ...] = ()
    mlp_layers: tuple[bool, ...] = ()
    gated_mlp: bool = True  # gate, up and down (SwiGLU); False: up and down only (Nemotron-H's ReLU^2)
    indexer: SparseIndexer | None = None  # DeepSeek sparse attention's lightning indexer (MLA layers)

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
        q_and_o = (3 if self.model_type in _GATED_Q_TYPES else 2) * h * self.num_q_heads * d
        k_and_v = 2 * h * self.num_kv_heads * d
        qk_norm = 2 * d if self.model_type in _QK_NORM_TYPES else 0
        return q_and_o + k_and_v + qk_norm

    def _replicated_attention_params(self) -> int:
        """Attention parameters every tensor-parallel rank holds whole: MLA's q_a and kv_a
        down-projections and their norms, ReplicatedLinear in vLLM and SGLang (models/deepseek_v2.py:
        fused_qkv_a_proj, fused_qkv_a_proj_with_mqa). Grouped-query attention splits everything."""
        if self.mla is None:
            return 0
        m, h = self.mla, self.hidden_size
        q_a = h * m.q_lora_rank + m.q_lora_rank if m.q_lora_rank else 0
        return q_a + h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank

    @cached_property
    def params_replicated(self) -> int:
        """Parameters every tensor-parallel rank holds whole, not a 1/tp shard of: MLA's
        down-projections and the MoE routers (ReplicatedLinear gates). Norms are replicated too but
        are under 0.01% of any catalog model, so they stay in the shard: a dense rank holds exactly
        params_total / tp, the textbook's rule."""
        router = self.num_moe_layers * self.hidden_size * self.moe.num_experts if self.moe else 0
        return self.kv_layers * (self._replicated_attention_params() + self._indexer_params()) + router

    def _norm_params_per_layer(self) -> int:
        per_layer = 4 if self.model_type in _FOUR_NORM_TYPES else 1 if self.model_type in _ONE_NORM_TYPES else 2
        return per_layer * self.hidden_size

    def _dense_mlp_params(self) -> int:
        """Gate, up and down projections (up and down for an ungated MLP)."""
        return (3 if self.gated_mlp else 2) * self.hidden_size * self.intermediate_size

    def _indexer_params(self) -> int:
        return self.indexer.params(self.hidden_size, self.mla.q_lora_rank) if self.indexer is not None else 0

    def _moe_params(self) -> tuple[int, int]:
        """(always-read params of one MoE layer, params of one routed expert)."""
        m = self.moe
        h = self.hidden_size
        router = h * m.num_experts
        shared = 3 * h * m.shared_intermediate_size + (h if m.shared_expert_gate else 0)
        return router + shared, 3 * h * m.expert_intermediate_size

    @cached_property
    def num_linear_layers(self) -> int:
        return sum(self.linear_layers) if self.linear is not None else 0

    @cached_property
    def num_mixerless_layers(self) -> int:
        """MLP-only blocks (Nemotron-H's "-"): no attention, no state."""
        return self.mixer_layers.count(False)

    @cached_property
    def num_mlp_layers(self) -> int:
        return self.num_layers - self.mlp_layers.count(False)

    @cached_property
    def sublayers(self) -> int:
        """Mixers and MLPs in all: each ends in a row-parallel GEMM and an all-reduce under tensor
        parallelism. A transformer has two a layer; Nemotron-H's single blocks one."""
        return self.num_layers - self.num_mixerless_layers + self.num_mlp_layers

    @cached_property
    def kv_layers(self) -> int:
        """Layers that cache keys and values per token: all of them but the recurrent ones and the
        MLP-only blocks. The KV formulas count these; the layer means below are over these."""
        return self.num_layers - self.num_linear_layers - self.num_mixerless_layers

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
        total = (self.kv_layers * (self._attention_params() + self._indexer_params())
                 + self.num_layers * self._norm_params_per_layer() + self.params_embedding + self.hidden_size)
        if self.linear is not None:
            total += self.num_linear_layers * self.linear.params(self.hidden_size)
        dense_mlp_layers = self.num_mlp_layers - self.num_moe_layers
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

    def per_rank(self, params: float, tp: int, attention_dp: int = 1) -> float:
        """What one of tp ranks holds or multiplies of `params` that include every replicated
        parameter and all attention (params_total, params_active, params_read): the shard of the
        rest, and the replicated ones whole. With attention_dp groups, attention is split over the
        tp / attention_dp ranks of a group only, so a rank holds (attention_dp - 1) / tp more of it."""
        shard = (params - self.params_replicated) / tp + self.params_replicated
        return shard + self.split_attention_params * (attention_dp - 1) / tp if attention_dp > 1 else shard

    def stage_fraction(self, pp: int) -> float:
        """Share of the layers the fullest of pp pipeline stages holds: ceil(layers / pp) / layers."""
        return -(-self.num_layers // pp) / self.num_layers

    @cached_property
    def split_attention_params(self) -> int:
        """Attention parameters tensor parallelism splits: linear layers' too, not MLA's replicated ones."""
        total = self.kv_layers * (self._attention_params() - self._replicated_attention_params())
        return total + (self.num_linear_layers * self.linear.params(self.hidden_size) if self.linear is not None else 0)

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

    def kv_bytes_per_token(self, dtype_bytes: float, tp: int = 1, attention_dp: int = 1, pp: int = 1) -> float:
        """Bytes of cache one token costs across all layers (windowed layers included), on one
        rank: 2 x layers x kv_heads x head_dim x bytes_per_element for standard attention.

        Worked example (design.md): Qwen3-8B, BF16: 2 x 36 x 8 x 128 x 2 = 147,456 B = 144 KiB.
        A hybrid model counts its attention layers only (Qwen3-Next-80B: 12 of 48); its linear
        layers hold state_bytes_per_sequence instead.

        attention_dp groups of tp / attention_dp ranks each cache their own requests: the figure is the
        mean over the tp ranks (DeepSeek-V3, tp 8, BF16: 70,272 B, the latent being unsplittable;
        8,784 B with attention_dp 8). With pp stages, the fullest stage's ceil(layers / pp) layers.
        """
        per_layer = self.kv_bytes_per_token_per_layer(dtype_bytes, tp // attention_dp) / attention_dp
        return self.kv_layers * per_layer * self.stage_fraction(pp)

    def kv_bytes_per_token_per_layer(self, dtype_bytes: float, tp: int = 1) -> float:
        """One token's cache in one attention layer on one rank of a tensor-parallel group. A DSA
        model (DeepSeek-V3.2) keeps its latent (sim/layer_parts.sparse_latent_bytes: 1,152 B in
        BF16, 656 B in vLLM's FP8 layout) and its indexer key (132 B, FP8 whatever the cache dtype)."""
        if self.indexer is not None:
            return sparse_latent_bytes(self.mla, dtype_bytes) + self.indexer.key_bytes
        return self.kv_elements_per_token_per_layer(tp) * dtype_bytes

    def state_bytes_per_sequence(self, tp: int = 1, attention_dp: int = 1, pp: int = 1) -> float:
        """Bytes of recurrent state one sequence holds on one rank (attention_dp, pp: as
        kv_bytes_per_token): linear layers x LinearAttention.state_elements x bytes per element.
        Qwen3-Next-80B at tp 1: 36 x 548,864 x 2 = 39,518,208 B (37.7 MiB); Nemotron-Nano-9B-v2:
        27 x 1,347,584 x 2 = 72,769,536 B (69.4 MiB). 0 without recurrent layers."""
        if self.linear is None:
            return 0.0
        return float(self.num_linear_layers * self.linear.state_elements(tp // attention_dp) * STATE_BYTES_PER_ELEMENT
                     / attention_dp * self.stage_fraction(pp))

    @cached_property
    def num_sliding_layers(self) -> int:
        return sum(self.sliding_layers) if self.sliding_window_tokens else 0

    @cached_property
    def layer_kinds(self) -> tuple[LayerKind, ...]:
        """The model's layers grouped by kind (attention window x MLP type), in first-seen order."""
        counts: dict[tuple[str, bool], int] = {}
        attention = "mla" if self.mla is not None else "full"
        for i in range(self.num_layers):
            if self.linear is not None and self.linear_layers[i]:
                kind = self.linear.kind
            elif self.mixer_layers and not self.mixer_layers[i]:
                kind = "none"
            elif self.sliding_window_tokens and self.sliding_layers and self.sliding_layers[i]:
                kind = "sliding"
            else:
                kind = attention
            mlp = "none" if self.mlp_layers and not self.mlp_layers[i] else "moe" if self.moe_layers and self.moe_layers[i] else "dense"
            counts[(kind, mlp)] = counts.get((kind, mlp), 0) + 1
        return tuple(LayerKind(n, kind, self.sliding_window_tokens if kind == "sliding" else 0, mlp)
                     for (kind, mlp), n in counts.items())

    @cached_property
    def attention_kinds(self) -> tuple[tuple[int, int], ...]:
        """(layers, window tokens or 0) per distinct attention window: what KV formulas sum over
        (recurrent layers and MLP-only blocks cache no tokens and are not among them)."""
        by_window: dict[int, int] = {}
        for k in self.layer_kinds:
            if k.attention in _NO_CACHE_KINDS:
                continue
            by_window[k.window_tokens] = by_window.get(k.window_tokens, 0) + k.count
        return tuple((n, w) for w, n in by_window.items())

    @cached_property
    def window_tokens(self) -> int:
        """The sliding window (0 if every layer attends to the whole context)."""
        return max((w for _, w in self.attention_kinds), default=0)

    @cached_property
    def windowed_layer_fraction(self) -> float:
        return sum(n for n, w in self.attention_kinds if w) / self.kv_layers

    def layer_mean(self, per_window) -> float:
        """Mean over the KV layers of per_window(window_tokens or 0): the one place layers are weighted."""
        kinds = self.attention_kinds
        if len(kinds) == 1:
            return per_window(kinds[0][1])
        return math.fsum(n * per_window(w) for n, w in self.attention_kinds) / self.kv_layers  # same bits on every Python

    def kv_read_tokens(self, context_tokens: float) -> float:
        """Cached tokens a sequence of `context_tokens` holds, averaged over layers (the unit the
        step model takes: multiply by kv_bytes_per_token for bytes): each layer kind's
        `attended`. The time-domain engine calls this once per sequence joining or leaving.
        A DSA model's query attends to at most index_topk latents; what it reads besides (every
        indexer key) depends on the cache dtype: roofline.Machine.cache_read_tokens."""
        if self.indexer is not None:
            return float(min(context_tokens, self.indexer.topk))
        if not self.window_tokens:
            return float(context_tokens)
        return self._kind_mean(LayerKind.attended, context_tokens)

    @cached_property
    def window_kinds(self) -> tuple[LayerKind, ...]:
        """One LayerKind per distinct attention window (the MLP merged): what the window rules
        are summed over, in the same groups as attention_kinds."""
        attention = "mla" if self.mla is not None else "full"
        return tuple(LayerKind(n, "sliding" if w else attention, w, "any") for n, w in self.attention_kinds)

    def _kind_mean(self, rule, *args) -> float:
        """Mean over layers of one LayerKind rule, weighted as layer_mean weights (math.fsum:
        the same bits on every Python)."""
        kinds = self.window_kinds
        if len(kinds) == 1:
            return rule(kinds[0], *args)
        return math.fsum(k.count * rule(k, *args) for k in kinds) / self.kv_layers

    def kv_bytes_for_context(self, context_tokens: float, dtype_bytes: float, tp: int = 1) -> float:
        """Bytes of cache one sequence of `context_tokens` holds on one rank (a DSA model keeps
        every token; its queries read only some)."""
        held = context_tokens if self.indexer is not None else self.kv_read_tokens(context_tokens)
        return self.kv_bytes_per_token(dtype_bytes, tp) * held

    # ----- attention arithmetic ---------------------------------------------------------
    def attention_scores_bytes(self, prompt_tokens: int, dtype_bytes: float = 2.0) -> float:
        """Bytes of one layer's full score matrix for a prefill of `prompt_tokens` (every query head, every
        query against every key, in the activations' 16-bit type): what attention without FlashAttention
        materialises and FlashAttention never holds, computing it tile by tile in on-chip memory (Dao et
        al. 2022). Activation memory, not cache: it exists only while the layer runs."""
        return float(self.num_q_heads) * prompt_tokens * prompt_tokens * dtype_bytes

    @cached_property
    def attention_flops_per_pair(self) -> float:
        """FLOPs of one (query, cached key) pair summed over heads and layers: QK^T and AV."""
        if self.mla is not None:
            m = self.mla
            per_head = 2 * (m.qk_nope_head_dim + m.qk_rope_head_dim) + 2 * m.v_head_dim
        else:
            per_head = 4 * self.head_dim
        return per_head * self.num_q_heads * self.kv_layers

    def causal_pairs(self, new_tokens: float, cached_tokens: float = 0.0) -> float:
        """(query, key) pairs, averaged over layers, when `new_tokens` tokens attend causally to
        themselves and to `cached_tokens` earlier ones.

        Full layers: new x cached + new^2 / 2 (the causal triangle, which is where the prefill
        term 2 x layers x q_heads x head_dim x n^2 of design.md comes from). Sliding layers see at
        most `sliding_window_tokens` keys per query. A DSA model's queries attend to at most
        index_topk latents each (the window rule, the keys being the indexer's choice, not the
        last ones) and its indexer scores every causal pair, counted in full-attention pairs
        (indexer_pair_ratio of one).
        """
        if self.indexer is not None:
            full = new_tokens * cached_tokens + new_tokens * new_tokens / 2.0
            return LayerKind(1, "mla", self.indexer.topk, "any").pairs(new_tokens, cached_tokens) + self.indexer_pair_ratio * full
        if not self.window_tokens:
            return new_tokens * cached_tokens + new_tokens * new_tokens / 2.0
        return self._kind_mean(LayerKind.pairs, new_tokens, cached_tokens)

    @cached_property
    def indexer_pair_ratio(self) -> float:
        """FLOPs of the lightning indexer's scoring of one pair over those of one attended pair
        (DeepSeek-V3.2: 2 x 64 x 128 over (2 x 192 + 2 x 128) x 128 = 0.2); 0 without an indexer."""
        if self.indexer is None:
            return 0.0
        return self.indexer.flops_per_pair() * self.kv_layers / self.attention_flops_per_pair

    # ----- transforms -------------------------------------------------------------------
    def with_forced_mha(self) -> Architecture:
        """Every query head gets its own K and V head (the seed's "force multi-head attention"):
        k_proj and v_proj widen to q width, and the cache grows by q_heads / kv_heads."""
        if self.mla is not None:
            raise InputError(Issue("force_mha", "applies to MHA/GQA/MQA models; this model uses MLA, whose cache is a shared latent"))
        return replace(self, num_kv_heads=self.num_q_heads, name=f"{self.name} (forced MHA)")
