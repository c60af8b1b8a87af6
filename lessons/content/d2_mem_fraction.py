"""D2. mem_fraction_static: five points of memory."""

from __future__ import annotations

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, equal, equation, estimate, holds, keyed, near, number
from .runs import gib, run, tok

SGL = dict(model="qwen3-32b", engine="sglang")
# Seed 001's deployment: an MLA model of Kimi-K2's shape on eight RTX PRO 6000 under SGLang at
# mem_fraction_static 0.85 (its server reported max_total_num_tokens 116,171; the case study
# estimated "~14.8 GB per GPU" for them).
CASE = dict(model="kimi-k2", gpu="rtx-pro-6000", tp=8, engine="sglang", weight_dtype="nvfp4", mem_fraction_static=0.85)
CASE_TOKENS = 116_171
CASE_ESTIMATE_BYTES = 14.8e9
GB = 1e9


def build() -> Lesson:
    low, high = run(**SGL, mem_fraction_static=0.85), run(**SGL, mem_fraction_static=0.90)
    gain = high.kv_pool_tokens / low.kv_pool_tokens - 1

    total = high.capacity_bytes - high.startup_bytes  # what SGLang measures, after the CUDA context
    q1 = Prediction(
        key="d2-tokens",
        question=(f"SGLang serves {low.model_name} on one H100. At mem_fraction_static 0.85 its KV pool holds "
                  f"{number(low.kv_pool_tokens)} tokens of {number(low.kv_bytes_per_token)} bytes each. Raise the fraction "
                  "to 0.90, five points. How many tokens does the pool hold now?"),
        **estimate(high.kv_pool_tokens, "tokens the pool holds", "tokens"),
        reveal=(f"**{number(high.kv_pool_tokens)} tokens**, +{gain:.0%} for five points. The pool goes from "
                f"{gib(low.kv_pool_bytes)} to {gib(high.kv_pool_bytes)}. Reading the fraction as a share of what the "
                f"weights leave would have predicted about {number(low.kv_pool_tokens * 0.90 / 0.85)}."),
        gives_away=(f"**{number(high.kv_pool_tokens)} tokens**", f"+{gain:.0%} for five points"),
        peek=(near(f"pool = f x (total - start-up) - weights = 0.90 x ({gib(total, 2)} - {gib(high.startup_bytes, 2)}) - "
                   f"{gib(high.weight_bytes, 2)} = {gib(high.kv_pool_bytes, 2)}",
                   0.90 * total - high.weight_bytes, high.kv_pool_bytes, 0.001),
              equation(f"tokens = pool bytes / bytes per token = {number(high.kv_pool_bytes)} B / "
                       f"{number(high.kv_bytes_per_token)} B = {number(high.kv_pool_tokens)} tokens",
                       high.kv_pool_bytes // high.kv_bytes_per_token, high.kv_pool_tokens)),
    )
    s1 = """
SGLang's pool is `mem_fraction_static x total - weights`. When the weights take most of that budget, the
pool is a thin remainder and every point of the fraction is a large part of it: leverage at the margin. Reading
the fraction as a share of memory after the weights (a common slip, and the case study's) predicts a few
percent and misses by ten times.

The other side of the fraction is not free: activations, CUDA graphs and the sampler live in the 1 - f share,
so raising it far enough fails at start-up or under the first large batch.
"""
    step1 = Step(q1, s1, (
        equal("f 0.85 -> 0.90 takes the pool from 24,000 to 40,112 tokens", (low.kv_pool_tokens, high.kv_pool_tokens),
              (24000, 40112)),
    ), LiveView("steady", ("hbm_bar", "admission_numbers"), {**SGL, "mem_fraction_static": 0.9}, ("mem_fraction_static",),
                "SGLang accounting: the pool as mem_fraction_static x total - weights."),
        (TryThis("Set Accounting to sglang, choose Qwen3-32B and move mem_fraction_static from 0.85 to 0.90.",
                 {**SGL, "mem_fraction_static": 0.85}),))
    case, one_gpu = run(**CASE), run(**{**CASE, "tp": 1, "gpu_memory_gib": 1024})
    per_gpu = case.kv_bytes_per_token  # every rank's share of one token's cache
    case_bytes = CASE_TOKENS * per_gpu
    q2 = Prediction(
        key="d2-mla-per-gpu",
        question=(f"The saturation case study served an MLA model of Kimi-K2's shape on eight GPUs under SGLang, and its "
                  f"server reported a pool of {tok(CASE_TOKENS)} tokens. One token's cache is 61 layers x 576 latent values "
                  "x 2 bytes. How much memory does that pool take on each GPU?"),
        choices=(
            Choice("about 1 GB", "This splits each token's cache eight ways, as tensor parallelism splits KV heads. MLA has "
                                 "no heads to split: its one latent per layer is stored whole on every GPU."),
            Choice("about 8 GB", "Every GPU holds every token's latent: 116,171 tokens x 70,272 bytes, on each of the eight."),
            Choice("about 15 GB", "The case study's own estimate. Multiply it out: the tokens and the bytes per token give "
                                  "about half of it."),
        ),
        **keyed(case_bytes / GB, [(3.0, "about 1 GB"), (11.5, "about 8 GB")], "about 15 GB"),
        reveal=(f"**{case_bytes / GB:.1f} GB on every GPU.** sim's cache per token on each of the eight GPUs is "
                f"{per_gpu:,.0f} bytes, the same as on one GPU: eight GPUs hold no more tokens per GB than one. The case "
                f"study's 14.8 GB a GPU would hold {tok(CASE_ESTIMATE_BYTES / per_gpu)} tokens."),
        gives_away=(f"{case_bytes / GB:.1f} GB on every GPU",),
    )
    s2 = f"""
Tensor parallelism divides a GQA model's cache by the GPUs because it divides the KV heads among them. An MLA
layer caches one compressed latent per token (A2), and every GPU's attention needs all of it, so each GPU keeps
the whole cache: {per_gpu:,.0f} bytes a token on each of the eight, the same as on one. Eight GPUs buy room by
spreading the *weights*, which leaves each card more memory for its copy of the pool, not by spreading the
cache.

The arithmetic also checks the case study's figures against each other. {tok(CASE_TOKENS)} tokens at
{per_gpu:,.0f} bytes are {case_bytes / GB:.1f} GB a GPU, about half its "~14.8 GB per GPU", so one of the two
figures is not what the server held. kvlab's own pool for this setup (NVFP4 weights, f = 0.85) is
{tok(case.kv_pool_tokens)} tokens, {gib(case.kv_pool_bytes)} a GPU. The real server held fewer: its model was
Kimi-K2.5, which kvlab's catalog does not hold, and kvlab does not model every allocation SGLang makes before
its pool. The server's own log line, not arithmetic, is the figure to trust.
"""
    step2 = Step(q2, s2, (
        holds("each GPU holds every token's whole latent under tp 8", per_gpu == one_gpu.kv_bytes_per_token,
              f"{per_gpu:,.0f} B at tp 8, {one_gpu.kv_bytes_per_token:,.0f} B at tp 1"),
        equal("one token's latent cache is 61 x 576 x 2 bytes", per_gpu, 61 * 576 * 2),
        holds("the reported pool takes 7 to 9 GB a GPU", 7 * GB < case_bytes < 9 * GB, f"{case_bytes / GB:.2f} GB"),
        holds("the case study's 14.8 GB estimate is over 1.5x that", CASE_ESTIMATE_BYTES > 1.5 * case_bytes,
              f"{CASE_ESTIMATE_BYTES / case_bytes:.2f}x"),
    ), LiveView("steady", ("kv_formula", "admission_numbers"), CASE, ("mem_fraction_static", "kv_dtype"),
                "The case study's deployment: the formula gives each GPU's bytes per token, not divided by the eight GPUs."),
        (TryThis("Open the case study's deployment (Kimi-K2, eight RTX PRO 6000, SGLang accounting) and read the bytes per "
                 "token in the formula: 61 x 576 x 2, on every GPU.", CASE),))
    return Lesson(
        **course.header("D2"),
        objective="Compute SGLang's pool from mem_fraction_static, and what a change of a few points does to it.",
        prerequisites=("A3",),
        setup="A case study tuned SGLang's memory fraction by reasoning about percentages. Check the arithmetic.",
        steps=(step1, step2),
        recap=("SGLang: pool = f x total - weights.",
               "With large weights, small changes of f are large changes of the pool; too high a value starves activations.",
               "An MLA cache is not split by tensor parallelism: every GPU holds every token's latent."),
        not_captured=("kvlab does not check that the 1 - f share fits SGLang's activations and CUDA graphs, so it shows no "
                      "out-of-memory error at high fractions.",),
        ideas=("mem-fraction-static", "mem-fraction-oom", "mla-per-gpu"),
    )
