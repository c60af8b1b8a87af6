"""E4. Capstone: diagnose, then choose the lever."""

from __future__ import annotations

from .. import course
from .d1_saturation import steady
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, holds, keyed
from .runs import lab, pct, secs

TAIL, SAT = "long-prompts-light", "seed001-saturation"


def build() -> Lesson:
    tail, tail8 = lab(TAIL), lab(TAIL, kv_dtype="fp8")
    sat, sat8 = lab(SAT, num_requests=600), lab(SAT, num_requests=600, kv_dtype="fp8")
    tail_change = tail8.ttft_s.p99 / tail.ttft_s.p99
    run_a, run_b = steady(sat, "running"), steady(sat8, "running")

    q1 = Prediction(
        key="e4-tail",
        question=(f"Case 1: the long-prompt deployment at light load has p99 TTFT {secs(tail.ttft_s.p99)}. Someone proposes "
                  "an FP8 KV cache. p99 TTFT becomes..."),
        choices=(
            Choice("much lower", "FP8 KV helps when the pool binds. Check the pool first: it is nearly empty here."),
            Choice("about the same", f"The cache is {pct(tail.mean_kv_usage)} used on average; the tail is prefill of long "
                                     "prompts, which FP8 KV does not touch."),
            Choice("higher", "FP8 KV does not slow prefill in this model."),
        ),
        **keyed(tail_change, [(0.8, "much lower"), (1.2, "about the same")], "higher"),
        reveal=f"**{secs(tail8.ttft_s.p99)}** with FP8 KV, against {secs(tail.ttft_s.p99)}.",
        gives_away=(f"**{secs(tail8.ttft_s.p99)}** with FP8 KV",),
    )
    s1 = """
Diagnose before choosing: read KV usage, the queue and the latency distribution by prompt length. A tail made
of long prompts' prefill needs compute, shorter prompts, prefix caching or chunking policy; memory levers do
nothing for it.
"""
    step1 = Step(q1, s1, (
        holds("FP8 KV leaves light-load p99 TTFT within 5%", abs(tail_change - 1) < 0.05, f"x{tail_change:.3f}"),
        holds("the pool is under 10% used at light load", tail.mean_kv_usage < 0.1, f"{tail.mean_kv_usage:.3f}"),
    ), LiveView("lab", ("summary", "ttft_by_prompt"), {"preset": TAIL, "kv_dtype": "fp8"}, ("kv_dtype", "policy"),
                "The light-load tail with an FP8 cache."),
        (TryThis("In the serving lab, try FP8 KV, then chunked prefill, then lanes on this case; read p99 TTFT each time.",
                 {"preset": TAIL}, panel="serving_lab"),))

    q2 = Prediction(
        key="e4-saturation",
        question=(f"Case 2: the saturated SGLang pool runs about {run_a:.0f} requests at once with a long queue. The same "
                  "FP8 KV cache makes the running count..."),
        choices=(
            Choice("about the same", "The pool binds here; halving bytes per token is exactly the lever."),
            Choice("about double", "The same pool holds twice the tokens, so about twice the requests run."),
            Choice("four times", "FP8 halves bytes once."),
        ),
        **keyed(run_b / run_a, [(1.2, "about the same"), (3, "about double")], "four times"),
        reveal=(f"**{run_b:.0f} running** instead of {run_a:.0f}; completed requests per second go from "
                f"{sat.throughput_per_s:.2f} to {sat8.throughput_per_s:.2f}."),
        gives_away=(f"**{run_b:.0f} running**",),
    )
    s2 = """
The same lever, opposite verdicts: it depends on which limit binds. The other cases in the lab work the same
way: the shared-prefix RAG workload wants prefix caching (E1); the cliff wants capacity (C2); a single
long-context user wants bandwidth and compute, not admission tricks (B2).
"""
    step2 = Step(q2, s2, (
        holds("FP8 KV at least 1.7x the running count at saturation", run_b > 1.7 * run_a, f"{run_a:.1f} -> {run_b:.1f}"),
        holds("FP8 KV raises completed requests/s at saturation", sat8.throughput_per_s > 1.3 * sat.throughput_per_s,
              f"{sat.throughput_per_s:.3f} -> {sat8.throughput_per_s:.3f}"),
    ), LiveView("lab", ("summary", "timeline"), {"preset": SAT, "num_requests": 600, "kv_dtype": "fp8"}, ("kv_dtype",),
                "The saturated pool with an FP8 cache."),
        (TryThis("In the serving lab, on the SGLang saturation case, switch KV cache precision to FP8.", {"preset": SAT},
                 panel="serving_lab"),))
    return Lesson(
        **course.header("E4"),
        objective="Diagnose a serving problem from its signals and pick the one lever that moves it.",
        prerequisites=("C3", "D1", "E1"),
        setup="Two cases, one proposed fix. Predict where it helps.",
        steps=(step1, step2),
        recap=("Find the binding limit first: compute, bandwidth, pool, or queue.",
               "A lever helps only the limit it moves."),
        not_captured=("Each case is one simulated deployment; real systems mix these problems.",),
        ideas=("choose-lever",),
    )
