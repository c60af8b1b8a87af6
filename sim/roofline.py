"""Bytes, FLOPs and time of one forward step: the clock of the whole simulator.

A step reads this rank's weights (for MoE, only the experts the step's tokens touch), reads the
KV cache of every sequence in it, and multiplies. Two step models share one kernel list:

- ``whole_step`` (seed 002's panel, the textbook profile): memory traffic and arithmetic of the
  whole step overlap,

      t = max(weight_bytes / (BW x e_bw) + kv_bytes / (BW x e_kv),  FLOPs / (peak x e_c(tokens)))
          + all-reduce time + fixed per-step overhead

- ``per_kernel`` (v2 profiles): a step is its kernels run one after another -- the QKV, O and MLP
  projection GEMMs of every layer, attention, the lm_head, the all-reduces -- each bound by its own
  resource, t = sum_k max(bytes_k / (BW x e_bw,k), FLOPs_k / (peak x e_c,k)) + all-reduces +
  launch overhead (step_overhead_s + kernels x kernel_overhead_s). At large batch the GEMMs are
  compute-bound while attention is still KV-read bound; the whole-step max hides one of them.

Both return the same `StepCost`, whose `kernels` carry each kernel kind's bytes, FLOPs, time and
bound, so no view recomputes them. `time_s` is the GPU's time; `wall_s` adds the serving engine's
host time per step (`cpu_s`: sampling, scheduling, sync; an engine rule carried by the Machine), and
is what a step lasts on the engine's clock: evaluate()'s ITL and every step of the time-domain
engine. For the engine's closed form, every StepCost also reads
wall_s = max(memory_side_s, compute_side_s) + serial_s, with the two sides affine in the KV tokens
read and the attention pairs, and serial_s including cpu_s (see sim/engine/clock.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from math import fsum

from .architecture import Architecture
from .catalog import GPU
from .memory import ACTIVATION_BYTES
from .profiles import EfficiencyProfile
from .profiles import interpolate_log2 as interpolate

# Kernels one decoder layer launches in a CUDA-graph decode step, counted from vLLM's Llama and
# Mixtral forward passes (vllm/model_executor/models/llama.py, mixtral.py): fused residual
# RMSNorm, QKV GEMM, rotary embedding, KV-cache write, attention, O GEMM, fused residual RMSNorm,
# gate_up GEMM, SiLU-and-mul, down GEMM. An MoE layer replaces the last three with the router
# GEMM, top-k softmax, the block alignment, two fused expert GEMMs, the activation and the sum,
# plus three for a shared expert. Tensor parallelism adds two all-reduces per layer.
KERNELS_PER_DENSE_LAYER = 10
KERNELS_PER_MOE_LAYER = 14
KERNELS_PER_SHARED_EXPERT = 3
# Once per step: embedding lookup, final norm, lm_head, and the sampler's few kernels.
KERNELS_PER_STEP = 8

# whole_step lists two rows, "weights" (every projection and the lm_head) and "attention".
KERNEL_KINDS = ("weights", "embedding", "qkv", "attention", "o", "mlp", "lm_head", "allreduce", "overhead")


@dataclass(frozen=True)
class KernelCost:
    """One kernel kind of a step, summed over the layers that run it, on one rank."""

    kind: str  # one of KERNEL_KINDS
    bytes: float
    flops: float
    memory_s: float  # bytes / (bandwidth x efficiency)
    compute_s: float  # FLOPs / (peak x efficiency)
    time_s: float  # per_kernel: what it adds to the step; whole_step: its own roofline time, for display
    bound: str  # "memory", "compute" or "latency" (all-reduce, launches)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class StepCost:
    tokens: float  # tokens multiplied through the weights in this step
    weight_bytes: float
    kv_bytes: float
    flops: float
    memory_time_s: float  # every byte of the step over its bandwidth (sum over kernels)
    compute_time_s: float  # every FLOP of the step over its rate (sum over kernels)
    allreduce_time_s: float
    overhead_s: float
    time_s: float  # GPU time of the step
    bound: str  # "memory" or "compute": the larger side of the roofline (per_kernel: of the kernels' times)
    model: str = "whole_step"
    # The memory side split by what is read: the weights (every kernel but attention; whole_step:
    # weight_bytes over the weight-read bandwidth) and the KV cache (attention's read). They sum to
    # memory_time_s; views draw them instead of dividing bytes by a bandwidth of their own.
    weight_read_s: float = 0.0
    kv_read_s: float = 0.0
    kernels: tuple[KernelCost, ...] = ()
    # wall_s = max(memory_side_s, compute_side_s) + serial_s; the two sides are the only terms that
    # depend on the KV read and the attention pairs (the engine's closed form reads them). serial_s
    # includes cpu_s, so wall_s = time_s + cpu_s.
    memory_side_s: float = 0.0
    compute_side_s: float = 0.0
    serial_s: float = 0.0
    cpu_s: float = 0.0  # the engine's host time per step (Machine.cpu_step_s; passes x it for a chunked prefill)
    wall_s: float = 0.0  # time_s + cpu_s: what the step lasts on the engine's clock

    @property
    def bytes(self) -> float:
        return self.weight_bytes + self.kv_bytes

    @property
    def weight_share(self) -> float:
        """Fraction of the step's bytes that are weights: what batching still amortises."""
        return self.weight_bytes / self.bytes if self.bytes else 0.0

    @property
    def tensor_duty(self) -> float:
        """Fraction of the step the tensor cores are busy at their achievable rate."""
        return self.compute_time_s / self.time_s if self.time_s else 0.0

    @property
    def arithmetic_intensity(self) -> float:
        """FLOPs per byte moved (the roofline's x axis)."""
        return self.flops / self.bytes if self.bytes else 0.0

    @property
    def weight_bytes_per_s(self) -> float:
        """The weight-read bandwidth the step achieves (the memory roof of its GEMMs)."""
        return self.weight_bytes / self.weight_read_s if self.weight_read_s else 0.0

    @property
    def kv_bytes_per_s(self) -> float:
        """The KV-read bandwidth the step achieves (attention's memory roof)."""
        return self.kv_bytes / self.kv_read_s if self.kv_read_s else 0.0

    @property
    def flops_per_s(self) -> float:
        """The arithmetic rate the step's FLOPs achieve (its compute roof, all kernels together)."""
        return self.flops / self.compute_time_s if self.compute_time_s else 0.0

    def kernel(self, kind: str) -> KernelCost | None:
        for k in self.kernels:
            if k.kind == kind:
                return k
        return None


@dataclass(frozen=True)
class Machine:
    """What the step model needs to know about the hardware and the numeric formats. Built once
    per (model, GPU, profile, tp, dtypes, engine) by `evaluate.machine_for` and shared by
    evaluate() and the time-domain engine."""

    arch: Architecture
    gpu: GPU
    profile: EfficiencyProfile
    tp: int
    weight_bytes_per_param: float
    kv_bytes_per_element: float
    fp8_compute: bool  # FP8 weights on a GPU with FP8 tensor cores run W8A8 at the FP8 peak
    weight_dtype: str = "bf16"
    model_id: str = ""  # catalog id: selects the profile's per-model GEMM curve
    # Bytes per parameter of the embedding and lm_head. Real checkpoints keep them BF16 when the
    # rest is quantized (vLLM and SGLang load them unquantized); the textbook keeps everything at
    # the weight dtype, as seed 002's panel does. None: same as the other weights.
    embedding_bytes_per_param: float | None = None
    # The serving engine's host time per step that the GPU waits for (sampling, scheduling, input
    # preparation, sync): an engine rule (sim/engine_rules.py), 0 for the textbook engine.
    cpu_step_s: float = 0.0
    cpu_row_s: float = 0.0  # and per row of logits the step samples (per request: sampling, output)

    def cpu_s(self, sampled_tokens: float) -> float:
        """The engine's host time of one step that samples `sampled_tokens` rows."""
        return self.cpu_step_s + self.cpu_row_s * sampled_tokens

    @cached_property
    def peak_flops(self) -> float:
        if self.fp8_compute and self.gpu.fp8_dense_flops:
            return self.gpu.fp8_dense_flops
        return self.gpu.bf16_dense_flops

    @cached_property
    def ridge_intensity(self) -> float:
        """FLOPs per byte where the large-GEMM rate meets the weight-read bandwidth."""
        p = self.profile
        return (self.peak_flops * p.compute_efficiency(1e9, self.fp8_compute)
                / (self.gpu.hbm_bandwidth_bytes_per_s * p.bandwidth_efficiency))

    @cached_property
    def kv_bytes_per_token(self) -> float:
        return self.arch.kv_bytes_per_token(self.kv_bytes_per_element, self.tp)

    @cached_property
    def whole_step_constants(self) -> tuple[float, ...]:
        """What the whole-step roofline needs that does not depend on the step: computed once per
        machine (evaluate and the engine call step_cost many times per scenario)."""
        a, p, bw = self.arch, self.profile, self.gpu.hbm_bandwidth_bytes_per_s
        return (self.weight_bytes_per_param / self.tp, 2 * a.params_active / self.tp,
                a.attention_flops_per_pair / self.tp, bw * p.bandwidth_efficiency, bw * p.kv_bandwidth_efficiency,
                self.peak_flops * p.compute_efficiency(float("inf"), fp8=self.fp8_compute))

    def allreduce_time_s(self, tokens: float) -> float:
        """Two ring all-reduces per layer (after attention and after the MLP), each of
        tokens x hidden BF16 values; a ring moves 2 (tp - 1) / tp of the buffer over each link."""
        if self.tp == 1 or tokens <= 0:
            return 0.0
        buffer_bytes = tokens * self.arch.hidden_size * ACTIVATION_BYTES
        link = self.gpu.interconnect_bytes_per_s * self.profile.interconnect_efficiency
        per_call = 2 * (self.tp - 1) / self.tp * buffer_bytes / link + self.profile.allreduce_latency_s
        return 2 * self.arch.num_layers * per_call

    @cached_property
    def _kernels_per_step(self) -> int:
        return self.kernels_per_step()

    def kernels_per_step(self) -> int:
        a = self.arch
        per_layer = 0
        for k in a.layer_kinds:
            n = KERNELS_PER_MOE_LAYER if k.mlp == "moe" else KERNELS_PER_DENSE_LAYER
            if k.mlp == "moe" and a.moe.shared_intermediate_size:
                n += KERNELS_PER_SHARED_EXPERT
            per_layer += k.count * n
        return per_layer + KERNELS_PER_STEP


def _new(cls, values: dict):
    """A frozen dataclass whose instance dict is `values`, which must name every field. The
    generated __init__ sets each field through object.__setattr__, and keyword arguments build a
    dict of their own: either costs more than the whole step's arithmetic (evaluate() builds
    three steps per call, the time-domain engine one per step). A dict display handed over as
    the instance dict is built once and never copied."""
    obj = object.__new__(cls)
    object.__setattr__(obj, "__dict__", values)
    return obj


def _kernel(kind: str, bytes_: float, flops: float, bw: float, peak: float) -> KernelCost:
    mem = bytes_ / bw if bytes_ else 0.0
    comp = flops / peak if flops else 0.0
    return _new(KernelCost, {"kind": kind, "bytes": bytes_, "flops": flops, "memory_s": mem, "compute_s": comp,
                             "time_s": mem if mem > comp else comp, "bound": "compute" if comp > mem else "memory"})


def _projection_params(a: Architecture) -> tuple[float, float, float, float]:
    """Per-layer-summed (qkv, o, mlp params always read, params of one routed expert x MoE
    layers) of the whole model: the weights each projection kernel kind multiplies by."""
    o_per_layer = a.num_q_heads * (a.mla.v_head_dim if a.mla is not None else a.head_dim) * a.hidden_size
    attention = a._attention_params()
    qkv = a.num_layers * (attention - o_per_layer)
    o = a.num_layers * o_per_layer
    mlp_dense = (a.num_layers - a.num_moe_layers) * a._dense_mlp_params()
    if a.moe:
        mlp_dense += a.num_moe_layers * a._moe_params()[0]
    return qkv, o, mlp_dense, a.num_moe_layers * a.params_per_expert


def step_cost(m: Machine, *, new_tokens: float, kv_read_tokens: float, attention_pairs: float,
              sampled_tokens: float | None = None, context_tokens: float | None = None, detail: bool = True) -> StepCost:
    """Cost of one forward step on one rank.

    new_tokens: tokens pushed through the weights (decode sequences + prefill tokens).
    kv_read_tokens: cached tokens read, summed over sequences, in layer-mean units
        (Architecture.kv_read_tokens): bytes = kv_read_tokens x kv bytes per token.
    attention_pairs: (query, key) pairs, averaged over layers (see Architecture.causal_pairs).
    sampled_tokens: rows of logits the lm_head computes (per_kernel only; default new_tokens --
        a prefill samples one token per prompt).
    context_tokens: cached tokens per sequence, for the profile's attention efficiency by context
        (per_kernel only; None: its plateau).
    detail: False skips the whole-step model's two display rows (callers that need only times).
    """
    sampled = new_tokens if sampled_tokens is None else sampled_tokens
    if m.profile.per_kernel:
        return _per_kernel(m, new_tokens, kv_read_tokens, attention_pairs, sampled, context_tokens)
    return _whole_step(m, new_tokens, kv_read_tokens, attention_pairs, detail, sampled)


def _whole_step(m: Machine, new_tokens: float, kv_read_tokens: float, attention_pairs: float, detail: bool = True,
                sampled: float = 0.0) -> StepCost:
    """Seed 002's roofline over the whole step (design.md section 2)."""
    w_per_param, gemm_flops_per_token, attention_flops_per_pair, weight_bw, kv_bw, attention_rate = m.whole_step_constants
    profile = m.profile
    weight_bytes = m.arch.params_read(new_tokens) * w_per_param
    kv_bytes = kv_read_tokens * m.kv_bytes_per_token
    # 2 FLOPs per multiply-add; active parameters include the lm_head, as design.md counts them.
    gemm_flops = gemm_flops_per_token * new_tokens
    attention_flops = attention_flops_per_pair * attention_pairs
    weight_read_s = weight_bytes / weight_bw
    kv_read_s = kv_bytes / kv_bw
    memory_s = weight_read_s + kv_read_s
    # Weight GEMMs have M = tokens in the step, so small steps run at the small-M efficiency.
    # Attention is not a GEMM of that shape: its arithmetic runs inside fused kernels at the
    # large-GEMM rate (and in decode it hides under the KV read), so it gets the plateau.
    gemm_rate = m.peak_flops * profile.compute_efficiency(new_tokens, fp8=m.fp8_compute)
    compute_s = gemm_flops / gemm_rate + attention_flops / attention_rate
    allreduce_s = m.allreduce_time_s(new_tokens)
    serial = allreduce_s + profile.step_overhead_s
    cpu = m.cpu_step_s + m.cpu_row_s * sampled if m.cpu_row_s else m.cpu_step_s
    gpu_s = (memory_s if memory_s > compute_s else compute_s) + serial
    return _new(StepCost, {
        "tokens": new_tokens,
        "weight_bytes": weight_bytes,
        "kv_bytes": kv_bytes,
        "flops": gemm_flops + attention_flops,
        "memory_time_s": memory_s,
        "compute_time_s": compute_s,
        "allreduce_time_s": allreduce_s,
        "overhead_s": profile.step_overhead_s,
        "time_s": gpu_s,
        "bound": "compute" if compute_s > memory_s else "memory",
        "model": "whole_step",
        "weight_read_s": weight_read_s,
        "kv_read_s": kv_read_s,
        "kernels": (_kernel("weights", weight_bytes, gemm_flops, weight_bw, gemm_rate),
                    _kernel("attention", kv_bytes, attention_flops, kv_bw, attention_rate)) if detail else (),
        "memory_side_s": memory_s,
        "compute_side_s": compute_s,
        "serial_s": serial + cpu,
        "cpu_s": cpu,
        "wall_s": gpu_s + cpu,
    })


def _per_kernel(m: Machine, n: float, kv_read_tokens: float, attention_pairs: float, sampled: float,
                context_tokens: float | None) -> StepCost:
    a = m.arch
    p = m.profile
    tp = m.tp
    bw = m.gpu.hbm_bandwidth_bytes_per_s
    peak = m.peak_flops
    w = m.weight_bytes_per_param
    e_bytes = m.embedding_bytes_per_param if m.embedding_bytes_per_param is not None else w
    gemm_bw = bw * p.weight_bandwidth_efficiency(m.weight_dtype)
    gemm_rate = peak * interpolate(p.gemm_points(m.model_id, m.fp8_compute, tp), n)
    qkv, o, mlp_dense, expert_params = _projection_params(a)
    experts_read = a.expected_experts_touched(n) if a.moe else 0.0
    experts_used = a.moe.experts_per_token if a.moe else 0
    mlp_read = mlp_dense + expert_params * experts_read
    mlp_active = mlp_dense + expert_params * experts_used
    kernels = [
        # The input embedding gathers n rows; it is not read whole.
        _kernel("embedding", n * a.hidden_size * e_bytes / tp, 0.0, bw * p.bandwidth_efficiency, peak),
        _kernel("qkv", qkv * w / tp, 2 * qkv * n / tp, gemm_bw, gemm_rate),
    ]
    kv_bytes = kv_read_tokens * a.kv_bytes_per_token(m.kv_bytes_per_element, tp)
    attention_flops = a.attention_flops_per_pair * attention_pairs / tp
    attention_rate = m.gpu.bf16_dense_flops * (p.prefill_attention_efficiency or p.compute_efficiency(float("inf")))
    attention = _kernel("attention", kv_bytes, attention_flops, bw * p.attention_kv_efficiency(context_tokens, mla=a.mla is not None),
                        attention_rate)
    kernels.append(attention)
    kernels.append(_kernel("o", o * w / tp, 2 * o * n / tp, gemm_bw, gemm_rate))
    kernels.append(_kernel("mlp", mlp_read * w / tp, 2 * mlp_active * n / tp, gemm_bw, gemm_rate))
    # lm_head: BF16 in quantized checkpoints, M = rows sampled (one per prompt in a prefill).
    head_params = a.vocab_size * a.hidden_size
    head_eff = interpolate(p.lm_head_efficiency_points or p.compute_efficiency_points, sampled)
    head_peak = peak if e_bytes == w else m.gpu.bf16_dense_flops
    kernels.append(_kernel("lm_head", head_params * e_bytes / tp, 2 * head_params * sampled / tp,
                           bw * p.bandwidth_efficiency, head_peak * head_eff))
    allreduce_s = m.allreduce_time_s(n)
    overhead = p.step_overhead_s + p.kernel_overhead_s * m._kernels_per_step
    gemm_total = 0.0
    memory_s = compute_s = weight_bytes = flops = 0.0
    memory_bound_s = compute_bound_s = weight_read_s = 0.0
    for k in kernels:
        memory_s += k.memory_s
        compute_s += k.compute_s
        flops += k.flops
        if k.kind != "attention":
            gemm_total += k.time_s
            weight_bytes += k.bytes
            weight_read_s += k.memory_s
        if k.bound == "compute":
            compute_bound_s += k.time_s
        else:
            memory_bound_s += k.time_s
    allreduce_bytes = 2 * a.num_layers * n * a.hidden_size * ACTIVATION_BYTES if tp > 1 else 0.0
    kernels.append(_new(KernelCost, {"kind": "allreduce", "bytes": allreduce_bytes, "flops": 0.0, "memory_s": 0.0,
                                     "compute_s": 0.0, "time_s": allreduce_s, "bound": "latency"}))
    kernels.append(_new(KernelCost, {"kind": "overhead", "bytes": 0.0, "flops": 0.0, "memory_s": 0.0, "compute_s": 0.0,
                                     "time_s": overhead, "bound": "latency"}))
    serial = gemm_total + allreduce_s + overhead
    cpu = m.cpu_step_s + m.cpu_row_s * sampled if m.cpu_row_s else m.cpu_step_s
    gpu_s = max(attention.memory_s, attention.compute_s) + serial
    return _new(StepCost, {
        "tokens": n,
        "weight_bytes": weight_bytes,
        "kv_bytes": kv_bytes,
        "flops": flops,
        "memory_time_s": memory_s,
        "compute_time_s": compute_s,
        "allreduce_time_s": allreduce_s,
        "overhead_s": overhead,
        "time_s": gpu_s,
        "bound": "compute" if compute_bound_s > memory_bound_s else "memory",
        "model": "per_kernel",
        "weight_read_s": weight_read_s,
        "kv_read_s": attention.memory_s,
        "kernels": tuple(kernels),
        "memory_side_s": attention.memory_s,
        "compute_side_s": attention.compute_s,
        "serial_s": serial + cpu,
        "cpu_s": cpu,
        "wall_s": gpu_s + cpu,
    })


def decode_step(m: Machine, batch: int, context_tokens: float, detail: bool = True) -> StepCost:
    """One decode step: `batch` sequences each holding `context_tokens` of cache emit one token."""
    per_seq = m.arch.kv_read_tokens(context_tokens)
    return step_cost(m, new_tokens=batch, kv_read_tokens=batch * per_seq, attention_pairs=batch * per_seq,
                     sampled_tokens=batch, context_tokens=context_tokens, detail=detail)


def prefill(m: Machine, prompt_tokens: float, chunk_tokens: int | None = None, sequences: int = 1,
            detail: bool = True) -> StepCost:
    """`sequences` prompts of `prompt_tokens` each, processed in forward passes of at most
    `chunk_tokens` tokens (None: one pass, as design.md's textbook prefill: weights read once, the
    causal attention term on top of 2 x params x n). Chunks of a long prompt each re-read the
    weights and attend to the chunks before them; the costs of the passes are summed. detail=False:
    only the totals (a chunked prefill's summed kernel rows are left out, kernels may be ())."""
    total = prompt_tokens * sequences
    if chunk_tokens is None or total <= chunk_tokens:
        pairs = m.arch.causal_pairs(prompt_tokens) * sequences
        return step_cost(m, new_tokens=total, kv_read_tokens=0.0, attention_pairs=pairs, sampled_tokens=sequences, detail=detail)
    if sequences > 1:
        if prompt_tokens >= chunk_tokens:
            return _scaled(prefill(m, prompt_tokens, chunk_tokens, detail=detail), sequences, detail)
        # Whole prompts packed into passes of at most chunk_tokens tokens.
        per_pass = max(int(chunk_tokens // prompt_tokens), 1)
        c = step_cost(m, new_tokens=per_pass * prompt_tokens, kv_read_tokens=0.0,
                      attention_pairs=m.arch.causal_pairs(prompt_tokens) * per_pass, sampled_tokens=per_pass, detail=detail)
        return _scaled(c, sequences / per_pass, detail)
    # Chunk i (0-based) attends to the i x chunk tokens before it. Up to _MAX_CHUNKS (8) chunks are
    # costed one by one; a longer prompt is costed on _MAX_CHUNKS evenly spaced chunks, each
    # standing for its share of the passes (so a 2M-token prompt costs 9 steps, not 1,024; the
    # attention term is linear in i, so a group's middle chunk is its mean).
    passes = -(-int(prompt_tokens) // chunk_tokens)
    full = passes - 1
    last = prompt_tokens - full * chunk_tokens
    costs = []
    groups = min(full, _MAX_CHUNKS)
    for g in range(groups):
        lo, hi = full * g // groups, full * (g + 1) // groups
        i = (lo + hi - 1) / 2  # the group's middle chunk (fractional: the mean cached length)
        costs.append(_scaled(_chunk(m, chunk_tokens, i * chunk_tokens, False, detail), hi - lo, detail))
    costs.append(_chunk(m, last, full * chunk_tokens, True, detail))
    return _sum(costs, detail)


_MAX_CHUNKS = 8


def _chunk(m: Machine, tokens: float, cached: float, sample: bool, detail: bool) -> StepCost:
    return step_cost(m, new_tokens=tokens, kv_read_tokens=m.arch.kv_read_tokens(cached),
                     attention_pairs=m.arch.causal_pairs(tokens, cached), sampled_tokens=1 if sample else 0,
                     context_tokens=cached + tokens / 2, detail=detail)


def _scaled(c: StepCost, factor: float, detail: bool = True) -> StepCost:
    """`factor` identical passes of step c, one after another (detail=False: without kernel rows)."""
    kernels = tuple(_new(KernelCost, {"kind": k.kind, "bytes": k.bytes * factor, "flops": k.flops * factor,
                                      "memory_s": k.memory_s * factor, "compute_s": k.compute_s * factor,
                                      "time_s": k.time_s * factor, "bound": k.bound}) for k in (c.kernels if detail else ()))
    return _new(StepCost, {
        "tokens": c.tokens * factor, "weight_bytes": c.weight_bytes * factor, "kv_bytes": c.kv_bytes * factor,
        "flops": c.flops * factor, "memory_time_s": c.memory_time_s * factor, "compute_time_s": c.compute_time_s * factor,
        "allreduce_time_s": c.allreduce_time_s * factor, "overhead_s": c.overhead_s * factor, "time_s": c.time_s * factor,
        "bound": c.bound, "model": c.model, "weight_read_s": c.weight_read_s * factor, "kv_read_s": c.kv_read_s * factor,
        "kernels": kernels, "memory_side_s": c.memory_side_s * factor,
        "compute_side_s": c.compute_side_s * factor, "serial_s": c.serial_s * factor, "cpu_s": c.cpu_s * factor,
        "wall_s": c.wall_s * factor,
    })


def _sum(costs: list[StepCost], detail: bool = True) -> StepCost:
    """Passes run one after another (detail=False: without kernel rows; no total reads them)."""
    # math.fsum, not sum(): CPython 3.12+ (and so Pyodide) compensates the built-in sum of floats,
    # 3.11 does not; fsum gives the same bits on every Python.
    if len(costs) == 1:
        return costs[0]
    by_kind: dict[str, list[KernelCost]] = {}
    for c in costs if detail else ():
        for k in c.kernels:
            by_kind.setdefault(k.kind, []).append(k)
    kernels = tuple(_new(KernelCost, {"kind": kind, "bytes": fsum(k.bytes for k in ks), "flops": fsum(k.flops for k in ks),
                                      "memory_s": fsum(k.memory_s for k in ks), "compute_s": fsum(k.compute_s for k in ks),
                                      "time_s": fsum(k.time_s for k in ks), "bound": max(ks, key=lambda k: k.time_s).bound})
                    for kind, ks in by_kind.items())
    memory_s = fsum(c.memory_time_s for c in costs)
    compute_s = fsum(c.compute_time_s for c in costs)
    return _new(StepCost, {
        "tokens": sum(c.tokens for c in costs),
        "weight_bytes": fsum(c.weight_bytes for c in costs),
        "kv_bytes": fsum(c.kv_bytes for c in costs),
        "flops": fsum(c.flops for c in costs),
        "memory_time_s": memory_s,
        "compute_time_s": compute_s,
        "allreduce_time_s": fsum(c.allreduce_time_s for c in costs),
        "overhead_s": fsum(c.overhead_s for c in costs),
        "time_s": fsum(c.time_s for c in costs),
        "bound": "compute" if fsum(c.time_s for c in costs if c.bound == "compute") > fsum(c.time_s for c in costs) / 2 else "memory",
        "model": costs[0].model,
        "weight_read_s": fsum(c.weight_read_s for c in costs),
        "kv_read_s": fsum(c.kv_read_s for c in costs),
        "kernels": kernels,
        "memory_side_s": fsum(c.memory_side_s for c in costs),
        "compute_side_s": fsum(c.compute_side_s for c in costs),
        "serial_s": fsum(c.serial_s for c in costs),
        "cpu_s": fsum(c.cpu_s for c in costs),
        "wall_s": fsum(c.wall_s for c in costs),
    })
