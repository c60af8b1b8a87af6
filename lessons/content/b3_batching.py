"""B3. Batching and amortisation."""

from __future__ import annotations

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, equal, holds, keyed, near
from .runs import pct, run, times, tok

FP8_32K = dict(prompt_tokens=32768, weight_dtype="fp8", kv_dtype="fp8")
SHORT = dict(model="qwen3-14b", prompt_tokens=128, output_tokens=16)


def compute_bound_batch() -> int:
    """The smallest batch whose decode step is compute-bound (binary search over concurrency)."""
    low, high = 1, 4096
    while low < high:
        mid = (low + high) // 2
        if run(concurrency=mid, **SHORT).decode_bound == "compute":
            high = mid
        else:
            low = mid + 1
    return low


def build() -> Lesson:
    few, many = run(concurrency=8, **FP8_32K), run(concurrency=256, **FP8_32K)
    gain = many.decode_tokens_per_s / few.decode_tokens_per_s
    knee = compute_bound_batch()
    at = run(concurrency=knee, **SHORT)
    at256 = run(concurrency=256, **SHORT)

    q1 = Prediction(
        key="b3-ceiling",
        question=(f"{few.model_name}, FP8 weights and cache, 32k prompts. Raise the users from 8 to 256; the pool caps "
                  f"the batch at {many.batch}, so the batch grows {many.batch / few.batch:.1f}x. Decode-only tokens per "
                  "second (the decode steps' output, prefill time left out) grows..."),
        choices=(
            Choice(f"about {many.batch / few.batch:.1f}x", "This assumes each step costs the same with more users. "
                   "Each user adds a 32k-token cache read to every step."),
            Choice("about 2x", "Closer, but the weights were already a minority of the bytes at 8 users."),
            Choice("about 1.3x", "Weights are the only shared cost, and at 32k they were a small share of the step."),
        ),
        **keyed(gain, [(1.6, "about 1.3x"), (2.6, "about 2x")], f"about {many.batch / few.batch:.1f}x"),
        reveal=(f"**{times(gain)}**. Weights were {pct(few.weight_share)} of the bytes a step reads at 8 users and "
                f"{pct(many.weight_share)} at {many.batch}; each user's stream became {many.itl_s / few.itl_s:.1f}x slower. "
                f"Counting all GPU time, prefills included: {tok(few.served_tokens_per_s)} to {tok(many.served_tokens_per_s)} "
                "tokens per second."),
        gives_away=(f"**{times(gain)}**",),
    )
    one, shared = run(concurrency=1), run(concurrency=32)  # BF16, 4k prompts: where batching pays
    s1 = f"""
Batching pays because the weights are read once per step and shared by every sequence in it. At 4k in BF16 a
{one.model_name} step for one user takes {one.decode_step_s * 1e3:.2f} ms, and for {shared.batch} users
{shared.decode_step_s * 1e3:.2f} ms: {shared.batch} times the tokens for {shared.decode_step_s / one.decode_step_s:.1f} times
the time, so decode-only throughput grows from {tok(one.decode_tokens_per_s)} to {tok(shared.decode_tokens_per_s)}
tokens a second. The cache is not shared: each sequence adds its own. Once the cache is most of what a step reads,
another sequence adds almost as much time as it adds tokens, and decode-only throughput flattens while each user
slows down.
"""
    step1 = Step(q1, s1, (
        equal("the FP8 32k batch goes from 8 to 27", (few.batch, many.batch), (8, 27)),
        holds("at 4k, 32 users' step takes under 3x one user's", shared.decode_step_s < 3 * one.decode_step_s,
              f"{one.decode_step_s:.5f} vs {shared.decode_step_s:.5f} s"),
        near("decode-only throughput grows about 1.26x", gain, 1.26, 0.03),
        near("each stream is about 2.7x slower", many.itl_s / few.itl_s, 2.7, 0.03),
        equal("weight share falls from 30% to 11%", (round(few.weight_share * 100), round(many.weight_share * 100)), (30, 11)),
    ), LiveView("steady", ("batch_chart", "step_breakdown"), {**FP8_32K, "concurrency": 256}, ("concurrency",),
                "Decode-only throughput against batch size: the perfect-sharing line and what the step model gives."),
        (TryThis("On the phases panel, drag Concurrent requests from 8 to 256 with FP8 weights and cache at 32k.",
                 {**FP8_32K, "concurrency": 8}, panel="phases"),))

    q2 = Prediction(
        key="b3-compute",
        question=("Now Qwen3-14B with 128-token prompts and 16-token answers, so the cache is tiny. Add users: at what "
                  "batch does a decode step stop being memory-bound and become compute-bound?"),
        choices=(
            Choice("about 32", "At 32 a step does 64 FLOPs per weight read; the H100 needs about 200 per byte "
                               "before compute binds."),
            Choice("about 240", "Each batched token adds 2 FLOPs per parameter; at about 200 tokens per weight byte the "
                                "step crosses the ridge."),
            Choice("never: decode is always memory-bound", "Decode is memory-bound at ordinary batch sizes, not by "
                                                           "nature: with a small cache and a big batch it crosses."),
        ),
        **keyed(knee, [(100, "about 32"), (600, "about 240")], "never: decode is always memory-bound"),
        reveal=(f"**At {knee} sequences** the step's intensity reaches {at.decode_arithmetic_intensity:.0f} FLOP/B, past the "
                f"ridge at {at.ridge_intensity:.0f}. At 256, weights are {pct(at256.weight_share)} of the bytes."),
        gives_away=(f"**At {knee} sequences**",),
    )
    s2 = """
Decode is memory-bound because a small batch does little arithmetic per byte, not because of what decode is.
With short contexts and hundreds of users it crosses the ridge, and from there more users cost compute time.
Long contexts push the crossing out of reach: the cache bytes grow with every user. Until a step crosses, its
idle arithmetic has another use, checking tokens a small model guessed: lesson B6.
"""
    step2 = Step(q2, s2, (
        equal("Qwen3-14B 128/16 decode turns compute-bound at 242", knee, 242),
        equal("at 256, weights are 83% of the step's bytes", round(at256.weight_share * 100), 83),
        equal("at 256 the step is compute-bound", at256.decode_bound, "compute"),
    ), LiveView("steady", ("roofline", "batch_chart"), {**SHORT, "concurrency": 256}, ("concurrency",),
                "Short requests at a large batch: the decode point sits right of the ridge (throughput here is decode-only)."),
        (TryThis("On the phases panel, drag Concurrent requests up from 32 and watch the decode point reach the ridge.",
                 {**SHORT, "concurrency": 32}, panel="phases"),))
    return Lesson(
        **course.header("B3"),
        objective="Explain batching as sharing the weight read, find where it stops paying, and find where decode "
                  "becomes compute-bound.",
        prerequisites=("B1",),
        setup="More users per step is the main way to more tokens per second. Until it is not.",
        steps=(step1, step2),
        recap=("Batching shares the weight read, not the cache read.",
               "With long contexts, batching flattens out; with short ones, decode reaches the ridge and turns compute-bound."),
        not_captured=("A real batch mixes lengths; kvlab's steady state uses one length per request.",),
        ideas=("batching-amortises", "batching-ceiling", "decode-compute-bound"),
    )
