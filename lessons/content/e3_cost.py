"""E3. Bytes per dollar."""

from __future__ import annotations

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, bucket, near
from .runs import run

PRICE = 2.5


def usd(x: float) -> str:
    return f"${x:,.2f}"


def build() -> Lesson:
    short = run(dollars_per_gpu_hour=PRICE)
    long = run(dollars_per_gpu_hour=PRICE, prompt_tokens=32768)
    long8 = run(dollars_per_gpu_hour=PRICE, prompt_tokens=32768, kv_dtype="fp8")
    ratio = long.dollars_per_million_tokens / short.dollars_per_million_tokens

    q1 = Prediction(
        key="e3-context",
        question=(f"One H100 at {usd(PRICE)} per hour serves {short.model_name}: with 4k-token prompts, output tokens cost "
                  f"{usd(short.dollars_per_million_tokens)} per million. With 32k-token prompts, a million output tokens "
                  "cost about..."),
        choices=(
            Choice("the same", "The GPU-hour costs the same; what changes is how many tokens it produces in that hour."),
            Choice("about 2x", "Longer prompts cost more than their prefill: they shrink the batch and slow every step."),
            Choice("about 5x", "The hour is the same; the tokens it yields fall to about a fifth, because fewer users "
                               "fit and each step reads more cache."),
        ),
        answer=bucket(ratio, [(1.3, "the same"), (3.5, "about 2x")], "about 5x"),
        reveal=f"**{usd(long.dollars_per_million_tokens)}**, {ratio:.1f} times as much.",
        gives_away=(f"**{usd(long.dollars_per_million_tokens)}**",),
    )
    s1 = f"""
Cost per token is the price of an hour divided by the tokens the hour produces, and tokens per hour come
from bytes: how many users the pool holds and how many bytes each step reads. At 4k the card makes
{short.decode_tokens_per_s:,.0f} tokens a second; at 32k, {long.decode_tokens_per_s:,.0f}. The panels show the cost
per million tokens as soon as a price is set.
"""
    step1 = Step(q1, s1, (
        near("4k output tokens cost about $0.30 per million at $2.50/h", short.dollars_per_million_tokens, 0.30, 0.03),
        near("32k costs about $1.62 per million", long.dollars_per_million_tokens, 1.62, 0.03),
        near("32k costs about 5.4x 4k", ratio, 5.4, 0.03),
    ), LiveView("steady", ("phase_numbers",), {"dollars_per_gpu_hour": PRICE, "prompt_tokens": 32768}, ("prompt_tokens",
                "dollars_per_gpu_hour"), "Throughput and cost per million tokens at the chosen prompt length and price."),
        (TryThis("On the phases panel, set a price per GPU-hour (advanced settings), then drag Prompt tokens from 4k to 32k.",
                 {"dollars_per_gpu_hour": PRICE}, panel="phases"),))

    q2 = Prediction(
        key="e3-fp8",
        question="At 32k, store the cache in FP8. The cost per million tokens becomes...",
        choices=(
            Choice("unchanged", "FP8 changes nothing about the price, but it doubles what the pool holds here."),
            Choice("half", "The pool was the limit at 32k; twice the users at the same step time is twice the tokens."),
            Choice("a quarter", "Halving bytes doubles users; it does not also halve the step here."),
        ),
        answer=bucket(long8.dollars_per_million_tokens / long.dollars_per_million_tokens, [(0.35, "a quarter"), (0.75, "half")],
                      "unchanged"),
        reveal=f"**{usd(long8.dollars_per_million_tokens)}** per million.",
        gives_away=(f"**{usd(long8.dollars_per_million_tokens)}**",),
    )
    s2 = """
Every lever in this course is a cost lever when read this way: fewer bytes per token, fewer tokens per
request (shorter prompts, prefix caching), or more useful work per byte read (batching). The cheapest token is
the one whose bytes you did not move.
"""
    step2 = Step(q2, s2, (
        near("FP8 KV at 32k costs about $0.81 per million", long8.dollars_per_million_tokens, 0.81, 0.03),
    ), LiveView("steady", ("phase_numbers", "hbm_bar"), {"dollars_per_gpu_hour": PRICE, "prompt_tokens": 32768, "kv_dtype": "fp8"},
                ("kv_dtype",), "Cost with an FP8 cache at 32k."),
        (TryThis("With a price set and 32k prompts, switch KV cache precision to FP8.",
                 {"dollars_per_gpu_hour": PRICE, "prompt_tokens": 32768}),))
    return Lesson(
        **course.header("E3"),
        objective="Compute cost per million tokens from the bytes a workload moves, and see context length drive it.",
        prerequisites=("A4", "A6"),
        setup="A GPU-hour has a price. What it buys is a number of tokens, and bytes decide that number.",
        steps=(step1, step2),
        recap=("Cost per token = price per hour / tokens per hour; tokens per hour follow from bytes.",
               "Long context is expensive twice: fewer users, slower steps."),
        not_captured=("Cost here counts output tokens in steady decode; prompt processing, idle time and the host are "
                      "not billed separately.",),
        ideas=("bytes-per-dollar", "context-drives-cost"),
    )
