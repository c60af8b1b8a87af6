"""A4. Spending the token budget: users times context."""

from __future__ import annotations

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, equal, holds, keyed, near
from .runs import gib, run, tok


def build() -> Lesson:
    short = run()
    long = run(prompt_tokens=32768)
    huge = run(prompt_tokens=131072 - 256)
    big = run(model="qwen3-32b")
    per_128k_big = big.kv_bytes_per_token * 131072

    q1 = Prediction(
        key="a4-users",
        question=(f"{short.model_name} on an H100 holds {short.max_sequences} requests of 4k prompt + 256 output tokens. "
                  f"Make every prompt 32k instead. How many fit?"),
        choices=(
            Choice("about 80", "This assumes the cache is small next to the weights. It is not: the pool is what is "
                               "left, and it is spent token by token."),
            Choice("about 46", "Half: as if doubling, not multiplying by eight, the tokens per request."),
            Choice("about 12", "Each request now holds about 7.8 times the tokens, so the same pool holds about "
                               "7.8 times fewer."),
            Choice("about 3", "This over-corrects: the weights and reserve are already paid for; only the pool is "
                              "divided."),
        ),
        **keyed(long.max_sequences, [(6, "about 3"), (25, "about 12"), (60, "about 46")], "about 80"),
        reveal=f"**{long.max_sequences}** requests: the pool holds {tok(long.kv_pool_tokens)} tokens either way.",
        gives_away=(f"**{long.max_sequences}** requests",),
    )
    s1 = f"""
The pool is a budget counted in tokens: {tok(short.kv_pool_tokens)} of them for {short.model_name} on an H100.
Every running request spends its prompt plus what it has generated. So

`users x tokens per user <= pool tokens`

At 4k + 256 that is {short.max_sequences} users; at 32k + 256, {long.max_sequences}. Nothing about the model or the
card changed: only how the budget is spent. The pool has room for {huge.max_sequences} requests of 128k tokens, yet
not one of them runs: {short.model_name} reads at most {tok(huge.context_tokens)} tokens of context, so the engine
refuses a longer request before the pool is asked. The budget is one limit; the model's context is another.

For a larger model the budget is smaller and each token dearer: one 128k-token context of Qwen3-32B is
{gib(per_128k_big, 0)} of cache, more than three times the pool that model has left on an 80 GiB card.
"""
    step1 = Step(q1, s1, (
        equal("4k prompts: 93 Qwen3-8B requests fit", short.max_sequences, 93),
        equal("32k prompts: 12 fit", long.max_sequences, 12),
        equal("a 128k request is refused: longer than Qwen3-8B's context", (huge.refusal or {}).get("reason"),
              "longer than the context"),
        holds("the pool alone would hold more than one 128k request", huge.max_sequences > 1, f"{huge.max_sequences}"),
        near("a 128k context of Qwen3-32B is 32 GiB", per_128k_big / 2**30, 32.0, 1e-9),
    ), LiveView("steady", ("fit_curve", "admission_numbers"), {"prompt_tokens": 32768}, ("prompt_tokens", "output_tokens"),
                "Requests that fit against prompt length: the curve falls as one over the length."),
        (TryThis("Drag Prompt tokens from 4k to 32k and follow the point down the fit curve.", {}),))

    q2 = Prediction(
        key="a4-throughput",
        question=(f"With 32 users at 4k the decode steps produce {tok(short.decode_tokens_per_s)} tokens per second "
                  "(decode-only: the time the GPU spends prefilling prompts is left out). "
                  "With 32k prompts and the same 32 users, decode-only tokens per second is about..."),
        choices=(
            Choice("the same", "Tempting: the weights are read once per step either way. But fewer users share each "
                               "step, and each one's cache read is eight times longer."),
            Choice("half", "This counts only the smaller batch, not the longer cache read of each step."),
            Choice("about a fifth", "Fewer sequences per step, and each step reads far more cache: both cut throughput."),
        ),
        **keyed(long.decode_tokens_per_s / short.decode_tokens_per_s, [(0.3, "about a fifth"), (0.7, "half")],
                      "the same"),
        reveal=(f"**{tok(long.decode_tokens_per_s)} tokens per second**, {long.decode_tokens_per_s / short.decode_tokens_per_s:.0%} "
                f"of the 4k figure. Each step takes {long.decode_step_s * 1e3:.1f} ms instead of "
                f"{short.decode_step_s * 1e3:.1f} ms and serves {long.batch} sequences instead of {short.batch}. Counting all GPU "
                f"time, the prompts' prefills included, the fall is steeper: {tok(short.served_tokens_per_s)} to "
                f"{tok(long.served_tokens_per_s)} tokens per second."),
        gives_away=(f"**{tok(long.decode_tokens_per_s)} tokens per second**",),
    )
    s2 = """
Long context costs twice: it divides the number of users the pool can hold, and each step reads every
running user's whole cache, so each step is slower too. A product decision about context length is a
decision about throughput.
"""
    step2 = Step(q2, s2, (
        near("decode-only throughput at 4k x 32 is about 2,300 tok/s", short.decode_tokens_per_s, 2323, 0.03),
        near("decode-only throughput at 32k is about 430 tok/s", long.decode_tokens_per_s, 430, 0.03),
        near("a 32k decode step takes about 27.9 ms", long.decode_step_s * 1e3, 27.9, 0.03),
    ), LiveView("steady", ("phase_numbers", "step_breakdown"), {"prompt_tokens": 32768}, ("prompt_tokens",),
                "Decode step time and its parts at the chosen prompt length; the throughput tile counts decode steps only."),
        (TryThis("Open the phases panel, drag Prompt tokens from 4k to 32k and watch the KV read grow in the step.",
                 {}, panel="phases"),))

    return Lesson(
        **course.header("A4"),
        objective="Treat the pool as a token budget, trade users against context length, and see why long context "
                  "is also slower per token.",
        prerequisites=("A3",),
        setup="The pool is fixed once the engine starts. What you choose is how to spend it.",
        steps=(step1, step2),
        recap=("Pool tokens are a budget: users x tokens each <= pool.",
               "Longer context means fewer users and a slower step for everyone left."),
        not_captured=("Requests here all have the same length; real traffic mixes lengths, which the serving lab "
                      "simulates request by request.",),
        ideas=("token-budget", "long-context-slower"),
    )
