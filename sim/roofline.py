"""Bytes, FLOPs and time of one forward step: the roofline clock of the whole simulator.

A step reads this rank's weights (for MoE, only the experts the step's tokens touch), reads the
KV cache of every sequence in it, and multiplies. Its time is

    t = max(weight_bytes / (BW x e_bw) + kv_bytes / (BW x e_kv),  FLOPs / (peak x e_c(tokens)))
        + all-reduce time + fixed per-step overhead

where e_bw, e_kv and e_c come from the efficiency profile (textbook: 0.80, 0.80, 0.55, no
overhead). Memory traffic and arithmetic overlap; the all-reduce between layers and the launch
overhead do not. The same function times a pure decode step, a prefill, and the mixed steps of
chunked prefill in the time-domain engine.
"""

from __future__ import annotations

from dataclasses import dataclass

from .architecture import Architecture
from .catalog import GPU
from .memory import ACTIVATION_BYTES
from .profiles import EfficiencyProfile


@dataclass(frozen=True)
class StepCost:
    tokens: float  # tokens multiplied through the weights in this step
    weight_bytes: float
    kv_bytes: float
    flops: float
    memory_time_s: float
    compute_time_s: float
    allreduce_time_s: float
    overhead_s: float
    time_s: float
    bound: str  # "memory" or "compute": the larger side of the roofline

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


@dataclass(frozen=True)
class Machine:
    """What the roofline needs to know about the hardware and the numeric formats."""

    arch: Architecture
    gpu: GPU
    profile: EfficiencyProfile
    tp: int
    weight_bytes_per_param: float
    kv_bytes_per_element: float
    fp8_compute: bool  # FP8 weights on a GPU with FP8 tensor cores run W8A8 at the FP8 peak

    @property
    def peak_flops(self) -> float:
        if self.fp8_compute and self.gpu.fp8_dense_flops:
            return self.gpu.fp8_dense_flops
        return self.gpu.bf16_dense_flops

    def allreduce_time_s(self, tokens: float) -> float:
        """Two ring all-reduces per layer (after attention and after the MLP), each of
        tokens x hidden BF16 values; a ring moves 2 (tp - 1) / tp of the buffer over each link."""
        if self.tp == 1 or tokens <= 0:
            return 0.0
        buffer_bytes = tokens * self.arch.hidden_size * ACTIVATION_BYTES
        link = self.gpu.interconnect_bytes_per_s * self.profile.interconnect_efficiency
        per_call = 2 * (self.tp - 1) / self.tp * buffer_bytes / link + self.profile.allreduce_latency_s
        return 2 * self.arch.num_layers * per_call


def step_cost(m: Machine, *, new_tokens: float, kv_read_tokens: float, attention_pairs: float) -> StepCost:
    """Cost of one forward step on one rank.

    new_tokens: tokens pushed through the weights (decode sequences + prefill tokens).
    kv_read_tokens: cached tokens read, summed over sequences, in full-attention-layer units
        (sliding-window layers already capped): bytes = kv_read_tokens x kv bytes per token.
    attention_pairs: (query, key) pairs, averaged over layers (see Architecture.causal_pairs).
    """
    a = m.arch
    profile = m.profile
    weight_bytes = a.params_read(new_tokens) * m.weight_bytes_per_param / m.tp
    kv_bytes = kv_read_tokens * a.kv_bytes_per_token(m.kv_bytes_per_element, m.tp)
    # 2 FLOPs per multiply-add; active parameters include the lm_head, as design.md counts them.
    gemm_flops = 2 * a.params_active * new_tokens / m.tp
    attention_flops = a.attention_flops_per_pair * attention_pairs / m.tp
    flops = gemm_flops + attention_flops
    bw = m.gpu.hbm_bandwidth_bytes_per_s
    memory_s = weight_bytes / (bw * profile.bandwidth_efficiency) + kv_bytes / (bw * profile.kv_bandwidth_efficiency)
    # Weight GEMMs have M = tokens in the step, so small steps run at the small-M efficiency.
    # Attention is not a GEMM of that shape: its arithmetic runs inside fused kernels at the
    # large-GEMM rate (and in decode it hides under the KV read), so it gets the plateau.
    peak = m.peak_flops
    compute_s = (gemm_flops / (peak * profile.compute_efficiency(new_tokens, fp8=m.fp8_compute))
                 + attention_flops / (peak * profile.compute_efficiency(float("inf"), fp8=m.fp8_compute)))
    allreduce_s = m.allreduce_time_s(new_tokens)
    overhead = profile.step_overhead_s
    return StepCost(
        tokens=new_tokens,
        weight_bytes=weight_bytes,
        kv_bytes=kv_bytes,
        flops=flops,
        memory_time_s=memory_s,
        compute_time_s=compute_s,
        allreduce_time_s=allreduce_s,
        overhead_s=overhead,
        time_s=max(memory_s, compute_s) + allreduce_s + overhead,
        bound="compute" if compute_s > memory_s else "memory",
    )


def decode_step(m: Machine, batch: int, context_tokens: float) -> StepCost:
    """One decode step: `batch` sequences each holding `context_tokens` of cache emit one token."""
    full, window = m.arch.kv_cached_tokens(context_tokens)
    n_slide = m.arch.num_sliding_layers
    per_seq = ((m.arch.num_layers - n_slide) * full + n_slide * window) / m.arch.num_layers
    return step_cost(m, new_tokens=batch, kv_read_tokens=batch * per_seq, attention_pairs=batch * per_seq)


def prefill(m: Machine, prompt_tokens: float) -> StepCost:
    """One prompt processed in a single forward pass (design.md: weights read once, the causal
    attention term on top of 2 x params x n)."""
    pairs = m.arch.causal_pairs(prompt_tokens)
    return step_cost(m, new_tokens=prompt_tokens, kv_read_tokens=0.0, attention_pairs=pairs)
