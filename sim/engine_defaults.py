"""The scheduler limits an engine picks for itself when the user leaves them unset.

vLLM and SGLang both size their activation headroom from two knobs -- the token budget of one
forward step and the number of sequences the scheduler may run -- and both choose those knobs
from the GPU they find. A `Scenario` field left at None means "what this engine would choose";
this module turns that into numbers, so the memory budget and the log read like the real boot.

Engine versions followed (read from their source; see docs/sim.md for the exact files):

- vLLM V1, v0.10-v0.11: `EngineArgs` batch defaults for the OpenAI-compatible server
  (`vllm serve`): a GPU with at least 70 GiB whose name does not contain "a100" gets
  max_num_batched_tokens 8192 and max_num_seqs 1024; every other GPU gets 2048 and 256.
  max_model_len defaults to the model's own context (max_position_embeddings).
- SGLang v0.5: `ServerArgs._handle_gpu_memory_settings` picks chunked_prefill_size and
  cuda_graph_max_bs by memory tier, then derives mem_fraction_static from them; the running
  request cap comes from `ModelRunner.init_memory_pool`.
- TensorRT-LLM 1.x (LLM API and trtllm-serve, PyTorch backend): `BaseLlmArgs` defaults
  max_num_tokens 8192 and max_batch_size 2048 whatever the GPU (tensorrt_llm/llmapi/llm_args.py:
  "max_batch_size: Optional[int] = Field(default=2048" ... "max_num_tokens: Optional[int] = Field(
  default=8192"), and KvCacheConfig.free_gpu_memory_fraction 0.9 ("free_gpu_memory_fraction:
  ... = Field(default=0.9").
- textbook: seed 002's panel, 2048 tokens per step and 1024 sequences whatever the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from .catalog import GPU
from .units import GIB, MIB

TEXTBOOK_MAX_NUM_BATCHED_TOKENS = 2048
TEXTBOOK_MAX_NUM_SEQS = 1024

# vLLM EngineArgs: "For GPUs like H100 and MI300x, use larger default values"; A100 is excluded by
# name because a large token budget measured slower there (vLLM PR #17885).
VLLM_LARGE_GPU_BYTES = 70 * GIB
VLLM_LARGE_GPU_DEFAULTS = (8192, 1024)  # (max_num_batched_tokens, max_num_seqs), OpenAI server
VLLM_OTHER_GPU_DEFAULTS = (2048, 256)

# SGLang memory tiers, upper bounds in MiB of total GPU memory: (bound, chunked_prefill_size,
# cuda_graph_max_bs for tp < 4, cuda_graph_max_bs for tp >= 4). Comments name the GPUs SGLang's
# own source puts in each tier.
SGLANG_TIERS_MIB = (
    (20 * 1024, 2048, 8, 8),  # T4, RTX 4080
    (35 * 1024, 2048, 24, 80),  # A10, RTX 4090, L4
    (60 * 1024, 4096, 32, 160),  # A100 40GB, L40S
    (90 * 1024, 8192, 256, 512),  # H100, A100 80GB
    (160 * 1024, 8192, 256, 512),  # H200, H20
)
SGLANG_LARGEST_TIER = (16384, 512, 512)  # B200, MI300X
# SGLang's reserved_mem estimate, in MiB: constant attention metadata, 1.5 MiB per token of the
# prefill chunk (at least 2048 tokens), 2 MiB per CUDA-graph batch slot, 1 GiB per 8 ranks, and
# never less than 10 GiB on a card above 60 GiB.
SGLANG_RESERVED_CONSTANT_MIB = 512
SGLANG_RESERVED_MIB_PER_CHUNK_TOKEN = 1.5
SGLANG_RESERVED_MIB_PER_GRAPH_BS = 2
SGLANG_RESERVED_FLOOR_MIB = 10 * 1024
SGLANG_RESERVED_FLOOR_ABOVE_MIB = 60 * 1024
# ModelRunner.init_memory_pool: max_running_requests = clamp(pool_tokens / context_len x 512, 2048, 4096).
SGLANG_REQS_PER_CONTEXT = 512
SGLANG_MIN_RUNNING_REQUESTS = 2048
SGLANG_MAX_RUNNING_REQUESTS = 4096

# TensorRT-LLM's LLM API defaults (BaseLlmArgs in tensorrt_llm/llmapi/llm_args.py): the same on every GPU.
TRTLLM_DEFAULTS = (8192, 2048)  # (max_num_tokens, max_batch_size)
TRTLLM_FREE_GPU_MEMORY_FRACTION = 0.9  # KvCacheConfig.free_gpu_memory_fraction


@dataclass(frozen=True)
class EngineLimits:
    """The scheduler limits one evaluation runs under, user settings and engine defaults merged.

    max_num_seqs is None for SGLang until the pool is known (its default depends on the pool);
    `sglang_max_running_requests` fills it in. mem_fraction_static and cuda_graph_max_bs are
    SGLang's only; kv_cache_free_gpu_mem_fraction TensorRT-LLM's only.
    """

    engine: str
    max_num_batched_tokens: int
    max_num_seqs: int | None
    mem_fraction_static: float | None = None
    cuda_graph_max_bs: int | None = None
    kv_cache_free_gpu_mem_fraction: float | None = None


def vllm_batch_defaults(gpu: GPU) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) that `vllm serve` picks on this GPU.

    vLLM reads the total memory the driver reports, so an 80 GB H100 (79.2 GiB) clears 70 GiB and
    an L40S (44.4 GiB) does not. Example: h100-sxm -> (8192, 1024); a100-80 -> (2048, 256).
    """
    large = gpu.memory_reported_bytes >= VLLM_LARGE_GPU_BYTES and "a100" not in gpu.name.lower()
    return VLLM_LARGE_GPU_DEFAULTS if large else VLLM_OTHER_GPU_DEFAULTS


def sglang_gpu_memory_mib(gpu: GPU) -> float:
    """The GPU memory SGLang's heuristics read, MiB. SGLang asks nvidia-smi for the total, which is
    a few hundred MiB above what PyTorch reports; kvlab uses the reported total it has data for."""
    return gpu.memory_reported_bytes / MIB


def sglang_tier(gpu_memory_mib: float, tp: int) -> tuple[int, int]:
    """(chunked_prefill_size, cuda_graph_max_bs) SGLang picks for this memory and tp."""
    for bound, chunk, bs_small_tp, bs_large_tp in SGLANG_TIERS_MIB:
        if gpu_memory_mib < bound:
            return chunk, (bs_small_tp if tp < 4 else bs_large_tp)
    chunk, bs_small_tp, bs_large_tp = SGLANG_LARGEST_TIER
    return chunk, (bs_small_tp if tp < 4 else bs_large_tp)


def sglang_reserved_mib(gpu_memory_mib: float, tp: int, chunked_prefill_size: int, cuda_graph_max_bs: int) -> float:
    """What SGLang reserves outside weights and pool for activations, CUDA graphs and metadata, MiB:
    512 + 1.5 x max(chunk, 2048) + 2 x cuda_graph_max_bs + 1024 x tp / 8, at least 10 GiB on cards
    above 60 GiB. Example, H100 SXM at tp 1: 512 + 12,288 + 512 + 128 = 13,440 MiB."""
    reserved = (SGLANG_RESERVED_CONSTANT_MIB
                + SGLANG_RESERVED_MIB_PER_CHUNK_TOKEN * max(chunked_prefill_size, 2048)
                + SGLANG_RESERVED_MIB_PER_GRAPH_BS * cuda_graph_max_bs
                + tp / 8 * 1024)
    if gpu_memory_mib > SGLANG_RESERVED_FLOOR_ABOVE_MIB:
        reserved = max(reserved, SGLANG_RESERVED_FLOOR_MIB)
    return reserved


def sglang_mem_fraction_static(gpu_memory_mib: float, tp: int, chunked_prefill_size: int, cuda_graph_max_bs: int) -> float:
    """SGLang's default mem_fraction_static: (memory - reserved) / memory, rounded to 3 places
    (reserved: `sglang_reserved_mib`). Worked example, H100 SXM at tp 1 (79.19 GiB reported, 81,090
    MiB): (81,090 - 13,440) / 81,090 = 0.834."""
    reserved = sglang_reserved_mib(gpu_memory_mib, tp, chunked_prefill_size, cuda_graph_max_bs)
    # A card smaller than SGLang's own reserve would give a negative fraction; SGLang would then
    # fail to start. Keep the fraction inside the field's range so the budget reports "weights
    # do not fit" instead of arithmetic on a negative share.
    return min(max(round((gpu_memory_mib - reserved) / gpu_memory_mib, 3), 0.05), 1.0)


def sglang_reserve_estimate_bytes(gpu_memory_bytes: float, tp: int, limits: EngineLimits) -> float:
    """SGLang's own estimate of what activations and CUDA graphs need beside weights and pool under
    `limits` (`sglang_reserved_mib` at its chunk and CUDA-graph batch), from which it sets its default
    fraction. A fraction that leaves much less can run out of memory at start-up or at the first long
    prefill (seed 001: 0.85 served; 0.93, which left under half of it, did not)."""
    return sglang_reserved_mib(gpu_memory_bytes / MIB, tp, limits.max_num_batched_tokens, limits.cuda_graph_max_bs or 0) * MIB


def sglang_max_running_requests(pool_tokens: int, context_len: int) -> int:
    """SGLang's default cap on running requests: pool_tokens / context_len x 512, clamped to
    [2048, 4096]. Example: 370,000 pool tokens, 40,960 context -> 4,624 -> 4096."""
    scaled = int(pool_tokens / context_len * SGLANG_REQS_PER_CONTEXT) if context_len else 0
    return min(max(scaled, SGLANG_MIN_RUNNING_REQUESTS), SGLANG_MAX_RUNNING_REQUESTS)


def resolve(engine: str, gpu: GPU, tp: int, max_num_batched_tokens: int | None, max_num_seqs: int | None,
            mem_fraction_static: float | None, kv_cache_free_gpu_mem_fraction: float | None = None) -> EngineLimits:
    """Merge the user's settings (None = unset) with the engine's defaults for this GPU."""
    if engine == "tensorrt-llm":
        tokens, seqs = TRTLLM_DEFAULTS
        fraction = kv_cache_free_gpu_mem_fraction if kv_cache_free_gpu_mem_fraction is not None else TRTLLM_FREE_GPU_MEMORY_FRACTION
        return EngineLimits(engine, max_num_batched_tokens or tokens, max_num_seqs or seqs,
                            kv_cache_free_gpu_mem_fraction=fraction)
    if engine == "vllm":
        tokens, seqs = vllm_batch_defaults(gpu)
        return EngineLimits(engine, max_num_batched_tokens or tokens, max_num_seqs or seqs)
    if engine == "sglang":
        mib = sglang_gpu_memory_mib(gpu)
        chunk, graph_bs = sglang_tier(mib, tp)
        chunk = max_num_batched_tokens or chunk
        fraction = mem_fraction_static if mem_fraction_static is not None else sglang_mem_fraction_static(mib, tp, chunk, graph_bs)
        return EngineLimits(engine, chunk, max_num_seqs, fraction, graph_bs)
    return EngineLimits(engine, max_num_batched_tokens or TEXTBOOK_MAX_NUM_BATCHED_TOKENS,
                        max_num_seqs or TEXTBOOK_MAX_NUM_SEQS)
