"""The HBM budget: how a serving engine carves one GPU's memory, in fill order.

1. usable = gpu_memory_utilization x capacity (the rest is left to the CUDA context, the
   allocator and the driver);
2. minus the weights (this rank's shard under tensor parallelism);
3. minus an activation / workspace reserve for the largest forward pass the scheduler may launch;
4. whatever is left is the KV pool.

Three accounting modes share that order and differ in the details real engines add:

- ``textbook`` (seed 002): nominal capacity, the reserve of `activation_reserve_bytes`, the pool
  counted in whole tokens.
- ``vllm`` (vLLM V1, v0.10-v0.11: `Worker.determine_available_memory`, `memory_profiling`,
  `get_kv_cache_config`): the total the driver reports x gpu_memory_utilization, minus the weights,
  minus the non-torch memory that appears while vLLM profiles (cuBLAS workspaces; NCCL buffers
  once ranks communicate), minus the torch peak of a profiling forward pass of
  max_num_batched_tokens tokens followed by a sampler run (`vllm_activation_peak_bytes`). The
  pool is cut into whole blocks of block_size_tokens.
- ``sglang`` (SGLang v0.5: `ModelRunner.profile_max_num_token`): SGLang measures the free memory
  after the CUDA context and NCCL are up (total_gpu_memory), loads the weights, and keeps
  rest = free_after_weights - total_gpu_memory x (1 - mem_fraction_static) for the pool, which
  is mem_fraction_static x total_gpu_memory - weights. Activations and CUDA graphs live in the
  (1 - mem_fraction_static) share, so nothing is subtracted for them.
- ``tensorrt-llm`` (TensorRT-LLM 1.x, PyTorch backend: `KvCacheCreator.configure_kv_cache_capacity`
  and `_cal_max_memory` in tensorrt_llm/_torch/pyexecutor/_util.py): the engine loads the weights,
  runs a warm-up of max_num_tokens tokens with a small temporary cache, and measures its peak,
  torch's plus what lies outside torch (the CUDA context, NCCL). The KV cache then takes
  kv_cache_free_gpu_mem_fraction of what that peak leaves free:
  (total - peak) x fraction, at most kv_cache_max_tokens tokens. The fraction is of the *free*
  memory, where vLLM's and SGLang's are of the *total*. The older TensorRT-engine flow applies the
  same fraction to the memory free after the engine and its buffers are allocated
  (`BaseKVCacheManager::calculateFreeMemBytes`: "freePrimaryMemBytes = finalFreeMem x freeMemFraction").

The placeholders of the first cut are replaced by figures tied to engine logs (see the
constants' comments and docs/sim.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from .architecture import Architecture
from .catalog import GPU
from .units import GIB

ACTIVATION_BYTES = 2  # BF16 activations whatever the weight precision (weight-only or W8A8 both dequantize to BF16 outputs)
LOGIT_BYTES_PER_ENTRY = 2 + 4  # textbook: BF16 logits from lm_head plus the FP32 copy the sampler works on
# vLLM's profiling sampler run (V1 `_dummy_sampler_run`, top-k and top-p on): the FP32 logits,
# the sorted copy and its int64 indices, and the softmax of the sorted copy are alive together:
# 4 + 4 + 8 + 4 = 20 bytes per logit. Cross-check: vLLM PR #9003 logged a profiling peak 0.61 GiB
# higher with 256 sequences than with 1 at vocab 128,256, which is 20 bytes per logit.
VLLM_SAMPLER_BYTES_PER_LOGIT = 20
# Non-torch memory vLLM's profiler finds on one GPU (cuBLAS workspaces, attention-backend
# buffers): engine logs show 0.16 GiB (H100, January 2025), 0.20 GiB and 0.23 GiB (24 GiB cards,
# spring 2025).
VLLM_NON_TORCH_BYTES = 0.2 * GIB
# NCCL communicators and custom all-reduce buffers once tp > 1. SGLang logs "Init torch
# distributed ends. mem usage=2.01 GB" per rank at tp 8 on H200 (context included); vLLM's
# memory profile of Llama-3-8B went from 1.79 GiB non-torch at tp 1 to 3.58 GiB at tp 2.
# kvlab uses 1.5 GiB per rank; vLLM v0.10-v0.11 takes its baseline snapshot before NCCL starts,
# so these buffers land inside its budget.
NCCL_BYTES = 1.5 * GIB
# The CUDA context of a PyTorch process: outside vLLM's budget (its baseline snapshot is taken
# after the context exists) but inside what SGLang measures as used before total_gpu_memory.
CUDA_CONTEXT_BYTES = 0.5 * GIB


def forward_activation_peak_bytes(arch: Architecture, tokens: int, tp: int = 1) -> float:
    """Peak transient memory of one layer of a forward pass over `tokens` tokens, one rank.

    Layers run one after another, so only one layer's intermediates are alive at a time. The
    widest moment is inside the MLP, where the residual stream (h), the normalised input (h), the
    fused gate-and-up output (2 I) and the activated product (I) coexist:
    tokens x (2h + 3I / tp) x 2 bytes. Attention's q, k, v and output ((q + 2 kv + q) x head_dim
    per token) are checked too. MoE layers run as one fused kernel (the Triton fused_moe design
    vLLM and SGLang share), which allocates its three buffers up front: per token, k x 2 I_e /
    tp for gate-and-up, k x I_e / tp for the activated product and k x h for the expert outputs
    before their weighted sum; shared experts add 3 I_s / tp like a dense MLP.
    """
    h = arch.hidden_size
    dense_width = arch.intermediate_size if arch.num_moe_layers < arch.num_layers else 0
    mlp = 2 * h + 3 * dense_width / tp
    if arch.moe:
        m = arch.moe
        k = m.experts_per_token
        moe = 2 * h + k * (3 * m.expert_intermediate_size / tp + h) + 3 * m.shared_intermediate_size / tp
        mlp = max(mlp, moe)
    d = arch.head_dim if arch.mla is None else arch.mla.qk_nope_head_dim + arch.mla.qk_rope_head_dim
    attention = 2 * h + (2 * arch.num_q_heads + 2 * arch.num_kv_heads) * d / tp
    return tokens * max(mlp, attention) * ACTIVATION_BYTES


def activation_reserve_bytes(arch: Architecture, max_num_batched_tokens: int, max_num_seqs: int, tp: int = 1) -> float:
    """Textbook reserve: the largest forward pass the scheduler may launch, plus its logits, one rank.

    forward_activation_peak_bytes(T) for T = max_num_batched_tokens, then the sampler: logits for
    up to S = min(max_num_seqs, T) sequences, BF16 out of lm_head plus an FP32 copy:
    S x vocab x 6 bytes.

    Worked example: Qwen3-8B, T = 2048, S = 1024: 2048 x (8192 + 36864) x 2 = 0.17 GiB, plus
    1024 x 151,936 x 6 = 0.87 GiB, so about 1.04 GiB -- inside design.md's 1.0-1.2 GiB.
    """
    sampled = min(max_num_seqs, max_num_batched_tokens)
    return forward_activation_peak_bytes(arch, max_num_batched_tokens, tp) + sampled * arch.vocab_size * LOGIT_BYTES_PER_ENTRY


def vllm_activation_peak_bytes(arch: Architecture, max_num_batched_tokens: int, max_num_seqs: int, tp: int = 1,
                               sampler_bytes_per_logit: float = VLLM_SAMPLER_BYTES_PER_LOGIT, peak: str = "sum") -> float:
    """The torch peak vLLM's profile run records, one rank.

    vLLM V1 runs a dummy forward pass of max_num_batched_tokens tokens, then samples
    S = min(max_num_seqs, max_num_batched_tokens) rows of logits with top-k and top-p on. The
    logits are gathered to the full vocabulary on every rank, so the sampler term does not shrink
    with tensor parallelism: forward_activation_peak_bytes(T) + S x vocab x 20 bytes.

    Worked example: Qwen3-8B on an H100 with vLLM's defaults (T = 8192, S = 1024):
    8192 x 45,056 x 2 = 0.69 GiB, plus 1024 x 151,936 x 20 = 2.90 GiB: 3.59 GiB.

    Versions differ (sim/data/engine_rules.json): V0 samples one row per dummy sequence after the
    forward pass (the larger of the two); V1 from 0.8 to 0.16 adds the sampler peak to the forward
    peak; from 0.17 it is again the larger of the two.
    """
    sampled = min(max_num_seqs, max_num_batched_tokens)
    forward = forward_activation_peak_bytes(arch, max_num_batched_tokens, tp)
    sampler = sampled * arch.vocab_size * sampler_bytes_per_logit
    return max(forward, sampler) if peak == "max" else forward + sampler


def trtllm_kv_cache_bytes(free_bytes: float, fraction: float, max_tokens: int | None, kv_bytes_per_token: float) -> float:
    """TensorRT-LLM's KV cache, bytes: `fraction` of the memory free after its profiled peak, at most
    max_tokens tokens ("If both `max_tokens` and `free_gpu_memory_fraction` are specified, memory
    corresponding to the minimum will be used", KvCacheConfig). Worked figures from its logs:
    0.9 x 70.48 GiB available = 63.43 GiB ("Allocated 63.44 GiB for max tokens in paged KV cache",
    TensorRT-LLM docs/source/reference/memory.md); 0.9 x 17.83 GiB = 16.05 GiB (issue 4275)."""
    pool = max(free_bytes, 0.0) * fraction
    return pool if max_tokens is None else min(pool, max_tokens * kv_bytes_per_token)


def trtllm_activation_peak_bytes(arch: Architecture, max_num_tokens: int, tp: int = 1) -> float:
    """What TensorRT-LLM's warm-up adds to torch's peak above the weights, one rank.

    The PyTorch backend runs dummy context requests of max_num_tokens tokens in all (each at most
    max_seq_len - 1 long) through one step and records torch's peak (`configure_kv_cache_capacity`,
    "Memory dynamically allocated during inference (inside torch)"). Context requests sample only
    their last token, so the logits are a few rows and the peak is the forward pass:
    forward_activation_peak_bytes(max_num_tokens). Worked example: Qwen3-8B at the default 8192
    tokens: 8192 x 45,056 x 2 = 0.69 GiB. Not modelled: CUDA graph pools, autotuner and attention
    workspaces (tens to hundreds of MiB in TensorRT-LLM's logs).
    """
    return forward_activation_peak_bytes(arch, max_num_tokens, tp)


def vllm_layer_blocks_per_request(arch: Architecture, max_model_len: int, block_size_tokens: int, max_num_batched_tokens: int) -> int:
    """Per-layer blocks one request of max_model_len tokens needs under vLLM's KV cache manager.

    Full-attention layers: ceil(L / block). Sliding-window layers keep only the window plus the
    tokens one step may add: ceil(min(window - 1 + T, L) / block) + 1 (vLLM's
    `SlidingWindowSpec.max_memory_usage_bytes`). Summed over layers, so a hybrid model (Gemma)
    and a full-attention one share one formula.
    """
    b = block_size_tokens

    def blocks(window: int) -> int:
        if not window:
            return -(-max_model_len // b)
        window_tokens = min(window - 1 + max_num_batched_tokens, max_model_len)
        return -(-window_tokens // b) + 1

    return round(arch.layer_mean(blocks) * arch.kv_layers)


def weight_bytes_total(arch: Architecture, weight_bytes_per_param: float, embedding_bytes_per_param: float | None = None) -> float:
    """Bytes of all weights (every rank together). Quantized checkpoints keep the embedding and
    lm_head in BF16 (embedding_bytes_per_param = 2); the textbook stores everything alike."""
    if embedding_bytes_per_param is None or embedding_bytes_per_param == weight_bytes_per_param:
        return arch.params_total * weight_bytes_per_param
    emb = arch.params_embedding
    return (arch.params_total - emb) * weight_bytes_per_param + emb * embedding_bytes_per_param


def weight_bytes_per_rank(arch: Architecture, weight_bytes_per_param: float, tp: int,
                          embedding_bytes_per_param: float | None = None, attention_dp: int = 1, pp: int = 1) -> float:
    """Bytes of weights one of tp tensor-parallel ranks loads: its 1/tp shard of every split
    projection plus, whole, what every rank replicates (Architecture.params_replicated); with
    attention_dp, attention split over its group's tp / attention_dp ranks (Architecture.per_rank).
    With pp pipeline stages, the fullest stage's rank: its ceil(layers / pp) layers and one vocabulary
    matrix (the first stage's embedding or the last's lm_head; vLLM splits layers evenly)."""
    total = weight_bytes_total(arch, weight_bytes_per_param, embedding_bytes_per_param)
    if pp == 1:
        return arch.per_rank(total / weight_bytes_per_param, tp, attention_dp) * weight_bytes_per_param
    vocab = arch.vocab_size * arch.hidden_size
    body = arch.per_rank(arch.params_total - arch.params_embedding, tp, attention_dp) * weight_bytes_per_param
    return body * arch.stage_fraction(pp) + vocab / tp * (embedding_bytes_per_param or weight_bytes_per_param)


@dataclass(frozen=True)
class MemoryBudget:
    """One rank's HBM, in fill order. All figures in bytes.

    Invariant: kv_pool_bytes <= usable_bytes - weight_bytes - non_torch_bytes -
    activation_reserve_bytes (equal before rounding to whole tokens or blocks), never negative.
    """

    engine: str
    capacity_bytes: float  # what the accounting starts from (nominal or driver-reported)
    usable_bytes: float  # capacity x gpu_memory_utilization (sglang: mem_fraction_static x measured total)
    weight_bytes: float
    non_torch_bytes: float  # subtracted inside the budget (vllm: cuBLAS, NCCL)
    activation_reserve_bytes: float  # subtracted inside the budget (0 for sglang: its share is outside)
    kv_pool_bytes: float  # never negative; 0 when the weights do not fit
    kv_pool_tokens: int  # whole tokens (whole blocks under vllm and sglang accounting)
    weights_fit: bool
    startup_bytes: float = 0.0  # sglang: CUDA context and NCCL, used before SGLang measures its total
    num_blocks: int = 0  # vllm: blocks of block_size_tokens across all layers
    free_bytes: float = 0.0  # tensorrt-llm: total - peak (start-up, weights, warm-up), of which its fraction goes to KV

    @property
    def activation_room_bytes(self) -> float:
        """sglang: what its fraction leaves for activations and CUDA graphs, (1 - f) of the total it measures
        (the card less the start-up)."""
        return self.capacity_bytes - self.startup_bytes - self.usable_bytes

    @property
    def context_reserve_bytes(self) -> float:
        """The part of the card outside the budget (1 - utilization, or 1 - mem_fraction_static)."""
        return self.capacity_bytes - self.usable_bytes


def pool_tokens_with_draft(mem: MemoryBudget, kv_bytes_per_token: float, draft_kv_bytes_per_token: float,
                           block_size_tokens: int) -> int:
    """Tokens the pool holds when a speculative draft's cache shares it: each token's slot holds the
    target's and the draft's layers (vLLM sizes one page over all layers, the draft's included), so
    the pool holds fewer tokens of the pair than `mem.kv_pool_tokens` counts in the target's alone;
    whole blocks under the engines' accounting, as the pool itself."""
    per_token = kv_bytes_per_token + draft_kv_bytes_per_token
    tokens = int(mem.kv_pool_bytes // per_token) if per_token > 0 else 0
    return tokens if mem.engine == "textbook" else tokens // block_size_tokens * block_size_tokens


def budget(
    *,
    arch: Architecture,
    gpu: GPU,
    engine: str,
    tp: int,
    weight_bytes_per_param: float,
    kv_bytes_per_token: float,
    gpu_memory_utilization: float,
    mem_fraction_static: float,
    max_num_batched_tokens: int,
    max_num_seqs: int,
    block_size_tokens: int,
    rules=None,
    embedding_bytes_per_param: float | None = None,
    draft_weight_bytes: float = 0.0,
    attention_dp: int = 1,
    pp: int = 1,
    kv_cache_free_gpu_mem_fraction: float = 0.9,
    kv_cache_max_tokens: int | None = None,
) -> MemoryBudget:
    """The budget of one rank under one accounting mode (limits already resolved, see
    engine_defaults.resolve). kv_bytes_per_token is this rank's, over all layers. `rules` (an
    engine_rules.EngineRules) selects the engine version's profiling rules; embedding_bytes_per_param
    is set when a quantized checkpoint keeps its embedding and lm_head in BF16; draft_weight_bytes
    is a speculative draft model's weights on this rank, loaded beside the target's. The last two
    are TensorRT-LLM's KvCacheConfig (free_gpu_memory_fraction, max_tokens)."""
    weight_bytes = (weight_bytes_per_rank(arch, weight_bytes_per_param, tp, embedding_bytes_per_param, attention_dp, pp)
                    + draft_weight_bytes)
    startup = 0.0
    num_blocks = 0
    free = 0.0
    if engine == "textbook":
        capacity = gpu.memory_bytes
        usable = capacity * gpu_memory_utilization
        non_torch = 0.0
        reserve = activation_reserve_bytes(arch, max_num_batched_tokens, max_num_seqs, tp)
    elif engine == "vllm":
        capacity = gpu.memory_reported_bytes
        usable = capacity * gpu_memory_utilization
        if rules is None:
            non_torch = VLLM_NON_TORCH_BYTES + (NCCL_BYTES if tp > 1 else 0.0)
            reserve = vllm_activation_peak_bytes(arch, max_num_batched_tokens, max_num_seqs, tp)
        else:
            # With tp > 1 every rank holds the same shapes here, so the pool (the minimum over
            # ranks in vLLM) is any rank's.
            non_torch = rules.non_torch_tp_bytes if tp > 1 else rules.non_torch_bytes
            reserve = vllm_activation_peak_bytes(arch, max_num_batched_tokens, max_num_seqs, tp,
                                                 rules.sampler_bytes_per_logit, rules.peak)
    elif engine == "sglang":
        capacity = gpu.memory_reported_bytes
        startup = CUDA_CONTEXT_BYTES + (NCCL_BYTES if tp > 1 else 0.0)
        usable = max(capacity - startup, 0.0) * mem_fraction_static
        non_torch = 0.0
        reserve = 0.0
    elif engine == "tensorrt-llm":
        capacity = gpu.memory_reported_bytes
        startup = CUDA_CONTEXT_BYTES + (NCCL_BYTES if tp > 1 else 0.0)  # outside torch, inside the measured peak
        non_torch = 0.0  # counted in startup: the peak TensorRT-LLM measures includes it
        reserve = trtllm_activation_peak_bytes(arch, max_num_batched_tokens, tp)
        free = max(capacity - startup - weight_bytes - reserve, 0.0)
        # The budget is what the engine may fill: weights, warm-up peak and its fraction of the
        # free memory; the (1 - fraction) of the free memory stays outside, with the start-up.
        usable = min(weight_bytes + reserve, capacity - startup) + kv_cache_free_gpu_mem_fraction * free
    else:  # validated upstream; kept for callers that build budgets directly
        raise ValueError(f"unknown engine {engine!r}")
    if engine == "tensorrt-llm":
        pool = trtllm_kv_cache_bytes(free, kv_cache_free_gpu_mem_fraction, kv_cache_max_tokens, kv_bytes_per_token)
    else:
        pool = max(usable - weight_bytes - non_torch - reserve, 0.0)
    tokens = int(pool // kv_bytes_per_token) if kv_bytes_per_token > 0 else 0
    if engine == "vllm":
        # num_blocks = available // page_size // num_layers, page_size being one layer's block.
        num_blocks = tokens // block_size_tokens
        tokens = num_blocks * block_size_tokens
        pool = tokens * kv_bytes_per_token
    elif engine in ("sglang", "tensorrt-llm"):
        # Whole pages (kvlab's block size plays SGLang's --page-size and TensorRT-LLM's
        # tokens_per_block, whose default is 32: "Number of tokens per block: 32.").
        tokens = tokens // block_size_tokens * block_size_tokens
        pool = tokens * kv_bytes_per_token
    return MemoryBudget(
        engine=engine,
        capacity_bytes=capacity,
        usable_bytes=usable,
        weight_bytes=weight_bytes,
        non_torch_bytes=non_torch,
        activation_reserve_bytes=reserve,
        kv_pool_bytes=pool,
        kv_pool_tokens=tokens,
        weights_fit=weight_bytes + non_torch + reserve < usable,
        startup_bytes=startup,
        num_blocks=num_blocks,
        free_bytes=free,
    )
