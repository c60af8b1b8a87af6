"""The two step models, each turning one forward step's tokens into bytes, FLOPs and time
(sim/roofline.py describes them and times steps with them): `whole_step`, the textbook's one
roofline over the whole step, and `per_kernel`, a step as its kernels run one after another.
Both return a `StepCost`, whose `kernels` carry each kernel kind's bytes, FLOPs, time and bound."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .architecture import Architecture
from .memory import ACTIVATION_BYTES
from .profiles import interpolate_log2 as interpolate

if TYPE_CHECKING:
    from .roofline import Machine

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
    def delivered_flops_per_s(self) -> float:
        """FLOPs over the whole step's time: the rate the step delivers, its point on the roofline."""
        return self.flops / self.time_s if self.time_s else 0.0

    @property
    def flops_per_s(self) -> float:
        """The arithmetic rate the step's FLOPs achieve (its compute roof, all kernels together)."""
        return self.flops / self.compute_time_s if self.compute_time_s else 0.0

    def kernel(self, kind: str) -> KernelCost | None:
        for k in self.kernels:
            if k.kind == kind:
                return k
        return None

def new_frozen(cls, values: dict):
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
    return new_frozen(KernelCost, {"kind": kind, "bytes": bytes_, "flops": flops, "memory_s": mem, "compute_s": comp,
                             "time_s": mem if mem > comp else comp, "bound": "compute" if comp > mem else "memory"})


def _mlp(dense_params: float, experts_read_params: float, experts_active_params: float, n: float,
         bytes_per_param: float, bw: float, rate: float, moe_efficiency: float) -> KernelCost:
    """The MLP row of one rank (params are the rank's): the dense and shared-expert GEMMs at the
    dense GEMM's bandwidth and rate, and the routed experts' fused GEMMs at moe_efficiency of
    both. The two are separate kernels, so each takes its own roofline and the row is their sum."""
    dense = _kernel("mlp", dense_params * bytes_per_param, 2 * dense_params * n, bw, rate)
    if not experts_read_params:
        return dense
    experts = _kernel("mlp", experts_read_params * bytes_per_param, 2 * experts_active_params * n,
                      bw * moe_efficiency, rate * moe_efficiency)
    longer = experts if experts.time_s >= dense.time_s else dense
    return new_frozen(KernelCost, {"kind": "mlp", "bytes": dense.bytes + experts.bytes, "flops": dense.flops + experts.flops,
                                   "memory_s": dense.memory_s + experts.memory_s, "compute_s": dense.compute_s + experts.compute_s,
                                   "time_s": dense.time_s + experts.time_s, "bound": longer.bound})


def _projection_params(a: Architecture, tp: int, attention_tp: int) -> tuple[float, float, float, float]:
    """Per-layer-summed (qkv, o, mlp params always read, params of one routed expert x MoE
    layers) one of tp ranks multiplies by: a 1/tp shard of each split projection (attention's
    over the attention_tp GPUs of its attention group), and whole what every rank replicates
    (MLA's down-projections in qkv, the routers in mlp)."""
    o_per_layer = a.num_q_heads * (a.mla.v_head_dim if a.mla is not None else a.head_dim) * a.hidden_size
    attention = a._attention_params()
    replicated_qkv = a._replicated_attention_params() + a._indexer_params()
    qkv = a.kv_layers * ((attention - o_per_layer - a._replicated_attention_params()) / attention_tp + replicated_qkv)
    o = a.kv_layers * o_per_layer / attention_tp
    if a.linear is not None:  # a recurrent mixer's in-projections and convolution, and its out_proj
        out = a.linear.out_params(a.hidden_size)
        qkv += a.num_linear_layers * (a.linear.params(a.hidden_size) - out) / tp
        o += a.num_linear_layers * out / tp
    mlp_dense = (a.num_mlp_layers - a.num_moe_layers) * a._dense_mlp_params() / tp
    if a.moe:
        router = a.hidden_size * a.moe.num_experts
        mlp_dense += a.num_moe_layers * ((a._moe_params()[0] - router) / tp + router)
    return qkv, o, mlp_dense, a.num_moe_layers * a.params_per_expert / tp

def whole_step(m: Machine, new_tokens: float, kv_read_tokens: float, attention_pairs: float, detail: bool = True,
                sampled: float = 0.0) -> StepCost:
    """Seed 002's roofline over the whole step (design.md section 2)."""
    w_per_param, gemm_flops_per_token, attention_flops_per_pair, weight_bw, kv_bw, attention_rate = m.whole_step_constants
    profile = m.profile
    weight_bytes = m.arch.per_rank(m.arch.params_read(new_tokens), m.tp, m.attention_dp) * w_per_param
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
    gemm_rate = m.peak_flops * profile.compute_efficiency(new_tokens, fp8=m.low_precision_compute)
    compute_s = gemm_flops / gemm_rate + attention_flops / attention_rate
    allreduce_s = m.allreduce_time_s(new_tokens)
    serial = allreduce_s + profile.step_overhead_s
    cpu = m.cpu_step_s + m.cpu_row_s * sampled if m.cpu_row_s else m.cpu_step_s
    gpu_s = (memory_s if memory_s > compute_s else compute_s) + serial
    return new_frozen(StepCost, {
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


def per_kernel(m: Machine, n: float, kv_read_tokens: float, attention_pairs: float, sampled: float,
                context_tokens: float | None) -> StepCost:
    a = m.arch
    p = m.profile
    tp = m.tp
    bw = m.gpu.hbm_bandwidth_bytes_per_s
    peak = m.peak_flops
    w = m.weight_bytes_per_param
    e_bytes = m.embedding_bytes_per_param if m.embedding_bytes_per_param is not None else w
    gemm_bw = bw * p.weight_bandwidth_efficiency(m.weight_dtype)
    gemm_rate = peak * interpolate(p.gemm_points(m.model_id, m.low_precision_compute, tp), n)
    qkv, o, mlp_dense, expert_params = _projection_params(a, tp, m.attention_tp)
    # With attention_dp groups a rank's attention GEMMs see its group's share of the step's tokens.
    n_attention = n / m.attention_dp
    attention_gemm_rate = gemm_rate if m.attention_dp == 1 else peak * interpolate(
        p.gemm_points(m.model_id, m.low_precision_compute, tp), n_attention)
    experts_read = a.expected_experts_touched(n) if a.moe else 0.0
    experts_used = a.moe.experts_per_token if a.moe else 0
    kernels = [
        # The input embedding gathers n rows; it is not read whole.
        _kernel("embedding", n * a.hidden_size * e_bytes / tp, 0.0, bw * p.bandwidth_efficiency, peak),
        _kernel("qkv", qkv * w, 2 * qkv * n_attention, gemm_bw, attention_gemm_rate),
    ]
    kv_bytes = kv_read_tokens * m.kv_bytes_per_token
    attention_flops = a.attention_flops_per_pair * attention_pairs / tp
    attention_rate = m.gpu.bf16_dense_flops * (p.prefill_attention_efficiency or p.compute_efficiency(float("inf")))
    attention = _kernel("attention", kv_bytes, attention_flops, bw * p.attention_kv_efficiency(context_tokens, mla=a.mla is not None),
                        attention_rate)
    kernels.append(attention)
    kernels.append(_kernel("o", o * w, 2 * o * n_attention, gemm_bw, attention_gemm_rate))
    kernels.append(_mlp(mlp_dense, expert_params * experts_read, expert_params * experts_used, n, w,
                        gemm_bw, gemm_rate, m.moe_gemm_efficiency))
    # lm_head: BF16 in quantized checkpoints, M = rows sampled (one per prompt in a prefill).
    head_params = a.vocab_size * a.hidden_size
    head_eff = interpolate(p.lm_head_efficiency_points or p.compute_efficiency_points, sampled)
    head_peak = peak if e_bytes == w else m.gpu.bf16_dense_flops
    kernels.append(_kernel("lm_head", head_params * e_bytes / tp, 2 * head_params * sampled / tp,
                           bw * p.bandwidth_efficiency, head_peak * head_eff))
    allreduce_s = m.allreduce_time_s(n)
    overhead = p.step_overhead_s + m.fixed_kernel_s
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
    allreduce_bytes = a.sublayers * n * a.hidden_size * ACTIVATION_BYTES if tp > 1 else 0.0
    kernels.append(new_frozen(KernelCost, {"kind": "allreduce", "bytes": allreduce_bytes, "flops": 0.0, "memory_s": 0.0,
                                     "compute_s": 0.0, "time_s": allreduce_s, "bound": "latency"}))
    kernels.append(new_frozen(KernelCost, {"kind": "overhead", "bytes": 0.0, "flops": 0.0, "memory_s": 0.0, "compute_s": 0.0,
                                     "time_s": overhead, "bound": "latency"}))
    serial = gemm_total + allreduce_s + overhead
    cpu = m.cpu_step_s + m.cpu_row_s * sampled if m.cpu_row_s else m.cpu_step_s
    gpu_s = max(attention.memory_s, attention.compute_s) + serial
    return new_frozen(StepCost, {
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
