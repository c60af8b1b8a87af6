"""B4. Tensor parallelism: split the bytes."""

from __future__ import annotations

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, equal, holds, keyed
from .runs import gib, kib, ms, run

MODEL = dict(model="qwen3-32b")


def build() -> Lesson:
    one, four = run(**MODEL), run(**MODEL, tp=4)
    moe4, moe8 = run(model="qwen3-30b-a3b", tp=4), run(model="qwen3-30b-a3b", tp=8)

    q1 = Prediction(
        key="b4-fit",
        question=(f"{one.model_name} on one H100 holds {one.max_sequences} requests of 4k. Split it over four H100s with "
                  "tensor parallelism (each GPU holds a quarter of every layer and a quarter of the KV heads). How many "
                  "fit now?"),
        choices=(
            Choice("about 36", "Four times the memory, four times the requests: true only if the weights were "
                               "negligible."),
            Choice("about 200", "Each GPU's weights shrink to a quarter, so each GPU's pool grows far more than "
                                "fourfold."),
            Choice("the same as on one GPU", "Every GPU still holds part of every request; but the pools add up."),
        ),
        **keyed(four.max_sequences, [(15, "the same as on one GPU"), (100, "about 36")], "about 200"),
        reveal=(f"**{four.max_sequences}.** Each GPU's weights fall from {gib(one.weight_bytes)} to {gib(four.weight_bytes)}, "
                f"and its pool grows from {gib(one.kv_pool_bytes)} to {gib(four.kv_pool_bytes)}."),
        gives_away=(f"**{four.max_sequences}.**",),
    )
    s1 = f"""
The pool is what the weights leave. Splitting the weights four ways frees most of each card, so the pool
grows by much more than the GPU count when the model nearly filled one card. Each step also reads a quarter of
the bytes per GPU, so inter-token latency falls from {ms(one.itl_s)} to {ms(four.itl_s)}, but every layer now ends
with an **all-reduce** that exchanges partial results between GPUs: {ms(four.decode_allreduce_s, 2)} of each decode
step here. ITL falls {one.itl_s / four.itl_s:.1f} times, not 4, mostly because the four GPUs now run {four.batch}
requests instead of {one.batch}, and every step reads all their caches ({ms(four.decode_kv_read_s)} of its
{ms(four.decode_step_s)}). In a prefill the all-reduce carries every prompt token's activations, so it weighs more:
{ms(four.prefill_allreduce_s)} of a 4k prompt's {ms(four.ttft_s, 0)} TTFT. That exchange, once per layer, is why tensor
parallelism scales below linearly and why it wants GPUs joined by NVLink.
"""
    step1 = Step(q1, s1, (
        equal("Qwen3-32B: 9 requests at TP 1, 209 at TP 4", (one.max_sequences, four.max_sequences), (9, 209)),
        holds("the all-reduce is a cost only with TP > 1", (one.decode_allreduce_s or 0) == 0 and four.decode_allreduce_s > 0,
              f"{one.decode_allreduce_s} / {four.decode_allreduce_s}"),
        holds("a prefill's all-reduce is over 10% of its TTFT at TP 4, a decode step's under 5% of the step",
              four.prefill_allreduce_s > 0.1 * four.ttft_s and four.decode_allreduce_s < 0.05 * four.decode_step_s,
              f"{four.prefill_allreduce_s:.4f} of {four.ttft_s:.4f}; {four.decode_allreduce_s:.5f} of {four.decode_step_s:.4f}"),
    ), LiveView("steady", ("hbm_bar", "step_breakdown"), {**MODEL, "tp": 4}, ("tp",),
                "One GPU's memory and one decode step at the chosen tensor-parallel size."),
        (TryThis("Switch Tensor parallel size from 1 to 4 and compare one GPU's bar.", MODEL),))

    q2 = Prediction(
        key="b4-heads",
        question=("Qwen3-30B-A3B has only 4 KV heads. At TP 4 each GPU caches one of them. At TP 8, each GPU's cache "
                  "per token..."),
        choices=(
            Choice("halves again", "There is no half of a head to give each GPU."),
            Choice("stays the same", "With more GPUs than KV heads, heads are copied: each GPU still keeps one whole head."),
            Choice("doubles", "Replication does not add heads per GPU; it adds copies across GPUs."),
        ),
        **keyed(moe8.kv_bytes_per_token / moe4.kv_bytes_per_token, [(0.75, "halves again"), (1.5, "stays the same")],
                      "doubles"),
        reveal=f"**{kib(moe8.kv_bytes_per_token)} per token at both sizes** (`{moe8.kv_formula}`).",
        gives_away=(f"**{kib(moe8.kv_bytes_per_token)} per token at both sizes**",),
    )
    s2 = """
The KV heads are the unit tensor parallelism splits the cache by. Past one head per GPU, the cache per GPU
stops shrinking while the weights keep shrinking, and the extra GPUs hold copies.
"""
    step2 = Step(q2, s2, (
        equal("30B-A3B caches the same per GPU at TP 4 and TP 8", moe4.kv_bytes_per_token, moe8.kv_bytes_per_token),
    ), LiveView("steady", ("kv_formula",), {"model": "qwen3-30b-a3b", "tp": 8}, ("tp",), "The per-GPU formula."),
        (TryThis("Choose Qwen3-30B-A3B and switch Tensor parallel size from 4 to 8.", {"model": "qwen3-30b-a3b", "tp": 4}),))
    return Lesson(
        **course.header("B4"),
        objective="Predict what tensor parallelism does to the memory of every GPU (weights, pool, cache per token) and what its "
                  "all-reduce costs.",
        prerequisites=("A3", "B2"),
        setup="A model that barely fits on one GPU. Spread it over four.",
        steps=(step1, step2),
        recap=("The pool per GPU grows by more than the GPU count when weights dominated.",
               "Each layer adds an all-reduce; the cache splits by KV heads and no further."),
        not_captured=("Pipeline and expert parallelism are not modelled; the all-reduce uses one link bandwidth and "
                      "latency per GPU.",),
        ideas=("tensor-parallel", "allreduce-cost", "kv-head-replication"),
    )
