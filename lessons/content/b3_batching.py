"""B3. Batching is amortisation, with a ceiling."""

from __future__ import annotations

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, equal, holds, keyed, near
from .runs import ms, pct, run, times, tok

FP8_32K = dict(prompt_tokens=32768, weight_dtype="fp8", kv_dtype="fp8")
SHORT = dict(model="qwen3-14b", prompt_tokens=128, output_tokens=16)
# Speculative decoding on the default Qwen3-8B / H100: Qwen3-0.6B (same tokenizer) drafts 3 tokens
# a step, each kept with probability 0.7.
DRAFT = dict(prompt_tokens=512, spec_draft_model="qwen3-0.6b", spec_tokens=3, spec_acceptance=0.7)
SEED001_ACCEPTANCE = 0.15  # seed 001: vLLM's EAGLE-3 on an MLA model accepted about 15% of drafted tokens


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
    s1 = """
Batching pays because the weights are read once per step and shared by every sequence in it. The cache is not
shared: each sequence adds its own. Once the cache is most of what a step reads, another sequence adds almost
as much time as it adds tokens, and decode-only throughput flattens while each user slows down.
"""
    step1 = Step(q1, s1, (
        equal("the FP8 32k batch goes from 8 to 27", (few.batch, many.batch), (8, 27)),
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
Long contexts push the crossing out of reach: the cache bytes grow with every user.
"""
    step2 = Step(q2, s2, (
        equal("Qwen3-14B 128/16 decode turns compute-bound at 242", knee, 242),
        equal("at 256, weights are 83% of the step's bytes", round(at256.weight_share * 100), 83),
        equal("at 256 the step is compute-bound", at256.decode_bound, "compute"),
    ), LiveView("steady", ("roofline", "batch_chart"), {**SHORT, "concurrency": 256}, ("concurrency",),
                "Short requests at a large batch: the decode point sits right of the ridge (throughput here is decode-only)."),
        (TryThis("On the phases panel, drag Concurrent requests up from 32 and watch the decode point reach the ridge.",
                 {**SHORT, "concurrency": 32}, panel="phases"),))
    plain1 = run(concurrency=1, prompt_tokens=512)
    spec1 = run(concurrency=1, **DRAFT)
    spec256 = run(concurrency=256, **DRAFT)
    spec_low = run(concurrency=1, **{**DRAFT, "spec_acceptance": SEED001_ACCEPTANCE})
    k, a = DRAFT["spec_tokens"], DRAFT["spec_acceptance"]
    draft_share = spec1.spec_draft_weight_bytes / (spec1.weight_bytes - spec1.spec_draft_weight_bytes)
    q3 = Prediction(
        key="b3-speculative",
        question=(f"One user on {plain1.model_name}, {DRAFT['prompt_tokens']}-token prompts. A much smaller model with the "
                  f"same vocabulary, {spec1.spec_draft_name}, guesses the next {k} tokens; the big model then checks all "
                  f"{k} in one step and keeps each guess with probability {a:g} until the first wrong one. That user's "
                  "tokens per second..."),
        choices=(
            Choice("roughly double", f"One step now costs the draft's {k} small steps plus a check of {k + 1} positions, "
                                     f"and yields {spec1.spec_tokens_per_step:.2f} tokens on average."),
            Choice("rise by about a fifth", f"That would hold if checking {k + 1} positions cost nearly {k + 1} times one: "
                                            "alone on the GPU, the step is a weight read, shared by every position."),
            Choice("fall: the small model's extra steps cost more than they save",
                   f"The small model's weights are {pct(draft_share)} of the big model's, so its {k} steps cost less "
                   "than one big step."),
        ),
        **keyed(spec1.spec_speedup, [(1.0, "fall: the small model's extra steps cost more than they save"),
                                     (1.5, "rise by about a fifth")], "roughly double"),
        reveal=(f"**{times(spec1.spec_speedup)}**: {spec1.spec_tokens_per_step:.2f} tokens a step on average; the check of "
                f"{k + 1} positions takes {ms(spec1.spec_verify_s, 2)} against {ms(plain1.itl_s, 2)} for one token, and the "
                f"draft's {k} steps {ms(spec1.spec_draft_s, 2)}. With {spec256.batch} users the same draft gives each "
                f"stream {times(spec256.spec_speedup)} the speed of no draft: the check of {spec256.batch * (k + 1):,} "
                f"positions is {spec256.decode_bound}-bound. At the {SEED001_ACCEPTANCE:.0%} acceptance one team measured "
                f"for a drafter on an MLA model, one user gets {times(spec_low.spec_speedup)}."),
        gives_away=(f"**{times(spec1.spec_speedup)}**",),
    )
    s3 = """
Speculative decoding spends the idle arithmetic of a memory-bound decode step. The big model has to read its
weights for one token anyway; reading them once to check several guessed tokens costs little more, and every
guess it keeps is a token that did not need its own step. It pays only while two things hold: the step is
memory-bound (a large batch already uses the arithmetic, so checking k + 1 positions costs up to k + 1 times as
much), and the guesses are usually right (a drafter whose guesses are mostly rejected adds its own steps for
nothing). The draft also takes memory: its weights, and its own cache for every sequence.
"""
    step3 = Step(q3, s3, (
        near("one user runs about 2.05x as fast with the draft", spec1.spec_speedup, 2.05, 0.03),
        near("a step yields 2.53 tokens", spec1.spec_tokens_per_step, 2.53, 0.01),
        holds("checking 4 positions alone costs under 1.2x one token's step", spec1.spec_verify_s < 1.2 * plain1.itl_s,
              f"{spec1.spec_verify_s / plain1.itl_s:.2f}x"),
        holds("with 256 users the draft makes each stream slower", spec256.spec_speedup < 1.0, f"{spec256.spec_speedup:.2f}x"),
        equal("the check of 256 x 4 positions is compute-bound", spec256.decode_bound, "compute"),
        holds("at 15% acceptance one user gains nothing", spec_low.spec_speedup < 1.0, f"{spec_low.spec_speedup:.2f}x"),
    ), LiveView("steady", ("phase_numbers", "step_breakdown"), {**DRAFT, "concurrency": 1},
                ("concurrency", "spec_acceptance", "spec_tokens"),
                "The inter-token latency with a draft model: raise the users or lower the acceptance and watch it stop paying."),
        (TryThis("On the phases panel, with Qwen3-0.6B drafting, raise Concurrent requests from 1 to 256.",
                 {**DRAFT, "concurrency": 1}, panel="phases"),))
    return Lesson(
        **course.header("B3"),
        objective="Explain batching as sharing the weight read, find where it stops paying, and find where decode "
                  "becomes compute-bound.",
        prerequisites=("B1",),
        setup="More users per step is the main way to more tokens per second. Until it is not.",
        steps=(step1, step2, step3),
        recap=("Batching shares the weight read, not the cache read.",
               "With long contexts, batching flattens out; with short ones, decode reaches the ridge and turns compute-bound.",
               "Speculative decoding spends a memory-bound step's idle arithmetic on checking guessed tokens; it stops "
               "paying in a compute-bound batch or with a drafter that guesses wrong."),
        not_captured=("A real batch mixes lengths; kvlab's steady state uses one length per request.",
                      "Speculative decoding: kvlab models a separate draft model with one acceptance rate for every "
                      "position, not EAGLE or MTP heads, and the time-domain engine does not run it."),
        ideas=("batching-amortises", "batching-ceiling", "decode-compute-bound", "speculative-decoding",
               "speculative-acceptance"),
    )
