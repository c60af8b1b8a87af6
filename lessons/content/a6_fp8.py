"""A6. FP8 KV or FP8 weights? Read the bar first."""

from __future__ import annotations

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, between, equal, holds, keyed, near
from .runs import gib, ms, run, times, tok


def build() -> Lesson:
    bf = run()
    kv8 = run(kv_dtype="fp8")
    long = run(prompt_tokens=32768)
    long8 = run(prompt_tokens=32768, kv_dtype="fp8")
    big = run(model="qwen3-32b")
    big_w8 = run(model="qwen3-32b", weight_dtype="fp8")
    gain4k = kv8.decode_tokens_per_s / bf.decode_tokens_per_s
    gain32k = long8.decode_tokens_per_s / long.decode_tokens_per_s

    q1 = Prediction(
        key="a6-kv4k",
        question=(f"{bf.model_name}, 32 users with 4k prompts, on an H100. Store the KV cache in FP8 instead of BF16 "
                  f"(half the bytes per token). Decode-only tokens per second (the decode steps' output; prefill time left out) "
                  "becomes..."),
        choices=(
            Choice("x2", "Halving bytes doubles throughput only when the pool is what limits the batch. Here all 32 "
                         "users already fit, so the batch stays 32."),
            Choice("about x1.4", "The batch is unchanged; each step reads half the cache bytes but the same weights, so "
                                 "the step shortens by less than half."),
            Choice("x1", "The step does get shorter: the cache is a large part of what decode reads."),
        ),
        **keyed(gain4k, [(1.1, "x1"), (1.8, "about x1.4")], "x2"),
        reveal=(f"**{times(gain4k)}**: the batch stays {kv8.batch} (the pool was not full: {bf.max_sequences} would fit), and the "
                f"step falls from {ms(bf.decode_step_s, 2)} to {ms(kv8.decode_step_s, 2)}."),
        gives_away=(f"**{times(gain4k)}**",),
    )
    s1 = f"""
Read the HBM bar before choosing. At 4k with 32 users the pool is mostly free: the limit on the batch is the
number of users, not memory. FP8 KV then helps only through the bytes each step reads: the cache part of the
step halves, the weight part does not, and decode-only throughput rises to {tok(kv8.decode_tokens_per_s)} tokens per
second. Counting all GPU time, the prefills of new prompts included, it rises less: {tok(bf.served_tokens_per_s)} to
{tok(kv8.served_tokens_per_s)}.
"""
    step1 = Step(q1, s1, (
        equal("the batch stays 32 with FP8 KV at 4k", (bf.batch, kv8.batch), (32, 32)),
        near("FP8 KV at 4k x 32 gives about x1.39", gain4k, 1.39, 0.02),
    ), LiveView("steady", ("hbm_bar", "admission_numbers"), {"kv_dtype": "fp8"}, ("kv_dtype", "weight_dtype", "prompt_tokens"),
                "The card with an FP8 cache at 4k x 32: the used part of the pool is small."),
        (TryThis("Switch KV cache precision between BF16 and FP8 and compare the used part of the pool with the free part.",
                 {}),))

    q2 = Prediction(
        key="a6-kv32k",
        question=("Now the prompts are 32k, so the pool, not the users, limits the batch (12 fit). FP8 KV makes "
                  "decode-only tokens per second..."),
        choices=(
            Choice("x2", "Twice the sequences fit in the same pool; each step reads the same pool's worth of bytes."),
            Choice("about x1.4", "That was the answer when the pool was not full; here the batch itself doubles."),
            Choice("x4", "FP8 halves the bytes once; it does not both double the batch and halve the step."),
        ),
        **keyed(gain32k, [(1.7, "about x1.4"), (3, "x2")], "x4"),
        reveal=(f"**{times(gain32k)}**: {long8.max_sequences} sequences instead of {long.max_sequences}, and the step stays "
                f"{ms(long8.decode_step_s)} because a full pool is read either way."),
        gives_away=(f"**{times(gain32k)}**",),
    )
    s2 = f"""
When the pool binds, halving bytes per token doubles the users and the step time stays put: the gain in the
decode steps is all in the batch. The same switch does different things depending on which limit is active,
which is why the bar comes first.

That doubling is decode-only. Counting all GPU time, each 32k prompt's prefill is compute that FP8 KV does not
speed up, and here the prefills are most of the work: output goes from {tok(long.served_tokens_per_s)} to
{tok(long8.served_tokens_per_s)} tokens per second. Lesson E3 prices the difference.
"""
    step2 = Step(q2, s2, (
        equal("FP8 KV doubles the sequences at 32k", long8.max_sequences, 2 * long.max_sequences),
        near("FP8 KV leaves the 32k step unchanged", long8.decode_step_s, long.decode_step_s, 1e-6),
        near("FP8 KV doubles decode-only throughput at 32k", gain32k, 2.0, 0.01),
        holds("counting all GPU time, FP8 KV at 32k gains under 30%",
              long8.served_tokens_per_s < 1.3 * long.served_tokens_per_s,
              f"{long.served_tokens_per_s:.1f} -> {long8.served_tokens_per_s:.1f} tok/s"),
    ), LiveView("steady", ("hbm_bar", "phase_numbers"), {"prompt_tokens": 32768, "kv_dtype": "fp8"}, ("kv_dtype",),
                "32k prompts with an FP8 cache: the pool is full either way (the throughput tile counts decode steps only)."),
        (TryThis("Set Prompt tokens to 32k, then switch KV cache precision to FP8: the used pool stays full.",
                 {"prompt_tokens": 32768}),))

    q3 = Prediction(
        key="a6-weights",
        question=(f"Qwen3-32B leaves a pool of {gib(big.kv_pool_bytes)} on an H100. Store its weights in FP8 instead. "
                  f"The pool becomes about..."),
        choices=(
            Choice("about 20 GiB", "Doubling the pool assumes the pool is half the card; it is the remainder after "
                                   "the weights, and the weights shrink by about 30 GiB."),
            Choice("about 40 GiB", "Half of the 61 GiB of weights comes free, and all of it goes to the pool."),
            Choice("unchanged", "Weight precision changes what the weights occupy, and the pool is what they leave."),
        ),
        **keyed(big_w8.kv_pool_bytes / 2**30, [(12, "unchanged"), (30, "about 20 GiB")], "about 40 GiB"),
        reveal=f"**{gib(big_w8.kv_pool_bytes)}**, {big_w8.kv_pool_bytes / big.kv_pool_bytes:.1f} times the BF16 pool.",
        gives_away=(f"**{gib(big_w8.kv_pool_bytes)}**",),
    )
    small, small_w8 = run(), run(weight_dtype="fp8")
    s3 = f"""
FP8 weights free memory the pool can use, and on an H100 (FP8 tensor cores) they also shorten prefill,
which is compute-bound: a 4k prompt's TTFT on {small.model_name} falls from {ms(small.ttft_s, 0)} to
{ms(small_w8.ttft_s, 0)}. How much pool they free depends on the model's size against the card. Qwen3-32B's weights
are most of the card, so freeing half of them multiplies its pool. {small.model_name}'s are a small part, and its pool
grows only from {gib(small.kv_pool_bytes)} to {gib(small_w8.kv_pool_bytes)}. FP8 KV halves the cache per token. Which
one helps depends on the bar: a large model with a thin pool gains most from FP8 weights; a long-context workload
whose pool binds, from FP8 KV.

Both are quantization, and both can cost accuracy. The cache's rounding error adds up over a long context,
because every new token attends to all the rounded keys and values before it, so check quality on your longest
sequences, not on an average prompt. INT8 would halve bytes just like FP8: one byte per number either way, not a quarter.
"""
    step3 = Step(q3, s3, (
        near("Qwen3-32B's BF16 pool is about 9.8 GiB", big.kv_pool_bytes / 2**30, 9.77, 0.01),
        near("FP8 weights grow Qwen3-32B's pool to about 40.3 GiB", big_w8.kv_pool_bytes / 2**30, 40.3, 0.01),
        near("FP8 weights grow Qwen3-8B's pool to about 63.3 GiB", run(weight_dtype="fp8").kv_pool_bytes / 2**30, 63.3, 0.01),
        between("FP8 weights cut a 4k prompt's TTFT on Qwen3-8B by 40% to 60%", small_w8.ttft_s / small.ttft_s, 0.4, 0.6),
    ), LiveView("steady", ("hbm_bar",), {"model": "qwen3-32b", "weight_dtype": "fp8"}, ("weight_dtype", "kv_dtype"),
                "Qwen3-32B with FP8 weights: the weights' segment halves and the pool takes the difference."),
        (TryThis("Choose Qwen3-32B and switch Weight precision to FP8; compare the pool with the BF16 one.",
                 {"model": "qwen3-32b"}),))

    return Lesson(
        **course.header("A6"),
        objective="Choose the quantization that helps this budget, predict its effect from which limit binds, and "
                  "know the accuracy caveat.",
        prerequisites=("A3", "A4"),
        setup="Two switches both say FP8. They halve different things, and which one pays depends on the bar.",
        steps=(step1, step2, step3),
        recap=("FP8 KV doubles decode-only throughput only when the pool limits the batch; otherwise it speeds the step a "
               "little. Prefill time, which it does not touch, dilutes both gains.",
               "FP8 weights free memory for the pool (and speed prefill on FP8 tensor cores).",
               "Both trade some accuracy; INT8 halves like FP8, it does not quarter."),
        not_captured=("kvlab does not model accuracy: it cannot tell you whether FP8 is good enough for your model.",
                      "Per-block scale factors of FP8 caches are not counted."),
        ideas=("fp8-kv", "fp8-weights", "quantization-accuracy", "int8-halves"),
    )
