"""The HBM budget: how a serving engine carves one GPU's memory, in fill order.

1. usable = gpu_memory_utilization x capacity (the rest is left to the CUDA context, the
   allocator and the driver);
2. minus the weights (this rank's shard under tensor parallelism);
3. minus an activation / workspace reserve for the largest forward pass the scheduler may launch;
4. whatever is left is the KV pool.

Three accounting modes share that order and differ in the details real engines add:

- ``textbook`` (seed 002): nominal capacity, the reserve of `activation_reserve_bytes`.
- ``vllm``: total memory as the driver reports it, minus weights, non-torch memory (NCCL, cuBLAS
  workspaces) and the profiled activation peak of a `max_num_batched_tokens` forward pass; the
  pool is then cut into whole blocks of `block_size_tokens` (vLLM V1 worker, v0.9-v0.11).
- ``sglang``: `mem_fraction_static` x total memory holds weights plus the pool; the remainder is
  left for activations and CUDA graphs (SGLang `ModelRunner.profile_max_num_token`, v0.4-v0.5).
"""

from __future__ import annotations

from dataclasses import dataclass

from .architecture import Architecture
from .catalog import GPU
from .units import GIB

ACTIVATION_BYTES = 2  # BF16 activations whatever the weight precision (weight-only or W8A8 both dequantize to BF16 outputs)
LOGIT_BYTES_PER_ENTRY = 2 + 4  # BF16 logits from lm_head plus the FP32 copy the sampler works on
# Memory outside PyTorch's allocator that vLLM's profiler finds on one GPU (cuBLAS workspaces, the
# sampler's tensors); NCCL buffers add to it once ranks must communicate.
VLLM_NON_TORCH_BYTES = 0.15 * GIB
VLLM_NCCL_BYTES = 0.5 * GIB
# SGLang's free memory after weight loading already excludes the CUDA context.
CUDA_CONTEXT_BYTES = 0.5 * GIB


def activation_reserve_bytes(arch: Architecture, max_num_batched_tokens: int, max_num_seqs: int, tp: int = 1) -> float:
    """Peak transient memory of the largest forward pass the scheduler may launch, one rank.

    Layers run one after another, so only one layer's intermediates are alive at a time. With
    T = max_num_batched_tokens tokens in the pass, the widest moment is inside the MLP, where the
    residual stream (h), the normalised input (h), the fused gate-and-up output (2 I) and the
    activated product (I) coexist: T x (2h + 3I) x 2 bytes. Attention's q, k, v and output
    ((q + 2 kv + q) x head_dim per token) are checked too. MoE layers route each token to k
    experts, so I becomes k x expert width (plus shared experts). Then the sampler: logits for up
    to S = min(max_num_seqs, T) sequences, BF16 out of lm_head plus an FP32 copy: S x vocab x 6.

    Worked example: Qwen3-8B, T = 2048, S = 1024: 2048 x (8192 + 36864) x 2 = 0.17 GiB, plus
    1024 x 151,936 x 6 = 0.87 GiB, so about 1.04 GiB -- inside design.md's 1.0-1.2 GiB.
    """
    h = arch.hidden_size
    width = arch.intermediate_size if arch.num_moe_layers < arch.num_layers else 0
    if arch.moe:
        m = arch.moe
        width = max(width, m.experts_per_token * m.expert_intermediate_size + m.shared_intermediate_size)
    mlp = 2 * h + 3 * width / tp
    d = arch.head_dim if arch.mla is None else arch.mla.qk_nope_head_dim + arch.mla.qk_rope_head_dim
    attention = 2 * h + (2 * arch.num_q_heads + 2 * arch.num_kv_heads) * d / tp
    tokens = max_num_batched_tokens
    layer_peak = tokens * max(mlp, attention) * ACTIVATION_BYTES
    sampled = min(max_num_seqs, max_num_batched_tokens)
    return layer_peak + sampled * arch.vocab_size * LOGIT_BYTES_PER_ENTRY


@dataclass(frozen=True)
class MemoryBudget:
    """One rank's HBM, in fill order. All figures in bytes."""

    engine: str
    capacity_bytes: float  # what the accounting starts from (nominal or driver-reported)
    usable_bytes: float  # capacity x gpu_memory_utilization (or x mem_fraction_static)
    weight_bytes: float
    non_torch_bytes: float
    activation_reserve_bytes: float
    kv_pool_bytes: float  # never negative; 0 when the weights do not fit
    kv_pool_tokens: int  # whole tokens (whole blocks under vllm accounting)
    weights_fit: bool

    @property
    def context_reserve_bytes(self) -> float:
        """The part of the card the engine leaves alone (1 - utilization)."""
        return self.capacity_bytes - self.usable_bytes


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
) -> MemoryBudget:
    weight_bytes = arch.params_total * weight_bytes_per_param / tp
    reserve = activation_reserve_bytes(arch, max_num_batched_tokens, max_num_seqs, tp)
    non_torch = 0.0
    if engine == "textbook":
        capacity = gpu.memory_bytes
        usable = capacity * gpu_memory_utilization
    elif engine == "vllm":
        capacity = gpu.memory_reported_bytes
        usable = capacity * gpu_memory_utilization
        non_torch = VLLM_NON_TORCH_BYTES + (VLLM_NCCL_BYTES if tp > 1 else 0.0)
    elif engine == "sglang":
        capacity = gpu.memory_reported_bytes
        usable = capacity * mem_fraction_static
        # The activation room is the (1 - mem_fraction_static) share SGLang leaves outside the
        # static pool, not a separate subtraction; the CUDA context comes out of the free memory
        # SGLang measures after loading weights.
        reserve = 0.0
        non_torch = CUDA_CONTEXT_BYTES
    else:  # validated upstream; kept for callers that build budgets directly
        raise ValueError(f"unknown engine {engine!r}")
    free = usable - weight_bytes - non_torch - reserve
    pool = max(free, 0.0)
    tokens = int(pool // kv_bytes_per_token) if kv_bytes_per_token > 0 else 0
    if engine == "vllm":
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
    )
