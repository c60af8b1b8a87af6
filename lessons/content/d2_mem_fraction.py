"""D2. mem_fraction_static: five points of memory."""

from __future__ import annotations

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, equal, keyed
from .runs import gib, run, tok

SGL = dict(model="qwen3-32b", engine="sglang")


def build() -> Lesson:
    low, high = run(**SGL, mem_fraction_static=0.85), run(**SGL, mem_fraction_static=0.90)
    gain = high.kv_pool_tokens / low.kv_pool_tokens - 1

    q1 = Prediction(
        key="d2-margin",
        question=("SGLang serves Qwen3-32B on one H100. Raise mem_fraction_static from 0.85 to 0.90, five points. The KV "
                  "pool in tokens grows by..."),
        choices=(
            Choice("about 6%", "This reads the fraction as a share of what is left after the weights. SGLang applies it to "
                               "the whole card, weights included."),
            Choice("about 25%", "Closer, but the weights take most of the budget, so five points of the card are a large "
                                "share of what is left."),
            Choice("about 67%", "Pool = fraction x total - weights: five points of 80 GiB added to a pool of about 6 GiB."),
        ),
        **keyed(gain, [(0.15, "about 6%"), (0.45, "about 25%")], "about 67%"),
        reveal=(f"**{tok(low.kv_pool_tokens)} to {tok(high.kv_pool_tokens)} tokens, +{gain:.0%}.** The pool goes from "
                f"{gib(low.kv_pool_bytes)} to {gib(high.kv_pool_bytes)}."),
        gives_away=(f"+{gain:.0%}.",),
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
    return Lesson(
        **course.header("D2"),
        objective="Compute SGLang's pool from mem_fraction_static, and what a change of a few points does to it.",
        prerequisites=("A3",),
        setup="A case study tuned SGLang's memory fraction by reasoning about percentages. Check the arithmetic.",
        steps=(step1,),
        recap=("SGLang: pool = f x total - weights.",
               "With large weights, small changes of f are large changes of the pool; too high a value starves activations."),
        not_captured=("kvlab does not check that the 1 - f share fits SGLang's activations and CUDA graphs, so it shows no "
                      "out-of-memory error at high fractions.",),
        ideas=("mem-fraction-static", "mem-fraction-oom"),
    )
