"""A1. Why a KV cache, and what one token of it costs."""

from __future__ import annotations

import copy
import math
import re

from kvlab.sim import catalog, evaluate
from kvlab.sim.units import KIB, MIB

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, equal, equation, estimate, keyed, number
from .runs import BASE, kib, run


def _without_head_dim(model: str):
    """The model's config.json with head_dim deleted: sim then derives hidden_size / heads."""
    config = copy.deepcopy(catalog.model_entry(model)["config"])
    config.pop("head_dim", None)
    config["_name_or_path"] = f"{model} without head_dim"
    return evaluate(BASE.with_(model=model, config=config))


def _size(b: float) -> str:
    return f"{b / MIB:.1f} MiB" if b >= MIB else kib(b)


def _factors_product(formula: str) -> float:
    """The product of the numbers sim's KV formula multiplies ("2 x 40 layers x ... = 163,840 B"): the
    math peek's check that the line it shows multiplies out to sim's bytes per token."""
    return math.prod(float(n) for n in re.findall(r"\d+(?:\.\d+)?", formula.split("=")[0]))


def _estimate_step() -> Step:
    """The formula once more, as a number the student works out for a model the lesson has not shown."""
    r = run(model="qwen3-14b")
    per_token = r.kv_bytes_per_token
    p = Prediction(
        key="a1-bytes",
        question=(f"Now a number of your own. {r.model_name} has 40 layers, 40 query heads, 8 KV heads and head_dim 128, "
                  "its cache in BF16. How many bytes of KV cache does one token of context take?"),
        **estimate(per_token, "KV cache per token", "bytes"),
        reveal=f"**{number(per_token)} bytes** per token, which is {kib(per_token)}.",
        gives_away=(f"**{number(per_token)} bytes**",),
        peek=(equation(f"bytes per token = {r.kv_formula}", _factors_product(r.kv_formula), per_token),),
    )
    prose = """
Two factors of every model's cost are fixed by the format: 2 (a key and a value) and the bytes per number.
The other three, layers, KV heads and head_dim, are read from its config.json. The query heads never enter it.
"""
    # No live view: step 1's shows the same formula for any model (and the site holds every lesson within 30 MB).
    return Step(p, prose, ())


def build() -> Lesson:
    llama = run(model="llama-3.1-70b", tp=8)
    llama_tp1_formula = run(model="llama-3.1-70b").kv_formula
    llama_bytes = run(model="llama-3.1-70b").kv_bytes_per_token
    qwen = run()
    big = run(model="qwen3-32b")
    big_guess = _without_head_dim("qwen3-32b")
    mha_guess = llama_bytes * 64 / 8  # query heads in place of KV heads: the slip to explain
    mqa_guess = llama_bytes / 8

    q1_answer = keyed(llama_bytes, [(100 * KIB, "40 KiB"), (1 * MIB, "320 KiB")], "2.5 MiB")
    q1 = Prediction(
        key="a1-llama",
        question=("Llama-3.1-70B has 80 layers, 64 query heads, 8 KV heads and head_dim 128. Stored in BF16 "
                  "(2 bytes per number), how much KV cache does one token of context take?"),
        choices=(
            Choice("40 KiB", "That is what one shared K/V head would cost (multi-query attention). Llama-3.1-70B keeps 8 "
                             "KV heads, each with its own keys and values."),
            Choice("320 KiB", "K and V, for each of 80 layers, for each of the 8 KV heads, 128 numbers each, 2 bytes a "
                              "number."),
            Choice("2.5 MiB", "This counts the 64 query heads. Queries are used once and thrown away; only keys and values "
                              "are kept, and the 64 query heads share 8 KV heads (grouped-query attention)."),
        ),
        **q1_answer,
        reveal=(f"The simulator reads config.json and gets `{llama_tp1_formula}`, which is **{_size(llama_bytes)} "
                f"per token**. Counting query heads instead would give {_size(mha_guess)}; one shared head, "
                f"{_size(mqa_guess)}."),
        gives_away=(f"{_size(llama_bytes)} per token",),
    )
    s1 = f"""
To produce the next token, attention compares the new token's query with the **key** of every
earlier token and mixes their **values**. Those keys and values depend only on the earlier tokens,
so an engine computes them once and keeps them: that store is the KV cache. Without it each new
token would recompute the whole context, a full prefill per token.

What one token costs follows from the shapes in `config.json`:

`bytes per token = 2 (K and V) x layers x KV heads x head_dim x bytes per number`

Llama-3.1-70B: **{_size(llama_bytes)}**. A 100,000-token context is then {_size(llama_bytes * 100_000)}
of memory for one conversation. {qwen.model_name}, with 36 layers and 8 KV heads, costs
{kib(qwen.kv_bytes_per_token)} per token.

The formula has KV heads in it, not attention heads. Grouped-query attention exists to shrink exactly
this number: several query heads read the same keys and values.

So when a write-up puts a 70B model's cache at tens of kilobytes per token, check which slip it made. Counting
the attention heads overshoots, to {_size(mha_guess)}. Tens of kilobytes is what one GPU of eight holds under tensor
parallelism ({_size(llama.kv_bytes_per_token)}, one KV head each) or what a single shared head would cost
({_size(mqa_guess)}); the whole model's cache is {_size(llama_bytes)} per token.
"""
    step1 = Step(q1, s1, (
        equal("Llama-3.1-70B caches 320 KiB per token in BF16", llama_bytes, 320 * KIB),
        equal("counting the 64 query heads would give 2.5 MiB", mha_guess, 2.5 * MIB),
        equal("Qwen3-8B caches 144 KiB per token", qwen.kv_bytes_per_token, 144 * KIB),
        equal("tensor parallelism over 8 GPUs leaves one KV head, 40 KiB, per GPU", llama.kv_bytes_per_token, 40 * KIB),
    ), LiveView("steady", ("kv_formula",), {"model": "llama-3.1-70b", "tp": 8}, ("model", "kv_dtype", "tp"),
                "The formula filled from the chosen model's config.json. With tensor parallelism each GPU holds its "
                "share of the KV heads, so the per-GPU figure divides."),
        (TryThis("Pick another model, or 'Paste a config.json…' and paste one from a model card; check the formula's "
                 "factors against the file.", {"model": "llama-3.1-70b", "tp": 8}),))

    q2_answer = keyed(big.kv_bytes_per_token, [(200 * KIB, "160 KiB"), (1 * MIB, "256 KiB")], "2 MiB")
    q2 = Prediction(
        key="a1-headdim",
        question=("Qwen3-32B: 64 layers, hidden_size 5120, 64 query heads, 8 KV heads, and its config.json also says "
                  "head_dim 128. Bytes per token in BF16?"),
        choices=(
            Choice("160 KiB", "This takes head_dim as hidden_size / query heads = 80. Many configs work that way, but "
                              "when config.json states head_dim, the model uses it: Qwen3's heads are wider than "
                              "hidden_size / heads."),
            Choice("256 KiB", "2 x 64 layers x 8 KV heads x 128 x 2 bytes, with the head_dim the file states."),
            Choice("2 MiB", "That counts all 64 query heads: the multi-head figure, eight times the real one."),
        ),
        **q2_answer,
        reveal=(f"**{kib(big.kv_bytes_per_token)}** (`{big.kv_formula}`). Delete head_dim from the file and the "
                f"simulator falls back to 5120 / 64 = 80, giving {kib(big_guess.kv_bytes_per_token)}: an underestimate of "
                f"{1 - big_guess.kv_bytes_per_token / big.kv_bytes_per_token:.0%}."),
        gives_away=(f"**{kib(big.kv_bytes_per_token)}**",),
    )
    s2 = """
Read head_dim from the file when it is there. Derive it from hidden_size only when the file has
none; that is what the simulator does, and pasting a config without the key shows the difference.
"""
    step2 = Step(q2, s2, (
        equal("Qwen3-32B caches 256 KiB per token", big.kv_bytes_per_token, 256 * KIB),
        equal("without head_dim, Qwen3-32B's config gives 160 KiB per token", big_guess.kv_bytes_per_token, 160 * KIB),
    ), LiveView("steady", ("kv_formula",), {"model": "qwen3-32b"}, ("model", "kv_dtype"),
                "Qwen3-32B's formula, head_dim 128 as its config.json states."),
        (TryThis("Choose 'Paste a config.json…', paste Qwen3-32B's config without the head_dim line, and compare the "
                 "bytes per token.", {"model": "qwen3-32b"}),))

    return Lesson(
        **course.header("A1"),
        objective="Compute bytes per token from a config.json, and say why KV heads, not query heads, set it.",
        prerequisites=(),
        setup=("Every token a model has read leaves something behind in GPU memory while the request lives. How much, "
               "and why? Start with a large model you may have served."),
        steps=(step1, step2, _estimate_step()),
        recap=("The KV cache keeps each earlier token's keys and values so each new token costs one step, not a new prefill.",
               "Bytes per token = 2 x layers x KV heads x head_dim x bytes per number.",
               "KV heads, not query heads: grouped-query attention is why modern models cost tens to hundreds of KiB per "
               "token instead of MiB.",
               "Use head_dim from config.json when it is there."),
        not_captured=("Engines store a few extra bytes the formula ignores: FP8 caches carry scale factors, and some "
                      "kernels pad head_dim. kvlab counts keys and values only.",),
        ideas=("kv-why", "kv-formula", "kv-heads-not-q-heads", "head-dim-trap", "seed004-attention-heads-slip"),
    )
