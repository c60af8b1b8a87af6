"""The parts a decoder layer is built from, read from `config.json`, each owning its own rules.

An `Architecture` (sim/architecture.py) says which layer has which part; the part says what it
holds and costs: a mixture-of-experts MLP its expert shapes, multi-head latent attention its latent,
a recurrent mixer (Gated DeltaNet, Mamba-2) the fixed state one sequence keeps in place of a cache
and its tensor-parallel split, DeepSeek's lightning indexer the key it caches per token and the
keys a query selects. Every figure below is checked by a fixed-point test from a public source
(tests/sim/test_hybrid.py, tests/sim/test_mamba.py, tests/sim/test_sparse_attention.py).
"""

from __future__ import annotations

from dataclasses import dataclass

# Bytes per element of a recurrent layer's state. vLLM keeps it in the model's dtype whatever the
# KV cache dtype is (cache_config.mamba_cache_dtype "auto": the model dtype; mamba_ssm_cache_dtype
# "auto": the same; vllm/model_executor/layers/mamba/mamba_utils.py, MambaStateDtypeCalculator),
# BF16 for every hybrid checkpoint kvlab ships.
STATE_BYTES_PER_ELEMENT = 2


@dataclass(frozen=True)
class LayerKind:
    """One kind of decoder layer, and how many of the model's layers are of it.

    Every per-layer formula (KV bytes held and read, attention pairs, vLLM's blocks per request,
    the kernels of a step) sums over `Architecture.layer_kinds` instead of weighting full and
    sliding-window layers by hand: a Gemma-3 has two kinds (global and windowed), a DeepSeek-V3
    two (dense-MLP and MoE layers, both MLA), a Llama one.
    """

    count: int
    # "full", "sliding", "mla"; "linear" or "mamba" (a fixed state: no per-token cache); "none"
    # (an MLP-only block: Nemotron-H's "-" layers hold nothing)
    attention: str
    window_tokens: int  # keys one query may attend to; 0 means the whole context
    mlp: str  # "dense", "moe" or "none" (a mixer-only block); "any" in Architecture.window_kinds

    # The attention window's rules live here, once: Architecture sums them over its kinds, and the
    # time-domain engine's clock calls Architecture.kv_read_tokens (sim/engine/clock.py).
    def attended(self, context_tokens: float) -> float:
        """Cached tokens a layer of this kind keeps (and a decode query reads) at this context."""
        w = self.window_tokens
        return context_tokens if not w or context_tokens <= w else float(w)

    def pairs(self, new_tokens: float, cached_tokens: float = 0.0) -> float:
        """(query, key) pairs of one layer of this kind when `new_tokens` attend causally to
        themselves and to `cached_tokens` earlier ones: new x cached + new^2 / 2 (the causal
        triangle), a windowed layer seeing at most its window of keys per query."""
        n, c, w = new_tokens, cached_tokens, self.window_tokens
        start, end = c, c + n
        if not w or end <= w:
            return n * c + n * n / 2.0
        if start >= w:
            return n * w
        # Query i (0-based among the new ones) sees min(c + i + 1, w) keys; integrate over i.
        below = w - start
        return below * start + below * below / 2.0 + (n - below) * w


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
class LinearAttention:
    """Gated DeltaNet, Qwen3-Next's linear attention: each layer of this kind keeps, per
    sequence, a short-convolution window and one d_k x d_v state per value head, whatever the
    context length, in place of keys and values for every token."""

    num_k_heads: int
    num_v_heads: int
    head_k_dim: int
    head_v_dim: int
    conv_kernel_tokens: int

    kind = "linear"  # the layer kind's name (LayerKind.attention)

    @property
    def conv_channels(self) -> int:
        """Channels of the causal convolution: q and k (key width each) and v (value width)."""
        return 2 * self.num_k_heads * self.head_k_dim + self.num_v_heads * self.head_v_dim

    def state_elements(self, tp: int = 1) -> int:
        """State elements one sequence holds in one layer on one tensor-parallel rank: the
        convolution's last kernel - 1 inputs per channel, and num_v_heads d_k x d_v matrices, both
        split over the ranks (vLLM's MambaStateShapeCalculator.gated_delta_net_state_shape).
        Qwen3-Next-80B at tp 1: 8,192 x 3 + 32 x 128 x 128 = 548,864."""
        return (self.conv_channels // tp * (self.conv_kernel_tokens - 1)
                + self.num_v_heads // tp * self.head_k_dim * self.head_v_dim)

    def params(self, hidden: int) -> int:
        """One layer's parameters: in_proj_qkvz (q, k, v and the output gate z), in_proj_ba (two
        scalars per value head), the depthwise convolution (no bias), dt_bias and A_log per value
        head, the gated RMSNorm over a value head, out_proj."""
        key, value = self.num_k_heads * self.head_k_dim, self.num_v_heads * self.head_v_dim
        return (hidden * (2 * key + 2 * value) + hidden * 2 * self.num_v_heads + self.conv_channels * self.conv_kernel_tokens
                + 2 * self.num_v_heads + self.head_v_dim + value * hidden)

    def out_params(self, hidden: int) -> int:
        """out_proj: the row-parallel projection back to the hidden size (the step's O GEMM)."""
        return self.num_v_heads * self.head_v_dim * hidden

    def tp_issue(self, tp: int) -> str | None:
        """Why `tp` ranks cannot split this mixer (None if they can): vLLM splits the heads with
        no replication (divide() asserts)."""
        if self.num_k_heads % tp or self.num_v_heads % tp:
            return f"must divide linear_num_key_heads ({self.num_k_heads}) and linear_num_value_heads ({self.num_v_heads})"
        return None


@dataclass(frozen=True)
class Mamba2:
    """A Mamba-2 mixer (Nemotron-H's "M" layers): per sequence it keeps the causal convolution's
    last conv_kernel - 1 inputs over x, B and C, and one head_dim x state_size SSM state per head,
    whatever the context length. Shapes as vLLM's NemotronHForCausalLM passes them to
    MambaStateShapeCalculator.mamba2_state_shape (intermediate = mamba_num_heads x mamba_head_dim)."""

    num_heads: int
    head_dim: int
    n_groups: int
    state_size: int
    conv_kernel_tokens: int
    conv_bias: bool = True  # use_conv_bias
    proj_bias: bool = False  # use_bias: in_proj and out_proj

    kind = "mamba"

    @property
    def intermediate(self) -> int:
        return self.num_heads * self.head_dim

    def groups(self, tp: int = 1) -> int:
        """B/C groups once split over tp ranks: vLLM replicates groups so each rank holds those its
        heads need (extra_groups_for_head_shards: tp - n_groups more when tp does not divide them)."""
        return self.n_groups if self.n_groups % tp == 0 else tp

    def state_elements(self, tp: int = 1) -> int:
        """State elements one sequence holds in one layer on one rank (vLLM's mamba2_state_shape):
        the conv state, (conv_kernel - 1) x (intermediate + 2 x groups x state_size) / tp, and the
        SSM state, num_heads / tp x head_dim x state_size. Nemotron-Nano-9B-v2 at tp 1:
        3 x (10,240 + 2 x 8 x 128) + 128 x 80 x 128 = 36,864 + 1,310,720 = 1,347,584."""
        conv_dim = self.intermediate + 2 * self.groups(tp) * self.state_size
        return (conv_dim // tp * (self.conv_kernel_tokens - 1)
                + self.num_heads // tp * self.head_dim * self.state_size)

    def params(self, hidden: int) -> int:
        """One layer's parameters (transformers' NemotronHMamba2Mixer): in_proj to z and x
        (intermediate each), B and C (n_groups x state_size each) and dt (one per head); the
        depthwise convolution over x, B and C (with its bias); dt_bias, A_log and D per head; the
        gated RMSNorm over the intermediate width; out_proj."""
        inner, bc = self.intermediate, 2 * self.n_groups * self.state_size
        in_width = 2 * inner + bc + self.num_heads
        conv = (inner + bc) * (self.conv_kernel_tokens + (1 if self.conv_bias else 0))
        bias = (in_width + hidden) if self.proj_bias else 0
        return hidden * in_width + conv + 3 * self.num_heads + inner + inner * hidden + bias

    def out_params(self, hidden: int) -> int:
        return self.intermediate * hidden

    def tp_issue(self, tp: int) -> str | None:
        if self.num_heads % tp:
            return f"must divide mamba_num_heads ({self.num_heads})"
        if self.n_groups % tp and tp % self.n_groups:
            # vLLM's extra_groups_for_head_shards covers n_groups == 1 or dividing tp only
            return f"must divide n_groups ({self.n_groups}) or be a multiple of it"
        return None


@dataclass(frozen=True)
class Mamba1:
    """A Mamba (selective SSM) mixer, Jamba's "mamba" layers: per sequence it keeps the causal
    convolution's last conv_kernel - 1 inputs and one state_size-wide state per channel of the
    inner width (vLLM's MambaStateShapeCalculator.mamba1_state_shape), whatever the context length."""

    intermediate: int  # mamba_expand x hidden_size
    state_size: int  # mamba_d_state
    conv_kernel_tokens: int  # mamba_d_conv
    dt_rank: int  # mamba_dt_rank
    conv_bias: bool = True  # mamba_conv_bias
    proj_bias: bool = False  # mamba_proj_bias

    kind = "mamba"

    def state_elements(self, tp: int = 1) -> int:
        """(intermediate / tp) x (conv_kernel - 1) conv inputs and (intermediate / tp) x state_size
        SSM states. Jamba-v0.1 at tp 1: 8,192 x 3 + 8,192 x 16 = 155,648."""
        inner = self.intermediate // tp
        return inner * (self.conv_kernel_tokens - 1) + inner * self.state_size

    def params(self, hidden: int) -> int:
        """One layer (transformers' JambaMambaMixer): in_proj to x and z, the depthwise convolution,
        x_proj to dt (dt_rank), B and C (state_size each), dt_proj with its bias, A_log and D, the
        RMSNorms Jamba puts on dt, B and C, and out_proj."""
        inner, n, r = self.intermediate, self.state_size, self.dt_rank
        conv = inner * (self.conv_kernel_tokens + (1 if self.conv_bias else 0))
        bias = (2 * inner + hidden) if self.proj_bias else 0
        return (hidden * 2 * inner + conv + inner * (r + 2 * n) + r * inner + inner + inner * n + inner
                + r + 2 * n + inner * hidden + bias)

    def out_params(self, hidden: int) -> int:
        return self.intermediate * hidden

    def tp_issue(self, tp: int) -> str | None:
        return None if self.intermediate % tp == 0 else f"must divide the Mamba inner width ({self.intermediate})"


# DeepSeek-V3.2's lightning indexer cache, as vLLM lays it out: "we use fp8 naive cache, where we
# store value in fp8 and scale in fp32 per quant_block_size element" (quant_block_size 128;
# vllm/model_executor/models/deepseek_v2.py, Indexer: DeepseekV32IndexerCache(head_dim=
# head_dim + head_dim // quant_block_size * 4, dtype=torch.uint8)), whatever the KV cache dtype.
INDEXER_QUANT_BLOCK = 128
INDEXER_SCALE_BYTES = 4


@dataclass(frozen=True)
class SparseIndexer:
    """DeepSeek sparse attention (DSA, DeepSeek-V3.2): a lightning indexer scores every cached
    token with `n_heads` small heads over one cached key of `head_dim` per token and layer, and the
    MLA attention then reads only the `topk` best latents. What a layer keeps per token: its latent
    and the indexer's key. What a decode query reads: every indexer key, and at most topk latents."""

    n_heads: int  # index_n_heads
    head_dim: int  # index_head_dim
    topk: int  # index_topk

    @property
    def key_bytes(self) -> int:
        """Cached bytes of one token's indexer key in one layer: FP8 values and one FP32 scale per
        128 of them. DeepSeek-V3.2: 128 + 4 = 132."""
        return self.head_dim + -(-self.head_dim // INDEXER_QUANT_BLOCK) * INDEXER_SCALE_BYTES

    def params(self, hidden: int, q_lora_rank: int) -> int:
        """One layer's indexer weights, every rank holding them whole (ReplicatedLinear, or
        disable_tp in vLLM's fused wk + weights_proj): wq_b from the query latent (n_heads x
        head_dim), wk (head_dim), the key's LayerNorm (weight and bias) and weights_proj (a weight
        per head)."""
        return q_lora_rank * self.n_heads * self.head_dim + hidden * self.head_dim + 2 * self.head_dim + hidden * self.n_heads

    def flops_per_pair(self) -> int:
        """FLOPs of scoring one (query, cached token) pair in one layer: a dot product per head."""
        return 2 * self.n_heads * self.head_dim


def sparse_latent_bytes(mla: MLA, dtype_bytes: float) -> float:
    """Bytes of one token's MLA latent in one layer of a DSA model. A one-byte cache is vLLM's
    "fp8_ds_mla" layout, the format the sparse FlashMLA kernel reads (vllm/model_executor/models/
    config.py, DeepseekV32ForCausalLM: fp8 becomes "fp8_ds_mla"; vllm/v1/attention/backends/mla/
    flashmla_sparse.py: "custom storage fromat is 656 bytes"): the latent in FP8 with one FP32
    scale per 128 values, the rotary key kept in BF16, 512 + 16 + 128 = 656 bytes. Any other
    dtype stores all kv_lora_rank + qk_rope_head_dim elements in it (BF16: 1,152 bytes)."""
    if dtype_bytes == 1:
        scales = -(-mla.kv_lora_rank // INDEXER_QUANT_BLOCK) * INDEXER_SCALE_BYTES
        return float(mla.kv_lora_rank + scales + 2 * mla.qk_rope_head_dim)
    return (mla.kv_lora_rank + mla.qk_rope_head_dim) * dtype_bytes
