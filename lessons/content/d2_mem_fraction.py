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
    step3 = three_engines()
    step4 = too_high()
    return Lesson(
        **course.header("D2"),
        objective=("Compute SGLang's pool from mem_fraction_static, what a change of a few points does to it, what it "
                   "takes from activations, and what vLLM's, SGLang's and TensorRT-LLM's fractions are each a fraction of."),
        prerequisites=("A3",),
        setup="A case study tuned SGLang's memory fraction by reasoning about percentages. Check the arithmetic.",
        steps=(step1, step2, step3, step4),
        recap=("SGLang: pool = f x total - weights.",
               "Each engine's fraction is of a different base: vLLM's of the card, SGLang's of the card after its start-up, "
               "TensorRT-LLM's of what is still free after the weights and its warm-up.",
               "With large weights, small changes of f are large changes of the pool; too high a value starves activations "
               "and CUDA graphs, which live in the 1 - f share.",
               "An MLA cache is not split by tensor parallelism: every GPU holds every token's latent."),
        not_captured=("kvlab compares the 1 - f share with SGLang's own estimate of what activations and CUDA graphs need, "
                      "but does not predict an out-of-memory error: the estimate is a margin, and another public server "
                      "started its pool with less (docs/sim.md).",
                      "TensorRT-LLM's measured peak also holds CUDA graph pools and autotuner workspaces, which kvlab does not "
                      "model, so kvlab's TensorRT-LLM pool comes out a few percent larger than a real boot's.",),
        ideas=("mem-fraction-static", "mem-fraction-oom", "mla-per-gpu"),
    )


# One model on one card under the three engines' accountings, each at its own default fraction.
THREE = dict(model="qwen3-32b", gpu="h100-sxm")  # step 1's model: large weights, a thin pool
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "tensorrt-llm": "TensorRT-LLM"}


def three_engines() -> Step:
    vl, sg, trt = (run(**THREE, engine=e) for e in ENGINE_NAMES)
    ratio = trt.kv_pool_tokens / vl.kv_pool_tokens
    f_vl, f_sg = vl.scenario["gpu_memory_utilization"], sg.effective_mem_fraction_static
    f_trt = trt.effective_kv_cache_free_gpu_mem_fraction
    free = trt.capacity_bytes - trt.startup_bytes - trt.weight_bytes - trt.activation_reserve_bytes
    sg_total = sg.capacity_bytes - sg.startup_bytes
    q = Prediction(
        key="d2-three-engines",
        question=(f"Step 1's {vl.model_name} on one H100, under three engines, each at its default memory setting: "
                  f"vLLM's gpu_memory_utilization {f_vl:.2f}, SGLang's mem_fraction_static {f_sg:.3f}, TensorRT-LLM's "
                  f"kv_cache_free_gpu_mem_fraction {f_trt:.2f}. vLLM and TensorRT-LLM both say {f_trt:.2f}. Which of those two "
                  "KV pools holds more tokens?"),
        choices=(
            Choice("vLLM's", f"This reads both {f_trt:.2f}s as shares of the same memory and expects the engine that counts the "
                             f"whole card to keep more. vLLM's {f_vl:.2f} is of the card, and the weights and its profiling peak "
                             "come out of it; TensorRT-LLM's is of what is left once they are loaded."),
            Choice("about the same: both keep 90%", "The same number, but not of the same thing: a tenth of the whole "
                                                    "card is held back under vLLM, a tenth of the free memory under "
                                                    "TensorRT-LLM, and here the free memory is a small part of the card."),
            Choice("TensorRT-LLM's, by more than a third", f"Its {f_trt:.2f} is of the memory still free after the weights and a "
                                                           "warm-up pass, so the tenth it holds back is a tenth of a little; "
                                                           "vLLM holds back a tenth of the whole card, and with large "
                                                           "weights the pool is the thin remainder of that."),
        ),
        **keyed(ratio, [(0.9, "vLLM's"), (4 / 3, "about the same: both keep 90%")], "TensorRT-LLM's, by more than a third"),
        reveal=(f"**TensorRT-LLM's: {number(trt.kv_pool_tokens)} tokens against vLLM's {number(vl.kv_pool_tokens)}**, "
                f"{ratio:.1f} times as many; SGLang's {f_sg:.3f} gives {number(sg.kv_pool_tokens)}. Three defaults near 0.9, "
                "three very different pools, because each fraction is of a different base."),
        gives_away=(number(trt.kv_pool_tokens), number(vl.kv_pool_tokens)),
    )
    rows = (
        ("vLLM", f"the card: {f_vl:.2f} x {gib(vl.capacity_bytes)}, then minus weights {gib(vl.weight_bytes)}, its profiling "
                 f"peak {gib(vl.activation_reserve_bytes)} and non-torch memory {gib(vl.non_torch_bytes)}", vl),
        ("SGLang", f"the card after its start-up: {f_sg:.3f} x {gib(sg_total)}, then minus the weights", sg),
        ("TensorRT-LLM", f"what is free after start-up, weights and a warm-up of {number(trt.effective_max_num_batched_tokens)} "
                         f"tokens: {f_trt:.2f} x {gib(free)}", trt),
    )
    table = "\n".join(f"| {name} | {base} | {number(r.kv_pool_tokens)} tokens, {gib(r.kv_pool_bytes)} |" for name, base, r in rows)
    prose = f"""
| engine | the fraction is of | pool |
|---|---|---|
{table}

vLLM and SGLang take a share of the whole card and subtract what they need; TensorRT-LLM subtracts first and
takes its share of the rest. vLLM holds back a tenth of {gib(vl.capacity_bytes)}, {gib((1 - f_vl) * vl.capacity_bytes)};
TensorRT-LLM a tenth of {gib(free)}, {gib((1 - f_trt) * free)}. With {gib(vl.weight_bytes)} of weights the pool is
the thin remainder, so those few GiB are a large part of it: the leverage of step 1 again. TensorRT-LLM's warm-up
peak ({gib(trt.activation_reserve_bytes)}, few sampled rows) is also smaller than vLLM's profiling peak
({gib(vl.activation_reserve_bytes)}, with a sampler for {number(vl.effective_max_num_seqs)} rows). SGLang's default is
lower still: it leaves its activations and CUDA graphs in the (1 - f) share instead of measuring them.

The difference decides whether the server starts at all. One request of the model's full context,
{number(vl.max_concurrency_tokens)} tokens, does not fit in vLLM's {number(vl.kv_pool_tokens)}, so vLLM refuses to start
until max_model_len is lowered; TensorRT-LLM's pool holds {trt.max_concurrency:.2f} such requests.

TensorRT-LLM's generous share is not free either: the memory it leaves is all that later allocations (CUDA graphs
for more batch sizes, a larger step) can use, which is why its docs call 0.9 possibly "too aggressive" and show
lowering it to 0.7.

The same word, "fraction", is three different contracts. Before comparing two engines' pools, or moving a
setting from one to the other, ask what the fraction is a fraction of.
"""
    claims = (
        holds("TensorRT-LLM's pool holds more than a third more tokens than vLLM's", ratio > 4 / 3, f"{ratio:.3f}x"),
        holds("TensorRT-LLM's pool is the largest and SGLang's the smallest at the defaults",
              trt.kv_pool_tokens > vl.kv_pool_tokens > sg.kv_pool_tokens,
              f"{trt.kv_pool_tokens:,} / {vl.kv_pool_tokens:,} / {sg.kv_pool_tokens:,}"),
        near("TensorRT-LLM's pool is its fraction of the free memory", trt.kv_pool_bytes, f_trt * free, 0.001),
        near("vLLM's pool is its fraction of the card less weights, profiling peak and non-torch memory", vl.kv_pool_bytes,
             f_vl * vl.capacity_bytes - vl.weight_bytes - vl.activation_reserve_bytes - vl.non_torch_bytes, 0.001),
        near("SGLang's pool is its fraction of the card after start-up less the weights", sg.kv_pool_bytes,
             f_sg * sg_total - sg.weight_bytes, 0.001),
        holds("the tenth vLLM holds back is larger than the tenth TensorRT-LLM holds back",
              (1 - f_vl) * vl.capacity_bytes > (1 - f_trt) * free,
              f"{gib((1 - f_vl) * vl.capacity_bytes)} vs {gib((1 - f_trt) * free)}"),
        holds("at the model's full context vLLM refuses to start and TensorRT-LLM starts",
              vl.refusal is not None and vl.refusal["reason"] == "vLLM refuses to start" and trt.refusal is None
              and trt.max_concurrency > 1, f"vLLM: {vl.refusal}; TensorRT-LLM: {trt.max_concurrency:.2f}x"),
        holds("vLLM's profiling peak is larger than TensorRT-LLM's warm-up peak",
              vl.activation_reserve_bytes > trt.activation_reserve_bytes,
              f"{gib(vl.activation_reserve_bytes)} vs {gib(trt.activation_reserve_bytes)}"),
    )
    return Step(q, prose, claims,
                LiveView("steady", ("hbm_bar", "admission_numbers"), {**THREE, "engine": "tensorrt-llm"},
                         ("engine", "kv_cache_free_gpu_mem_fraction"),
                         "Switch Memory accounting between vllm, sglang and tensorrt-llm and watch the KV pool."),
                (TryThis("Choose Qwen3-32B on an H100 and switch Memory accounting between vllm, sglang and tensorrt-llm; then "
                         "move TensorRT-LLM's kv_cache_free_gpu_mem_fraction from 0.90 to 0.80.",
                         {**THREE, "engine": "tensorrt-llm"}),))


# Seed 001's two settings: the fraction its server ran at, and the one it tried next ("which OOMs").
RAN, TRIED = 0.85, 0.93


def too_high() -> Step:
    """Seed 001: raising mem_fraction_static to grow the pool takes the memory activations and CUDA graphs need."""
    ran, tried = run(**{**CASE, "mem_fraction_static": RAN}), run(**{**CASE, "mem_fraction_static": TRIED})
    default = run(**{**CASE, "mem_fraction_static": None}).effective_mem_fraction_static
    estimate_bytes = tried.engine_reserve_estimate_bytes
    share = {f: r.activation_room_bytes / r.engine_reserve_estimate_bytes for f, r in ((RAN, ran), (TRIED, tried))}
    gain = tried.kv_pool_tokens / ran.kv_pool_tokens - 1
    q = Prediction(
        key="d2-too-high",
        question=(f"Step 2's deployment ran at mem_fraction_static {RAN:.2f}. To grow the pool, the case study tried "
                  f"{TRIED:.2f}, which kvlab's accounting says would hold {gain:.0%} more tokens. SGLang itself estimates "
                  f"that activations and CUDA graphs need {gib(estimate_bytes)} on each of these GPUs, outside weights "
                  f"and pool. How much of that does {TRIED:.2f} leave them?"),
        choices=(
            Choice("all of it", f"The pool's {gain:.0%} has to come from somewhere: the 1 - f share shrinks from "
                                f"{1 - RAN:.2f} to {1 - TRIED:.2f} of the card."),
            Choice("about half", f"{1 - TRIED:.2f} of the card is less than half of {1 - RAN:.2f}, and at {RAN:.2f} the share "
                                 "was already close to SGLang's estimate."),
            Choice("none", "The 1 - f share is never zero below f = 1; it is small, not empty."),
        ),
        **keyed(share[TRIED], [(0.1, "none"), (0.75, "about half")], "all of it"),
        reveal=(f"**{gib(tried.activation_room_bytes)}, {share[TRIED]:.0%} of SGLang's {gib(estimate_bytes)}** (at {RAN:.2f}: "
                f"{gib(ran.activation_room_bytes)}, {share[RAN]:.0%}). The case study's server ran out of memory at "
                f"{TRIED:.2f}."),
        gives_away=(f"**{gib(tried.activation_room_bytes)}, {share[TRIED]:.0%}",),
    )
    prose = f"""
SGLang's pool is what the fraction gives weights and cache; everything else a running server allocates lives
in the 1 - f share: the activations of a prefill chunk of {tried.effective_max_num_batched_tokens:,} tokens, the
CUDA graphs captured for every decode batch size, the attention metadata. SGLang's own estimate of that need
here is {gib(estimate_bytes)}, and its default fraction on these GPUs, {default:.3f}, is set from it. At
{RAN:.2f} the share holds {share[RAN]:.0%} of the estimate; at
{TRIED:.2f}, {share[TRIED]:.0%}, and the case study's server ran out of memory: what does not fit fails at start-up
or under the first long prompt. The pool's {gain:.0%} more tokens were never available: grow the pool with a smaller cache per token, a
host tier (D4) or more GPUs instead.
"""
    claims = (
        holds(f"at {TRIED:.2f} the 1 - f share holds less than half of SGLang's own estimate", share[TRIED] < 0.5,
              f"{share[TRIED]:.3f}"),
        holds(f"at {RAN:.2f} it holds at least 90% of it", share[RAN] >= 0.9, f"{share[RAN]:.3f}"),
        holds(f"{TRIED:.2f} would grow the pool by more than half", gain > 0.5, f"{gain:.3f}"),
    )
    return Step(q, prose, claims,
                LiveView("steady", ("hbm_bar", "admission_numbers"), {**CASE, "mem_fraction_static": TRIED},
                         ("mem_fraction_static",), "The case study's deployment at 0.93: read the boot log's line on SGLang's estimate."),
                (TryThis(f"Open the case study's deployment and move mem_fraction_static from {RAN:.2f} to {TRIED:.2f}; read "
                         "the log's line on what the rest leaves for activations and CUDA graphs.", CASE),))
