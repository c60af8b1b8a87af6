"""What each mode measures, and the time it is allowed.

Three plans:
- full  (GPU, default): the dense models of sim/data/models (FULL_PLAN_MODELS), M = 1 .. 16384, bf16
  (fp8 probed), then the MoE layers of MOE_MODELS at their experts' token counts, the TP-sharded
  projections of TP_MODELS at TP 2, 4, 8, and MLA decode attention (DeepSeek-V3); budget 240 s
  of measurement (the device runner passes less), of which reserve_s is kept for the later sweeps.
- quick (GPU, --quick): Qwen3-8B shapes, fewer points, bf16 only, one MoE model and the MLA
  kernel, budget 40 s (under 1 minute).
- tiny  (NumPy backend): every width divided by 32 and a few points, to check the pipeline and
  the schema in a few seconds on a CPU. Its numbers describe nothing but the code path.

Sizing the full plan (H200 figures): the largest GEMM, M = 16384 at Qwen3-32B hidden x vocab
(5120 x 151936), is 2.5e16 FLOP, about 33 ms at 780 TFLOP/s; every GEMM point of the plan at about
15 timed calls adds up to under 20 s. The HBM sweep up to 4 GiB, the attention grid and the
overhead probe take a few seconds each. The budget is a ceiling, not a target: points are skipped
(and reported) if it runs out, so a slow or throttled GPU still finishes on time.
"""

from __future__ import annotations

from dataclasses import dataclass

from .timing import RepeatPolicy

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30

# Kernels an eager decode step launches per layer: input norm, QKV GEMM, rotary embedding,
# KV-cache write, attention, output projection, residual add, post-attention norm, gate/up GEMM,
# activation, down GEMM, residual add. Plus about 4 per step (embedding, final norm, LM head,
# sampling). Engines capture this in a CUDA graph; the overhead probe times both ways.
KERNELS_PER_LAYER = 12
KERNELS_PER_STEP_EXTRA = 4


@dataclass(frozen=True)
class Plan:
    name: str
    budget_s: float
    models: tuple[str, ...]
    width_divisor: int  # 1 on a GPU; the tiny plan divides model widths by this
    hbm_sizes_bytes: tuple[int, ...]
    hbm_plateau_min_bytes: int  # sizes at or above this count for the fitted bandwidth
    gemm_tokens: tuple[int, ...]
    gemm_dtypes: tuple[str, ...]
    try_fp8: bool
    lm_head_max_tokens: int
    attention_models: tuple[str, ...]
    attention_batches: tuple[int, ...]
    attention_contexts: tuple[int, ...]
    attention_max_kv_bytes: int
    attention_mla_models: tuple[str, ...]  # MLA latent-cache layouts (DeepSeek-V3)
    mla_tp: int  # heads per GPU of the MLA layout = q heads / mla_tp (DeepSeek is served on 8 GPUs)
    moe_models: tuple[str, ...]  # MoE models whose expert GEMMs are timed at their token counts
    moe_tokens: tuple[int, ...]
    tp_models: tuple[str, ...]  # models whose TP-sharded projection GEMMs are timed
    tp_sizes: tuple[int, ...]
    tp_tokens: tuple[int, ...]
    reserve_s: tuple[tuple[str, float], ...]  # budget kept back for a later benchmark while earlier ones run
    overhead_trials: int
    overhead_kernel_counts: tuple[int, ...]
    eager_overhead: bool
    allreduce_sizes_bytes: tuple[int, ...]
    repeats: RepeatPolicy
    point_target_s: float  # time the repeats of one point should take, before budget sharing


def _geometric(lo: int, hi: int, factor: int) -> tuple[int, ...]:
    out, x = [], lo
    while x <= hi:
        out.append(x)
        x *= factor
    return tuple(out)


# Tokens per step for the GEMM curves: every value 1..16 (batch-1 to batch-16 decode, where
# interpolating between powers of two overstated efficiency by up to 5.6%), then about 1.5x steps.
DENSE_TOKENS = tuple(range(1, 17)) + (24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 2048, 4096, 8192, 16384)
QUICK_TOKENS = (1, 2, 3, 4, 6, 8, 12, 16, 32, 64, 128, 256, 512, 1024, 4096, 16384)

# The dense models measured by the full plan, most used first: the budget skips whole models from
# the end of this list, never part of one. MoE, MLA and recurrent-state (hybrid) models are not
# measured yet.
FULL_PLAN_MODELS = ("qwen3-8b", "llama-3.1-8b", "qwen3-32b", "llama-3.1-70b", "qwen3-14b", "mistral-7b",
                    "qwen3-4b", "gemma-2-9b", "gemma-3-27b", "gemma-2-27b", "qwen3-1.7b", "qwen3-0.6b",
                    "llama-2-70b", "llama-3.1-405b")

# Decode attention is measured on the model whose shape it calibrates (Qwen3-8B: 8 KV heads,
# group 4, head_dim 128), plus a group-of-8 layout (Llama-3.1-70B) as a cross-check.
ATTENTION_MODELS = ("qwen3-8b", "llama-3.1-70b")
MLA_MODELS = ("deepseek-v3",)

# MoE models, one per expert layout (DeepSeek-R1 has DeepSeek-V3's shapes: the fit copies its
# curve). Tokens per step: the expert GEMMs see tokens x top_k / experts rows each, so the grid
# is coarser than the dense one and reaches further.
MOE_MODELS = ("qwen3-30b-a3b", "mixtral-8x7b", "qwen3-235b-a22b", "deepseek-v3")
MOE_TOKENS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
# TP-sharded projections: the models people shard (the large ones first), TP 2, 4, 8.
TP_MODELS = ("llama-3.1-70b", "qwen3-32b", "qwen3-8b", "llama-3.1-8b", "qwen3-14b", "llama-3.1-405b")
TP_SIZES = (2, 4, 8)
TP_TOKENS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 16384)


def full_plan(models: tuple[str, ...]) -> Plan:
    return Plan(
        name="full",
        budget_s=240.0,
        models=models,
        width_divisor=1,
        hbm_sizes_bytes=_geometric(4 * KIB, 4 * GIB, 4),
        hbm_plateau_min_bytes=256 * MIB,
        gemm_tokens=DENSE_TOKENS,
        gemm_dtypes=("bf16",),
        try_fp8=True,
        lm_head_max_tokens=1024,
        attention_models=ATTENTION_MODELS,
        attention_batches=(1, 4, 16, 64, 256),
        attention_contexts=(512, 1024, 2048, 4096, 8192, 16384, 32768, 65536),
        attention_max_kv_bytes=8 * GIB,
        attention_mla_models=MLA_MODELS,
        mla_tp=8,
        moe_models=MOE_MODELS,
        moe_tokens=MOE_TOKENS,
        tp_models=TP_MODELS,
        tp_sizes=TP_SIZES,
        tp_tokens=TP_TOKENS,
        # the dense GEMM sweep stops (whole models) while this much is left for the MoE and TP sweeps
        reserve_s=(("moe", 30.0), ("tp", 35.0), ("mla_attention", 12.0)),
        overhead_trials=30,
        overhead_kernel_counts=(1, 16, 64, 256, 1024),
        eager_overhead=False,
        allreduce_sizes_bytes=_geometric(1 * KIB, 1 * GIB, 4),
        # 5 batches of back-to-back calls per point (each batch up to 100 calls, at least 1 ms of
        # GPU time for a 10 us GEMM, hundreds of times the event floor): their spread is recorded;
        # more calls mostly cost time that now measures the MoE and TP shapes
        repeats=RepeatPolicy(warmup=3, min_repeats=5, max_repeats=100),
        point_target_s=0.02,
    )


def quick_plan(models: tuple[str, ...]) -> Plan:
    return Plan(
        name="quick",
        budget_s=40.0,
        models=models,
        width_divisor=1,
        hbm_sizes_bytes=(64 * KIB, 1 * MIB, 16 * MIB, 256 * MIB, 1 * GIB),
        hbm_plateau_min_bytes=256 * MIB,
        gemm_tokens=QUICK_TOKENS,
        gemm_dtypes=("bf16",),
        try_fp8=False,
        lm_head_max_tokens=1024,
        attention_models=ATTENTION_MODELS[:1],
        attention_batches=(1, 32, 256),
        attention_contexts=(1024, 4096, 16384),
        attention_max_kv_bytes=8 * GIB,
        attention_mla_models=MLA_MODELS,
        mla_tp=8,
        moe_models=MOE_MODELS[:1],
        moe_tokens=(1, 8, 64, 512, 4096),
        tp_models=(),
        tp_sizes=TP_SIZES,
        tp_tokens=(),
        reserve_s=(("moe", 5.0), ("mla_attention", 4.0)),
        overhead_trials=10,
        overhead_kernel_counts=(1, 64, 256, 1024),
        eager_overhead=False,
        allreduce_sizes_bytes=(1 * KIB, 1 * MIB, 256 * MIB),
        repeats=RepeatPolicy(warmup=3, min_repeats=5, max_repeats=50),
        point_target_s=0.02,
    )


def tiny_plan(models: tuple[str, ...], quick: bool) -> Plan:
    return Plan(
        name="tiny-quick" if quick else "tiny",
        budget_s=20.0,
        models=models,
        width_divisor=32,
        hbm_sizes_bytes=(4 * KIB, 64 * KIB, 1 * MIB, 4 * MIB),
        hbm_plateau_min_bytes=1 * MIB,
        gemm_tokens=(1, 2, 4, 16, 64) if quick else (1, 2, 3, 4, 8, 16, 64, 256),
        gemm_dtypes=("bf16",) if quick else ("bf16", "fp16"),
        try_fp8=False,
        lm_head_max_tokens=64,
        attention_models=ATTENTION_MODELS[:1],
        attention_batches=(1, 4),
        attention_contexts=(64, 256),
        attention_max_kv_bytes=64 * MIB,
        attention_mla_models=MLA_MODELS,
        mla_tp=8,
        moe_models=MOE_MODELS[:1] if quick else ("qwen3-30b-a3b", "deepseek-v3"),
        moe_tokens=(1, 4, 64) if quick else (1, 8, 64),
        tp_models=() if quick else ("qwen3-8b",),
        tp_sizes=TP_SIZES,
        tp_tokens=(1, 4, 64),
        reserve_s=(("moe", 2.0), ("tp", 2.0), ("mla_attention", 1.0)),
        overhead_trials=3,
        overhead_kernel_counts=(1, 64, 256),
        eager_overhead=False,
        allreduce_sizes_bytes=(),
        repeats=RepeatPolicy(warmup=1, min_repeats=3, max_repeats=5),
        point_target_s=0.005,
    )


def make_plan(backend_name: str, quick: bool, models: tuple[str, ...] | None, all_models: tuple[str, ...]) -> Plan:
    """The plan for a run. Default models: all of them for the full GPU plan, Qwen3-8B (or the
    first model) otherwise."""
    first = ("qwen3-8b",) if "qwen3-8b" in all_models else all_models[:1]
    if backend_name == "numpy":
        return tiny_plan(models or first, quick)
    if quick:
        return quick_plan(models or first)
    return full_plan(models or tuple(m for m in FULL_PLAN_MODELS if m in all_models))


def kernels_per_step(num_hidden_layers: int) -> int:
    """Kernel launches in one eager decode step. Example: Qwen3-8B, 36 layers: 36 x 12 + 4 = 436."""
    return num_hidden_layers * KERNELS_PER_LAYER + KERNELS_PER_STEP_EXTRA
