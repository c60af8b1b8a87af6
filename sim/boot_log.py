"""Engine-style log lines: what a user would read when the engine boots, and why the batch stopped.

The figures come from `memory.budget` and `evaluate`; this module only words them. Lines that
mimic an engine's own log keep that engine's wording (vLLM's "GPU KV cache size: N tokens",
SGLang's "max_total_num_tokens=N", TensorRT-LLM's "[MemUsageChange] Allocated X GiB for max tokens
in paged KV cache (N).") so a student can match them against a real boot, with one honest change:
SGLang labels sizes "GB" that it computes in GiB; kvlab writes GiB.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .architecture import Architecture
from .engine_defaults import EngineLimits, sglang_mem_fraction_static, sglang_reserve_estimate_bytes
from .memory import MemoryBudget, vllm_layer_blocks_per_request
from .parallelism import rank_holds_line
from .scenario import Scenario
from .units import GIB, MIB


def gib(x: float) -> str:
    return f"{x / GIB:.2f} GiB"


@dataclass(frozen=True)
class BootFacts:
    """What the log needs from one evaluation (all bytes per rank)."""

    scenario: Scenario
    arch: Architecture
    mem: MemoryBudget
    limits: EngineLimits
    kv_bytes_per_token: float
    per_seq_bytes: float
    max_sequences: int
    batch: int
    batch_limited_by: str  # "concurrency", "kv_pool" or "max_num_seqs"
    max_model_len: int
    max_concurrency: float
    refusal: int | None  # vllm: the longest max_model_len that fits, when one request does not
    refused: dict | None = None  # sim's verdict (admission.refusal_of): {"reason", "message"} when nothing runs
    rank_holds: dict | None = None  # what each GPU holds (sim.parallelism.rank_holds, from the setup)


def _error(log: list[str], warnings: list[str], msg: str) -> None:
    warnings.append(msg)
    log.append("ERROR " + msg)


def _header(f: BootFacts) -> list[str]:
    s, mem = f.scenario, f.mem
    rank = f" per rank (tp={s.tp})" if s.tp > 1 else ""
    parallel = [rank_holds_line(f.rank_holds)] if f.rank_holds and f.rank_holds["gpus"] > 1 else []
    if s.engine == "sglang":
        total = mem.capacity_bytes - mem.startup_bytes
        return parallel + [
            f"Init torch distributed ends. mem usage={gib(mem.startup_bytes)} (CUDA context"
            + (" and NCCL" if s.tp > 1 else "") + f"); total_gpu_memory={gib(total)}",
            f"Load weight end. mem usage={gib(mem.weight_bytes)}{rank}, avail mem={gib(max(total - mem.weight_bytes, 0))}",
            f"mem_fraction_static={f.limits.mem_fraction_static:.3f}"
            + ("" if s.mem_fraction_static is not None else " (SGLang's default for this GPU)")
            + f": weights + KV pool may use {f.limits.mem_fraction_static:.3f} x {gib(total)} = {gib(mem.usable_bytes)}; "
              f"the rest ({gib(mem.activation_room_bytes)}) is left for activations and CUDA graphs.",
            _sglang_room_line(f),
        ]
    if s.engine == "tensorrt-llm":
        f_kv = f.limits.kv_cache_free_gpu_mem_fraction
        peak = mem.startup_bytes + mem.weight_bytes + mem.activation_reserve_bytes
        return parallel + [
            f"Memory used after loading model weights (inside torch) in memory usage profiling: {gib(mem.weight_bytes)}{rank}",
            f"Memory dynamically allocated during inference (inside torch) in memory usage profiling: "
            f"{gib(mem.activation_reserve_bytes)} (a warm-up of max_num_tokens={f.limits.max_num_batched_tokens:,})",
            f"Peak memory during memory usage profiling (torch + non-torch): {gib(peak)} (CUDA context"
            + (" and NCCL" if s.tp > 1 else "") + f" {gib(mem.startup_bytes)} included), available KV cache memory when "
            f"calculating max tokens: {gib(f_kv * mem.free_bytes)}, fraction is set {f_kv:g}"
            + ("" if s.kv_cache_free_gpu_mem_fraction is not None else " (TensorRT-LLM's default)")
            + f", kv size per token is {f.kv_bytes_per_token:,.0f}. device total memory {gib(mem.capacity_bytes)}"
            + (f": the cache takes {f_kv:g} x ({gib(mem.capacity_bytes)} - {gib(peak)}) of what is free; "
               f"the other {gib((1 - f_kv) * mem.free_bytes)} stays free." if mem.free_bytes > 0 else "."),
        ] + ([f"max_tokens={s.kv_cache_max_tokens:,} is provided. It limits max memory to "
              f"{gib(s.kv_cache_max_tokens * f.kv_bytes_per_token)}."] if s.kv_cache_max_tokens is not None else [])
    basis = "reported by the driver" if s.engine == "vllm" else "nominal"
    lines = [f"Usable memory: {s.gpu_memory_utilization:.2f} x {gib(mem.capacity_bytes)} ({basis}) = {gib(mem.usable_bytes)}; "
             f"model weights take {gib(mem.weight_bytes)}{rank}; activation reserve {gib(mem.activation_reserve_bytes)}"
             + (f"; non-torch memory {gib(mem.non_torch_bytes)}" if mem.non_torch_bytes else "") + "."]
    if s.engine == "vllm":
        lines.insert(0, f"Model loading took {mem.weight_bytes / GIB:.4f} GiB")
        lines.append(f"Profiling a forward pass of max_num_batched_tokens={f.limits.max_num_batched_tokens:,} and sampling "
                     f"min(max_num_seqs={f.limits.max_num_seqs:,}, that) rows: torch peak memory increase "
                     f"{gib(mem.activation_reserve_bytes)}; non-torch forward increase memory {gib(mem.non_torch_bytes)}.")
    return parallel + lines


def _sglang_room_line(f: BootFacts) -> str:
    """SGLang's own estimate of what activations and CUDA graphs need, beside what the fraction leaves them."""
    mem, limits, tp = f.mem, f.limits, f.scenario.tp
    estimate = sglang_reserve_estimate_bytes(mem.capacity_bytes, tp, limits)
    default = sglang_mem_fraction_static(mem.capacity_bytes / MIB, tp, limits.max_num_batched_tokens, limits.cuda_graph_max_bs or 0)
    return (f"SGLang sets its default fraction ({default:.3f}) from its own estimate of that need: {gib(estimate)} for "
            f"{limits.max_num_batched_tokens:,}-token prefill chunks and CUDA graphs up to batch {limits.cuda_graph_max_bs}. "
            f"This setting leaves {mem.activation_room_bytes / estimate:.0%} of it; much less can run out of memory at "
            "start-up or at the first long prefill.")


def _weights_do_not_fit(f: BootFacts) -> str:
    s, mem = f.scenario, f.mem
    if s.engine == "tensorrt-llm":
        room = mem.capacity_bytes - mem.startup_bytes
        return (f"Model weights ({gib(mem.weight_bytes)}) and the warm-up's activation peak "
                f"({gib(mem.activation_reserve_bytes)}) do not fit in the {gib(room)} left after the CUDA context: no memory "
                f"is free for a KV cache, whatever kv_cache_free_gpu_mem_fraction is. Quantize the weights, shard them "
                f"with tensor parallelism, or lower max_num_tokens.")
    if s.engine == "sglang":
        knob, value = "mem_fraction_static", f.limits.mem_fraction_static
        base = mem.capacity_bytes - mem.startup_bytes
        need = mem.weight_bytes / base if base > 0 else math.inf
        usable = mem.usable_bytes
    else:
        knob, value = "gpu_memory_utilization", s.gpu_memory_utilization
        base = mem.capacity_bytes
        need = (mem.weight_bytes + mem.non_torch_bytes + mem.activation_reserve_bytes) / base
        usable = mem.usable_bytes - mem.non_torch_bytes
    msg = (f"Model weights need {gib(mem.weight_bytes)} but only {gib(usable)} is usable "
           f"({knob} {value:.2f} x {gib(base)}). ")
    msg += f"Raise {knob} to at least {math.ceil(need * 100) / 100:.2f}, " if need < 1 else "The card is too small: "
    return msg + "quantize the weights, or shard them with tensor parallelism."


def warns(mem: MemoryBudget, refusal: int | None, max_sequences: int) -> bool:
    """Whether budget_lines will add a warning (the error branches below, in the same order), so
    that evaluate() can build the log lazily whenever nothing needs saying now."""
    return (mem.weight_bytes + mem.non_torch_bytes >= mem.usable_bytes or mem.kv_pool_bytes <= 0
            or refusal is not None or max_sequences == 0)


def budget_lines(log: list[str], warnings: list[str], f: BootFacts) -> None:
    """Append the boot lines and the batch reason; problems go to both `log` and `warnings`."""
    s, mem = f.scenario, f.mem
    log.extend(_header(f))
    if mem.weight_bytes + mem.non_torch_bytes >= mem.usable_bytes or (s.engine == "tensorrt-llm" and mem.free_bytes <= 0):
        _error(log, warnings, _weights_do_not_fit(f))
        return
    if mem.kv_pool_bytes <= 0:
        _error(log, warnings, f"Weights fit but the activation reserve ({gib(mem.activation_reserve_bytes)}) leaves no room for a KV pool; "
                              "lower max_num_batched_tokens or max_num_seqs.")
        return
    if s.engine == "sglang":
        if f.arch.mla is not None:
            log.append(f"KV Cache is allocated. #tokens: {mem.kv_pool_tokens:,}, KV size: {gib(mem.kv_pool_bytes)}")
        else:
            log.append(f"KV Cache is allocated. #tokens: {mem.kv_pool_tokens:,}, K size: {gib(mem.kv_pool_bytes / 2)}, "
                       f"V size: {gib(mem.kv_pool_bytes / 2)}")
        log.append(f"max_total_num_tokens={mem.kv_pool_tokens:,}, chunked_prefill_size={f.limits.max_num_batched_tokens:,}, "
                   f"max_running_requests={f.limits.max_num_seqs:,}, context_len={f.max_model_len:,}")
    elif s.engine == "tensorrt-llm":
        log.append(f"Number of tokens per block: {s.block_size_tokens}.")
        log.append(f"[MemUsageChange] Allocated {gib(mem.kv_pool_bytes)} for max tokens in paged KV cache "
                   f"({mem.kv_pool_tokens:,}).")
        log.append(f"max_seq_len={f.max_model_len:,}, max_num_requests={f.limits.max_num_seqs:,}, "
                   f"max_num_tokens={f.limits.max_num_batched_tokens:,}, max_batch_size={f.limits.max_num_seqs:,}")
    else:
        if s.engine == "vllm":
            available = mem.usable_bytes - mem.weight_bytes - mem.non_torch_bytes - mem.activation_reserve_bytes
            log.append(f"Available KV cache memory: {gib(available)}")
        log.append(f"GPU KV cache size: {mem.kv_pool_tokens:,} tokens ({gib(mem.kv_pool_bytes)})")
        log.append(f"Maximum concurrency for {f.max_model_len:,} tokens per request: {f.max_concurrency:.2f}x")
    if f.refusal is not None:
        b = s.block_size_tokens
        layer_blocks = vllm_layer_blocks_per_request(f.arch, f.max_model_len, b, f.limits.max_num_batched_tokens)
        need = layer_blocks * b * f.kv_bytes_per_token / f.arch.num_layers
        fit = (f"Based on the available memory, the estimated maximum model length is {f.refusal:,}."
               if f.refusal > 0 else "Not even one token fits.")
        _error(log, warnings, f"vLLM refuses to start: to serve at least one request of max_model_len {f.max_model_len:,} "
                              f"tokens, about {gib(need)} of KV cache is needed, more than the {gib(mem.kv_pool_bytes)} available. "
                              f"{fit} Set max_model_len lower or raise gpu_memory_utilization.")
        return
    if f.max_sequences == 0:
        ctx = s.prompt_tokens + s.output_tokens
        fits = int(mem.kv_pool_bytes // (f.per_seq_bytes / ctx)) - s.output_tokens if f.per_seq_bytes else 0
        hint = (f"the longest prompt that fits with {s.output_tokens:,} output tokens is about {fits:,} tokens"
                if fits > 0 else "not even the output alone fits")
        _error(log, warnings, f"One sequence of {ctx:,} tokens needs {gib(f.per_seq_bytes)} of KV cache but the pool is "
                              f"{gib(mem.kv_pool_bytes)}: no request fits; {hint}.")
        return
    if f.refused is not None:  # refused for a reason none of the lines above names (a request past the context)
        _error(log, warnings, f.refused["message"])
        return
    seqs_knob = {"sglang": "max_running_requests", "tensorrt-llm": "max_batch_size"}.get(s.engine, "max_num_seqs")
    if f.batch_limited_by == "concurrency":
        reason = f"all {s.concurrency} concurrent requests fit (the pool could hold {f.max_sequences})"
    elif f.batch_limited_by == "kv_pool":
        reason = (f"the KV pool holds {f.max_sequences} sequences of {gib(f.per_seq_bytes)} each; "
                  f"{s.concurrency - f.max_sequences} of {s.concurrency} requests wait")
    else:
        reason = f"{seqs_knob}={f.limits.max_num_seqs} caps the scheduler below the pool's {f.max_sequences}"
    log.append(f"Batch of {f.batch}: {reason}.")


def profile_line(profile, gpu, machine, prompt_tokens: int, batch: int) -> str:
    """Which efficiency profile produced the times below, and the fractions it applied."""
    fp8 = machine.low_precision_compute
    gemm = (f"GEMMs reach {profile.compute_efficiency(prompt_tokens, fp8):.0%} of {machine.peak_flops / 1e12:,.0f} TFLOP/s "
            f"in the prefill")
    if batch > 0:
        gemm += f" and {profile.compute_efficiency(batch, fp8):.0%} in a {batch}-token decode step"
    line = (f"Efficiency profile {profile.name} ({profile.provenance_kind}): HBM reads reach {profile.bandwidth_efficiency:.0%} "
            f"of {gpu.hbm_bandwidth_bytes_per_s / 1e12:.2f} TB/s; {gemm}.")
    if profile.per_kernel:
        line += (f" Per-kernel step model: each kernel (QKV, attention, O, MLP, lm_head) takes the longer of its bytes "
                 f"and its FLOPs, plus {profile.kernel_overhead_s * 1e6:g} us for each of {machine.kernels_per_step():,} "
                 f"kernels per step")
        extra = machine.extra_kernels_per_step()
        if extra and profile.latency_kernel_s:
            line += (f", and {profile.latency_kernel_s * 1e6:g} us more for each of the {extra:,} small kernels its MoE and "
                     f"MLA layers add")
        line += "."
    return line
