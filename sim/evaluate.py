"""One full steady-state evaluation: Scenario in, Result out, never an exception for bad input.

Order of the computation follows the data: config.json -> Architecture -> HBM budget -> how many
sequences fit -> the batch -> decode step and prefill on the roofline -> throughput, cost, log.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from . import catalog, memory, roofline
from .architecture import Architecture, bytes_per_token_formula, from_config
from .errors import InputError, Issue
from .profiles import load_profile
from .scenario import Scenario, validate
from .units import DTYPE_BYTES, GIB

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class Result:
    """Everything one evaluation computes. SI units (bytes, seconds, FLOP/s) unless named
    otherwise; figures that do not exist for this scenario (ITL when nothing fits) are None."""

    scenario: dict
    model_name: str = ""
    attention_kind: str = ""
    kv_bytes_per_token: float = 0.0
    kv_formula: str = ""
    params_total: int = 0
    params_active: int = 0
    capacity_bytes: float = 0.0
    usable_bytes: float = 0.0
    context_reserve_bytes: float = 0.0
    weight_bytes: float = 0.0
    non_torch_bytes: float = 0.0
    activation_reserve_bytes: float = 0.0
    kv_pool_bytes: float = 0.0
    kv_pool_tokens: int = 0
    kv_bytes_per_sequence: float = 0.0
    kv_pool_used_bytes: float = 0.0
    max_sequences: int = 0
    batch: int = 0
    batch_limited_by: str = ""
    max_concurrency: float = 0.0
    max_concurrency_tokens: int = 0
    decode_step_s: float | None = None
    itl_s: float | None = None
    decode_weight_read_s: float | None = None
    decode_kv_read_s: float | None = None
    decode_compute_s: float | None = None
    decode_allreduce_s: float | None = None
    decode_overhead_s: float | None = None
    decode_bytes: float | None = None
    decode_flops: float | None = None
    decode_arithmetic_intensity: float | None = None
    decode_tokens_per_s: float = 0.0
    per_stream_tokens_per_s: float = 0.0
    weight_share: float | None = None
    decode_bound: str | None = None
    tensor_duty: float | None = None
    experts_touched_per_layer: float | None = None
    ttft_s: float | None = None
    prefill_weight_read_s: float | None = None
    prefill_compute_s: float | None = None
    prefill_allreduce_s: float | None = None
    prefill_flops: float | None = None
    prefill_bytes: float | None = None
    prefill_arithmetic_intensity: float | None = None
    prefill_bound: str | None = None
    ridge_intensity: float = 0.0
    peak_flops: float = 0.0
    hbm_bandwidth_bytes_per_s: float = 0.0
    dollars_per_million_tokens: float | None = None
    profile: str = ""
    log: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict:
        return asdict(self)


def gib(x: float) -> str:
    return f"{x / GIB:.2f} GiB"


def resolve_architecture(s: Scenario) -> Architecture:
    if s.config is not None:
        name = s.config.get("_name_or_path") if isinstance(s.config, dict) else None
        arch = from_config(s.config, name=str(name or "pasted config.json"))
    else:
        entry = catalog.model_entry(s.model)
        arch = from_config(entry["config"], name=entry["kvlab"]["name"], meta=entry["kvlab"])
    if s.force_mha and arch.attention_kind != "MHA":
        arch = arch.with_forced_mha()
    return arch


def _check_parallelism(arch: Architecture, tp: int) -> None:
    if arch.num_q_heads % tp:
        raise InputError(Issue("tp", f"must divide num_attention_heads ({arch.num_q_heads}); got {tp}"))
    kv = arch.num_kv_heads
    if arch.mla is None and kv % tp and tp % kv:
        raise InputError(Issue("tp", f"must divide num_key_value_heads ({kv}) or be a multiple of it; got {tp}"))


def _block_tokens_sum(n: int, block: int, cap: int | None = None) -> int:
    """Sum over x = 1..n of ceil(min(x, cap) / block) * block: tokens held, block-rounded, by a
    sequence as it grows to each length x (closed form, so a 100k-token generation costs O(1))."""
    def s(m: int) -> int:
        q, r = divmod(m, block)
        return block * (block * q * (q + 1) // 2 + r * (q + 1))
    if cap is None or n <= cap:
        return s(n)
    return s(cap) + (n - cap) * (-(-cap // block) * block)


def held_bytes_per_sequence(arch: Architecture, s: Scenario, kv_bytes_per_element: float) -> float:
    """KV bytes one sequence occupies on one rank for admission purposes.

    Contiguous: the full final length (prompt + output) is reserved at admission, in whole blocks.
    Paged: a sequence holds only the blocks it has filled so far; with requests at staggered
    points of their generation, the pool carries each one's average over its life, i.e. the mean
    of ceil((prompt + t) / block) blocks for t = 1..output.
    """
    p, o, b = s.prompt_tokens, s.output_tokens, s.block_size_tokens
    per_token_layer = arch.kv_elements_per_token_per_layer(s.tp) * kv_bytes_per_element
    n_slide = arch.num_sliding_layers
    window = arch.sliding_window_tokens if n_slide else None
    if s.allocation == "contiguous":
        full = -(-(p + o) // b) * b
        slide = -(-min(p + o, window) // b) * b if window else 0
    else:
        full = (_block_tokens_sum(p + o, b) - _block_tokens_sum(p, b)) / o
        slide = (_block_tokens_sum(p + o, b, window) - _block_tokens_sum(p, b, window)) / o if window else 0
    return per_token_layer * ((arch.num_layers - n_slide) * full + n_slide * slide)


def evaluate(s: Scenario) -> Result:
    """Evaluate one scenario. Bad input never raises: it comes back in `Result.errors`."""
    try:
        return _evaluate(s)
    except InputError as e:
        return Result(scenario=_safe_scenario(s), errors=[i.to_dict() for i in e.issues],
                      log=[f"ERROR {i}" for i in e.issues])


def _safe_scenario(s: Scenario) -> dict:
    d = s.to_dict() if isinstance(s, Scenario) else {}
    if d.get("config") is not None:
        d["config"] = "(pasted config.json)"
    return d


def _evaluate(s: Scenario) -> Result:
    validate(s)
    arch = resolve_architecture(s)
    _check_parallelism(arch, s.tp)
    gpu = catalog.gpu(s.gpu)
    if s.gpu_memory_gib is not None:
        gpu = gpu.with_memory_bytes(s.gpu_memory_gib * GIB)
    profile = load_profile(s.profile)
    kv_el = DTYPE_BYTES[s.kv_dtype]
    w_el = DTYPE_BYTES[s.weight_dtype]
    log: list[str] = []
    warnings: list[str] = []

    context = s.prompt_tokens + s.output_tokens
    if s.max_model_len is not None and context > s.max_model_len:
        raise InputError(Issue("prompt_tokens", f"prompt + output ({context:,}) exceeds max_model_len ({s.max_model_len:,}); "
                                                f"allowed prompt: 1 to {max(s.max_model_len - s.output_tokens, 0):,}"))
    if context > arch.max_position_embeddings:
        warnings.append(f"prompt + output ({context:,} tokens) is longer than the model's context of "
                        f"{arch.max_position_embeddings:,} tokens; a real engine would refuse the request.")

    kv_per_token = arch.kv_bytes_per_token(kv_el, s.tp)
    mem = memory.budget(
        arch=arch, gpu=gpu, engine=s.engine, tp=s.tp, weight_bytes_per_param=w_el,
        kv_bytes_per_token=kv_per_token, gpu_memory_utilization=s.gpu_memory_utilization,
        mem_fraction_static=s.mem_fraction_static, max_num_batched_tokens=s.max_num_batched_tokens,
        max_num_seqs=s.max_num_seqs, block_size_tokens=s.block_size_tokens,
    )
    per_seq = held_bytes_per_sequence(arch, s, kv_el)
    max_seqs = int(mem.kv_pool_bytes // per_seq) if per_seq > 0 else 0
    limits = {"concurrency": s.concurrency, "kv_pool": max_seqs, "max_num_seqs": s.max_num_seqs}
    batch = min(limits.values())
    limited_by = min(limits, key=lambda k: (limits[k], k != "concurrency"))

    max_len = s.max_model_len or (arch.max_position_embeddings if s.engine == "vllm" else context)
    max_conc = mem.kv_pool_tokens / max_len if max_len else 0.0

    fp8_compute = s.weight_dtype == "fp8" and bool(gpu.fp8_dense_flops)
    machine = roofline.Machine(arch, gpu, profile, s.tp, w_el, kv_el, fp8_compute)
    pre = roofline.prefill(machine, s.prompt_tokens)

    _budget_log(log, warnings, s, arch, gpu, mem, per_seq, max_seqs, max_len, max_conc)
    result = dict(
        scenario=_safe_scenario(s),
        model_name=arch.name,
        attention_kind=arch.attention_kind,
        kv_bytes_per_token=kv_per_token,
        kv_formula=bytes_per_token_formula(arch, kv_el, s.tp),
        params_total=arch.params_total,
        params_active=arch.params_active,
        capacity_bytes=mem.capacity_bytes,
        usable_bytes=mem.usable_bytes,
        context_reserve_bytes=mem.context_reserve_bytes,
        weight_bytes=mem.weight_bytes,
        non_torch_bytes=mem.non_torch_bytes,
        activation_reserve_bytes=mem.activation_reserve_bytes,
        kv_pool_bytes=mem.kv_pool_bytes,
        kv_pool_tokens=mem.kv_pool_tokens,
        kv_bytes_per_sequence=per_seq,
        kv_pool_used_bytes=batch * per_seq,
        max_sequences=max_seqs,
        batch=batch,
        batch_limited_by=limited_by,
        max_concurrency=max_conc,
        max_concurrency_tokens=max_len,
        ttft_s=pre.time_s,
        prefill_weight_read_s=pre.memory_time_s,
        prefill_compute_s=pre.compute_time_s,
        prefill_allreduce_s=pre.allreduce_time_s,
        prefill_flops=pre.flops,
        prefill_bytes=pre.bytes,
        prefill_arithmetic_intensity=pre.arithmetic_intensity,
        prefill_bound=pre.bound,
        peak_flops=machine.peak_flops,
        hbm_bandwidth_bytes_per_s=gpu.hbm_bandwidth_bytes_per_s,
        ridge_intensity=machine.peak_flops * profile.compute_efficiency(1e9, fp8_compute)
        / (gpu.hbm_bandwidth_bytes_per_s * profile.bandwidth_efficiency),
        profile=profile.name,
    )
    log.append(f"Prefill of {s.prompt_tokens:,} tokens: TTFT {pre.time_s * 1e3:.1f} ms, {pre.bound}-bound "
               f"(compute {pre.compute_time_s * 1e3:.1f} ms vs weight read {pre.memory_time_s * 1e3:.1f} ms).")

    if batch > 0:
        read_context = context if s.allocation == "contiguous" else s.prompt_tokens + (s.output_tokens + 1) / 2
        dec = roofline.decode_step(machine, batch, read_context)
        bw = gpu.hbm_bandwidth_bytes_per_s
        tokens_per_s = batch / dec.time_s
        result.update(
            decode_step_s=dec.time_s,
            itl_s=dec.time_s,
            decode_weight_read_s=dec.weight_bytes / (bw * profile.bandwidth_efficiency),
            decode_kv_read_s=dec.kv_bytes / (bw * profile.kv_bandwidth_efficiency),
            decode_compute_s=dec.compute_time_s,
            decode_allreduce_s=dec.allreduce_time_s,
            decode_overhead_s=dec.overhead_s,
            decode_bytes=dec.bytes,
            decode_flops=dec.flops,
            decode_arithmetic_intensity=dec.arithmetic_intensity,
            decode_tokens_per_s=tokens_per_s,
            per_stream_tokens_per_s=1.0 / dec.time_s,
            weight_share=dec.weight_share,
            decode_bound=dec.bound,
            tensor_duty=dec.tensor_duty,
            experts_touched_per_layer=arch.expected_experts_touched(batch) if arch.moe else None,
        )
        if s.dollars_per_gpu_hour is not None:
            dollars_per_s = s.dollars_per_gpu_hour * s.tp / SECONDS_PER_HOUR
            result["dollars_per_million_tokens"] = dollars_per_s / tokens_per_s * 1e6
        log.append(f"Decode step of {batch} sequences: {dec.time_s * 1e3:.2f} ms, {dec.bound}-bound; "
                   f"weights are {dec.weight_share:.0%} of the {dec.bytes / GIB:.2f} GiB read per step; "
                   f"{tokens_per_s:,.0f} tok/s in aggregate, {1 / dec.time_s:,.1f} tok/s per stream.")
    return Result(**result, log=log, warnings=warnings)


def _budget_log(log, warnings, s: Scenario, arch, gpu, mem: memory.MemoryBudget, per_seq, max_seqs, max_len, max_conc):
    """Engine-style lines a user would read at boot, and why the batch stopped growing."""
    rank = f" per rank (tp={s.tp})" if s.tp > 1 else ""
    if s.engine == "sglang":
        log.append(f"Load weight end. mem usage={gib(mem.weight_bytes)}{rank}; mem_fraction_static={s.mem_fraction_static:.2f} "
                   f"of {gib(mem.capacity_bytes)} reported")
    else:
        basis = "reported by the driver" if s.engine == "vllm" else "nominal"
        log.append(f"Usable memory: {s.gpu_memory_utilization:.2f} x {gib(mem.capacity_bytes)} ({basis}) = {gib(mem.usable_bytes)}; "
                   f"model weights take {gib(mem.weight_bytes)}{rank}; activation reserve {gib(mem.activation_reserve_bytes)}"
                   + (f"; non-torch memory {gib(mem.non_torch_bytes)}" if mem.non_torch_bytes else "") + ".")
    if mem.weight_bytes + mem.non_torch_bytes >= mem.usable_bytes:
        knob = "mem_fraction_static" if s.engine == "sglang" else "gpu_memory_utilization"
        need = (mem.weight_bytes + mem.non_torch_bytes + mem.activation_reserve_bytes) / mem.capacity_bytes
        msg = (f"Model weights need {gib(mem.weight_bytes)} but only {gib(mem.usable_bytes - mem.non_torch_bytes)} is usable "
               f"({knob} {getattr(s, knob):.2f} x {gib(mem.capacity_bytes)}). ")
        msg += (f"Raise {knob} to at least {math.ceil(need * 100) / 100:.2f}, " if need < 1 else "The card is too small: ")
        msg += "quantize the weights, or shard them with tensor parallelism."
        warnings.append(msg)
        log.append("ERROR " + msg)
        return
    if mem.kv_pool_bytes <= 0:
        msg = (f"Weights fit but the activation reserve ({gib(mem.activation_reserve_bytes)}) leaves no room for a KV pool; "
               "lower max_num_batched_tokens or max_num_seqs.")
        warnings.append(msg)
        log.append("ERROR " + msg)
        return
    if s.engine == "sglang":
        log.append(f"KV Cache is allocated. #tokens: {mem.kv_pool_tokens:,}, K size + V size: {gib(mem.kv_pool_bytes)}")
        log.append(f"max_total_num_tokens={mem.kv_pool_tokens:,}, chunked_prefill_size={s.max_num_batched_tokens}, "
                   f"max_running_requests={min(s.max_num_seqs, max(max_seqs, 1))}, context_len={max_len:,}")
    else:
        log.append(f"GPU KV cache size: {mem.kv_pool_tokens:,} tokens ({gib(mem.kv_pool_bytes)})")
        log.append(f"Maximum concurrency for {max_len:,} tokens per request: {max_conc:.2f}x")
    if max_seqs == 0:
        ctx = s.prompt_tokens + s.output_tokens
        fits = int(mem.kv_pool_bytes // (per_seq / ctx)) - s.output_tokens if per_seq else 0
        hint = (f"the longest prompt that fits with {s.output_tokens:,} output tokens is about {fits:,} tokens"
                if fits > 0 else "not even the output alone fits")
        msg = (f"One sequence of {ctx:,} tokens needs {gib(per_seq)} of KV cache but the pool is {gib(mem.kv_pool_bytes)}: "
               f"no request fits; {hint}.")
        warnings.append(msg)
        log.append("ERROR " + msg)
        return
    reason = {
        "concurrency": f"all {s.concurrency} concurrent requests fit (the pool could hold {max_seqs})",
        "kv_pool": f"the KV pool holds {max_seqs} sequences of {gib(per_seq)} each; "
                   f"{s.concurrency - max_seqs} of {s.concurrency} requests wait",
        "max_num_seqs": f"max_num_seqs={s.max_num_seqs} caps the scheduler below the pool's {max_seqs}",
    }
    limits = {"concurrency": s.concurrency, "kv_pool": max_seqs, "max_num_seqs": s.max_num_seqs}
    key = min(limits, key=lambda k: (limits[k], k != "concurrency"))
    log.append(f"Batch of {limits[key]}: {reason[key]}.")
