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
from .step_models import KERNEL_KINDS, KernelCost, StepCost, new_frozen, per_kernel, whole_step

__all__ = ["KERNEL_KINDS", "KernelCost", "Machine", "StepCost", "decode_step", "prefill", "step_cost"]

# Kernels one decoder layer launches in a CUDA-graph decode step, counted from vLLM's Llama and
# Mixtral forward passes (vllm/model_executor/models/llama.py, mixtral.py): fused residual
# RMSNorm, QKV GEMM, rotary embedding, KV-cache write, attention, O GEMM, fused residual RMSNorm,
# gate_up GEMM, SiLU-and-mul, down GEMM. An MoE layer replaces the last three with the router
# GEMM, top-k softmax, the block alignment, two fused expert GEMMs, the activation and the sum,
# plus three for a shared expert. Tensor parallelism adds two all-reduces per layer.
KERNELS_PER_DENSE_LAYER = 10
KERNELS_PER_MOE_LAYER = 14
KERNELS_PER_SHARED_EXPERT = 3
# MLA replaces the QKV GEMM, rotary and KV write (3 kernels) with ten in vLLM's absorbed decode
# path (vllm/model_executor/layers/mla.py and its MLA backends): the fused q_a/kv_a GEMM, the
# q_a and kv_a RMSNorms, the q_b GEMM, rotary, the W_UK batched GEMM into the latent, the concat
# of the query, the latent cache write, the split-KV decode kernel's combine, and the W_UV batched
# GEMM out of the latent: seven more kernels a layer than grouped-query attention.
KERNELS_MLA_EXTRA = 7
# Once per step: embedding lookup, final norm, lm_head, and the sampler's few kernels.
KERNELS_PER_STEP = 8


@dataclass(frozen=True)
class Machine:
    """What the step model needs to know about the hardware and the numeric formats. Built once
    per (model, GPU, profile, tp, dtypes, engine) by `resolve.machine_for` and shared by
    evaluate() and the time-domain engine."""

    arch: Architecture
    gpu: GPU
    profile: EfficiencyProfile
    tp: int
    weight_bytes_per_param: float
    kv_bytes_per_element: float
    fp8_compute: bool  # FP8 weights on a GPU with FP8 tensor cores run W8A8 at the FP8 peak
    # FP4 weights on a GPU with FP4 tensor cores run W4A4 at the FP4 peak; elsewhere FP4 (like INT4)
    # is a storage format the kernels widen to BF16, so only the bytes shrink.
    fp4_compute: bool = False
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
    # Attention runs as attention_dp data-parallel groups of tp / attention_dp GPUs, each serving
    # its own requests; expert_parallel spreads whole experts over the tp GPUs (Scenario).
    attention_dp: int = 1
    expert_parallel: bool = False
    pp: int = 1  # pipeline stages, each of tp GPUs holding a run of the layers (decode_step)

    def cpu_s(self, sampled_tokens: float) -> float:
        """The engine's host time of one step that samples `sampled_tokens` rows."""
        return self.cpu_step_s + self.cpu_row_s * sampled_tokens

    @cached_property
    def peak_flops(self) -> float:
        if self.fp4_compute and self.gpu.fp4_dense_flops:
            return self.gpu.fp4_dense_flops
        if self.fp8_compute and self.gpu.fp8_dense_flops:
            return self.gpu.fp8_dense_flops
        return self.gpu.bf16_dense_flops

    @property
    def low_precision_compute(self) -> bool:
        """GEMMs at an FP8 or FP4 peak take the profile's FP8 efficiency curve. No profile measures
        FP4 GEMMs yet; the FP8 curve is the nearest measured kind (block-scaled low-precision tensor-core
        GEMMs), an assumption docs/sim.md states."""
        return self.fp8_compute or self.fp4_compute

    @cached_property
    def ridge_intensity(self) -> float:
        """FLOPs per byte where the large-GEMM rate meets the weight-read bandwidth."""
        return self.achieved_peak_flops / self.achieved_bandwidth_bytes_per_s

    @property
    def achieved_peak_flops(self) -> float:
        """The large-GEMM rate the profile reaches: the roofline's flat roof."""
        return self.peak_flops * self.profile.compute_efficiency(1e9, self.low_precision_compute)

    @property
    def achieved_bandwidth_bytes_per_s(self) -> float:
        """HBM bandwidth at the profile's efficiency: the roofline's sloped roof."""
        return self.gpu.hbm_bandwidth_bytes_per_s * self.profile.bandwidth_efficiency

    @cached_property
    def moe_gemm_efficiency(self) -> float:
        """Fraction of a dense GEMM's bandwidth and rate the routed experts' fused GEMMs reach.
        Tensor parallelism slices every expert's intermediate dimension, so a rank multiplies
        narrow matrices (Qwen3-235B-A22B at tp 8: 1,536 / 8 = 192 columns), each its own small
        problem with tile padding and partial waves; w / (w + w_half), w the slice's width and
        w_half the profile's fitted moe_half_efficiency_width (docs/sim.md)."""
        half = self.profile.moe_half_efficiency_width
        if self.arch.moe is None or not half:
            return 1.0
        # Expert parallelism keeps experts whole: a rank multiplies the full width.
        width = self.arch.moe.expert_intermediate_size / (1 if self.expert_parallel else self.tp)
        return width / (width + half)

    @property
    def attention_tp(self) -> int:
        """GPUs one attention group splits its heads over."""
        return self.tp // self.attention_dp

    @cached_property
    def kv_bytes_per_token(self) -> float:
        """Cache bytes a token costs on one rank (the mean over the ranks with attention_dp)."""
        return self.arch.kv_bytes_per_token(self.kv_bytes_per_element, self.tp, self.attention_dp)

    @cached_property
    def state_read_tokens(self) -> float:
        """A hybrid model's recurrent state, read and written back by every step a sequence takes
        part in, in the step model's unit (KV tokens of this rank: bytes / kv_bytes_per_token).
        0 for a model without linear-attention layers."""
        state = self.arch.state_bytes_per_sequence(self.tp, self.attention_dp)
        return 2 * state / self.kv_bytes_per_token if state else 0.0

    @cached_property
    def cache_read_tokens(self):
        """The rule for what a query of a sequence holding `context_tokens` reads of its cache, in
        KV tokens of this rank: the layer kinds' rule (Architecture.kv_read_tokens), or for a DSA
        model every indexer key and at most index_topk latents, weighted by their bytes -- at 64k
        tokens in BF16, 64k x 132 + 2,048 x 1,152 bytes a layer against 64k x 1,284 without the
        indexer's choice."""
        arch = self.arch
        if arch.indexer is None:
            return arch.kv_read_tokens
        key, topk = self.indexer_key_share, arch.indexer.topk
        return lambda context_tokens: key * context_tokens + (1.0 - key) * min(context_tokens, topk)

    @cached_property
    def indexer_key_share(self) -> float:
        """A DSA model's indexer key's share of a token's cache bytes (132 of 1,284 in BF16); 0 without."""
        arch = self.arch
        return arch.indexer.key_bytes / arch.kv_bytes_per_token_per_layer(self.kv_bytes_per_element) if arch.indexer else 0.0

    def kv_read_tokens(self, context_tokens: float) -> float:
        """What one sequence holding `context_tokens` reads in a step: its cache
        (cache_read_tokens) and its recurrent state, if any."""
        return self.cache_read_tokens(context_tokens) + self.state_read_tokens

    @cached_property
    def whole_step_constants(self) -> tuple[float, ...]:
        """What the whole-step roofline needs that does not depend on the step: computed once per
        machine (evaluate and the engine call step_cost many times per scenario)."""
        a, p, bw = self.arch, self.profile, self.gpu.hbm_bandwidth_bytes_per_s
        return (self.weight_bytes_per_param, 2 * a.per_rank(a.params_active, self.tp),
                a.attention_flops_per_pair / self.tp, bw * p.bandwidth_efficiency, bw * p.kv_bandwidth_efficiency,
                self.peak_flops * p.compute_efficiency(float("inf"), fp8=self.low_precision_compute))

    def allreduce_time_s(self, tokens: float) -> float:
        """A ring all-reduce after each mixer and each MLP (two a transformer layer, one a
        Nemotron-H block: Architecture.sublayers), each of tokens x hidden BF16 values; a ring moves
        2 (tp - 1) / tp of the buffer over each link."""
        if self.tp == 1 or tokens <= 0:
            return 0.0
        buffer_bytes = tokens * self.arch.hidden_size * ACTIVATION_BYTES
        link = self.link_bytes_per_s(self.tp)
        per_call = 2 * (self.tp - 1) / self.tp * buffer_bytes / link + self.profile.allreduce_latency_s
        return self.arch.sublayers * per_call

    def pipeline_hops_s(self, tokens: float) -> float:
        """Hand-offs of one token set's activations through the pp stages of a round: tokens x
        hidden BF16 values per hop over the link, plus a small message's latency."""
        if self.pp == 1 or tokens <= 0:
            return 0.0
        link = self.link_bytes_per_s(self.tp * self.pp)
        return self.pp * (tokens * self.arch.hidden_size * ACTIVATION_BYTES / link + self.profile.allreduce_latency_s)

    def link_efficiency(self, ranks: int) -> float:
        """Fraction of the link's datasheet bandwidth a collective over `ranks` GPUs reaches: the
        profile's PCIe figure when it leaves an NVLink-bridged pair, else its interconnect's."""
        p, gpu = self.profile, self.gpu
        over_pcie = gpu.interconnect_gpus is not None and ranks > gpu.interconnect_gpus
        return p.host_link_efficiency if over_pcie and p.host_link_efficiency else p.interconnect_efficiency

    def link_bytes_per_s(self, ranks: int) -> float:
        """Bandwidth a collective over `ranks` GPUs achieves on the slowest link it crosses."""
        return self.gpu.link_bytes_per_s(ranks) * self.link_efficiency(ranks)

    @cached_property
    def fixed_kernel_s(self) -> float:
        """What a step's kernels cost whatever their bytes: kernel_overhead_s for every kernel,
        latency_kernel_s more for each an MoE or MLA layer adds to a dense layer's."""
        p = self.profile
        return p.kernel_overhead_s * self.kernels_per_step() + p.latency_kernel_s * self.extra_kernels_per_step()

    def kernels_per_step(self) -> int:
        return self.arch.num_layers * KERNELS_PER_DENSE_LAYER + self.extra_kernels_per_step() + KERNELS_PER_STEP

    def extra_kernels_per_step(self) -> int:
        """Kernels the step's MoE and MLA layers launch beyond a dense grouped-query layer's ten:
        the router's top-k, block alignment and expert sum (and a shared expert's three), and MLA's
        seven. DeepSeek-V3: 58 x 7 + 61 x 7 = 833; a dense model: 0."""
        a = self.arch
        extra = 0
        for k in a.layer_kinds:
            n = 0
            if k.mlp == "moe":
                n += KERNELS_PER_MOE_LAYER - KERNELS_PER_DENSE_LAYER
                if a.moe.shared_intermediate_size:
                    n += KERNELS_PER_SHARED_EXPERT
            if k.attention == "mla":
                n += KERNELS_MLA_EXTRA
            extra += k.count * n
        return extra

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
        return per_kernel(m, new_tokens, kv_read_tokens, attention_pairs, sampled, context_tokens)
    return whole_step(m, new_tokens, kv_read_tokens, attention_pairs, detail, sampled)

def decode_step(m: Machine, batch: int, context_tokens: float, detail: bool = True) -> StepCost:
    """One decode step: `batch` sequences each holding `context_tokens` of cache emit one token.

    With pp pipeline stages the batch runs as pp micro-batches in flight (vLLM's virtual engines),
    each stage working on one while the next works on another: a micro-batch's token takes the
    whole model's step at batch / pp plus the hand-offs between stages, and every stage is busy
    all the time. So the returned step is the time between a sequence's tokens (ITL), in which
    all `batch` sequences emit one."""
    if m.pp > 1 and batch > 1:
        batch = batch / min(m.pp, batch)  # fewer sequences than stages: one a micro-batch
    per_seq = m.cache_read_tokens(context_tokens)
    # A recurrent state is read and written, not attended to: bytes, no pairs. (A DSA query's
    # pairs are counted as its reads, as the time-domain engine counts them: a decode step's
    # attention is bound by the bytes.)
    c = step_cost(m, new_tokens=batch, kv_read_tokens=batch * (per_seq + m.state_read_tokens), attention_pairs=batch * per_seq,
                  sampled_tokens=batch, context_tokens=context_tokens, detail=detail)
    return _plus_hops(c, m.pipeline_hops_s(batch), detail) if m.pp > 1 else c


def prefill(m: Machine, prompt_tokens: float, chunk_tokens: int | None = None, sequences: int = 1,
            detail: bool = True) -> StepCost:
    """_prefill, plus the hand-offs between pipeline stages (a prompt passes through them in turn,
    so pipeline parallelism does not shorten a prefill)."""
    c = _prefill(m, prompt_tokens, chunk_tokens, sequences, detail)
    return _plus_hops(c, m.pipeline_hops_s(prompt_tokens * sequences), detail) if m.pp > 1 else c


def _prefill(m: Machine, prompt_tokens: float, chunk_tokens: int | None = None, sequences: int = 1,
             detail: bool = True) -> StepCost:
    """`sequences` prompts of `prompt_tokens` each, processed in forward passes of at most
    `chunk_tokens` tokens (None: one pass, as design.md's textbook prefill: weights read once, the
    causal attention term on top of 2 x params x n). Chunks of a long prompt each re-read the
    weights and attend to the chunks before them; the costs of the passes are summed. detail=False:
    only the totals (a chunked prefill's summed kernel rows are left out, kernels may be ())."""
    total = prompt_tokens * sequences
    if chunk_tokens is None or total <= chunk_tokens:
        pairs = m.arch.causal_pairs(prompt_tokens) * sequences
        return step_cost(m, new_tokens=total, kv_read_tokens=m.state_read_tokens * sequences, attention_pairs=pairs,
                         sampled_tokens=sequences, detail=detail)
    if sequences > 1:
        if prompt_tokens >= chunk_tokens:
            return _scaled(_prefill(m, prompt_tokens, chunk_tokens, detail=detail), sequences, detail)
        # Whole prompts packed into passes of at most chunk_tokens tokens.
        per_pass = max(int(chunk_tokens // prompt_tokens), 1)
        c = step_cost(m, new_tokens=per_pass * prompt_tokens, kv_read_tokens=m.state_read_tokens * per_pass,
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
    return step_cost(m, new_tokens=tokens, kv_read_tokens=m.kv_read_tokens(cached),
                     attention_pairs=m.arch.causal_pairs(tokens, cached), sampled_tokens=1 if sample else 0,
                     context_tokens=cached + tokens / 2, detail=detail)


def _plus_hops(c: StepCost, hops_s: float, detail: bool) -> StepCost:
    """Step c with pipeline hand-offs added to its communication (the all-reduce row)."""
    values = dict(c.__dict__)
    for key in ("allreduce_time_s", "time_s", "serial_s", "wall_s"):
        values[key] += hops_s
    if detail:
        values["kernels"] = tuple(new_frozen(KernelCost, {**k.__dict__, "time_s": k.time_s + hops_s}) if k.kind == "allreduce"
                                  else k for k in c.kernels)
    return new_frozen(StepCost, values)


def _scaled(c: StepCost, factor: float, detail: bool = True) -> StepCost:
    """`factor` identical passes of step c, one after another (detail=False: without kernel rows)."""
    kernels = tuple(new_frozen(KernelCost, {"kind": k.kind, "bytes": k.bytes * factor, "flops": k.flops * factor,
                                      "memory_s": k.memory_s * factor, "compute_s": k.compute_s * factor,
                                      "time_s": k.time_s * factor, "bound": k.bound}) for k in (c.kernels if detail else ()))
    return new_frozen(StepCost, {
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
    kernels = tuple(new_frozen(KernelCost, {"kind": kind, "bytes": fsum(k.bytes for k in ks), "flops": fsum(k.flops for k in ks),
                                      "memory_s": fsum(k.memory_s for k in ks), "compute_s": fsum(k.compute_s for k in ks),
                                      "time_s": fsum(k.time_s for k in ks), "bound": max(ks, key=lambda k: k.time_s).bound})
                    for kind, ks in by_kind.items())
    memory_s = fsum(c.memory_time_s for c in costs)
    compute_s = fsum(c.compute_time_s for c in costs)
    return new_frozen(StepCost, {
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
