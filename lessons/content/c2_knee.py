"""C2. Queues and the load knee."""

from __future__ import annotations

from functools import cache

from kvlab.sim.engine.sweep import knee, rate_sweep

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, bucket, holds
from .runs import lab_config, pct

RATES = (0.5, 1.0, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0)
SEEDS = (0, 1, 2)
REQUESTS = 400


@cache
def sweep(name: str, seed: int):
    return rate_sweep(lab_config(name, num_requests=REQUESTS, seed=seed), list(RATES))


def knees(name: str) -> tuple[float | None, ...]:
    """The knee of p99 TTFT against rate for each random seed of the workload."""
    return tuple(knee(sweep(name, s).points) for s in SEEDS)


def _band(ks) -> str:
    lo, hi = min(ks), max(ks)
    return f"{lo:g} req/s" if lo == hi else f"{lo:g} to {hi:g} req/s"


def build() -> Lesson:
    base, double, fp8 = knees("seed004-cliff"), knees("cliff-2x-hbm"), knees("seed004-cliff-fp8")
    pts = sweep("seed004-cliff", 0).points
    w = lab_config("seed004-cliff").workload
    mid = sum(base) / len(base)
    mid2 = sum(double) / len(double)

    q1 = Prediction(
        key="c2-hbm",
        question=(f"Qwen3-8B on one H100, prompts of about {w.prompt_tokens:,} tokens and answers of about "
                  f"{w.output_tokens:,}. As the request rate "
                  f"rises, p99 TTFT leaves its floor near {_band(base)}. Give the same GPU twice the memory and the same "
                  f"bandwidth. The knee moves to about..."),
        choices=(
            Choice("the same rate", "Bandwidth sets each step's speed, but the knee here is where the pool fills and new "
                                    "requests wait for admission."),
            Choice("about 1.4x the rate", "Twice the memory more than doubles the pool (the weights stay the same size), "
                                          "so capacity grows more than that: it is not only more room for the same steps."),
            Choice("about 2x the rate", "More than doubling the pool cannot double the rate, because each step also "
                                        "gets slower as it reads the bigger batch's cache."),
        ),
        answer=bucket(mid2 / mid, [(1.15, "the same rate"), (1.7, "about 1.4x the rate")], "about 2x the rate"),
        reveal=(f"Over three random seeds the knee sits at **{_band(base)}** with 80 GiB and **{_band(double)}** with "
                f"160 GiB: {mid2 / mid:.2f} times, on average."),
        gives_away=(f"**{_band(double)}**",),
    )
    s1 = f"""
Every queue has a knee: as arrivals approach what the server can finish, waiting time climbs without limit.
For an LLM engine, what it can finish depends on how many requests run at once, and that is the KV pool. Under
the knee, the pool has room; average use climbs from {pct(pts[1].mean_kv_usage)} at {pts[1].rate_per_s:g} req/s to
{pct(pts[-1].mean_kv_usage)} at {pts[-1].rate_per_s:g} req/s, and once new requests no longer fit they queue for
admission and their first token waits.

The knee is a band, not a point: with another random draw of the same workload it moves. Read it over several
seeds before quoting one number.
"""
    step1 = Step(q1, s1, (
        holds("the knee moves up with 2x HBM at the same bandwidth, in every seed", min(double) > max(base),
              f"{base} vs {double}"),
        holds("with 80 GiB the knee lies between 1.5 and 2.5 req/s in every seed", all(1.5 <= k <= 2.5 for k in base), repr(base)),
        holds("the knee differs between seeds (a band, not a point)", len(set(base + double)) > 2, f"{base}, {double}"),
        holds("KV use rises with the rate", pts[-1].mean_kv_usage > 3 * pts[1].mean_kv_usage,
              f"{pts[1].mean_kv_usage:.2f} -> {pts[-1].mean_kv_usage:.2f}"),
    ), LiveView("lab", ("sweep",), {"preset": "cliff-2x-hbm"}, ("gpu_memory_gib",),
                "The rate sweep with 160 GiB: p99 latency against request rate."),
        (TryThis("In the serving lab, run the rate sweep, then set the GPU memory override to 160 GiB and run it again.",
                 {"preset": "seed004-cliff"}, panel="serving_lab"),))

    q2 = Prediction(
        key="c2-fp8",
        question="Instead of more memory, store the cache in FP8 (half the bytes per token). The knee moves...",
        choices=(
            Choice("less than with 2x HBM", "FP8 doubles the pool's tokens, a little less than 2x HBM does, but it also "
                                            "halves the cache bytes each step reads."),
            Choice("about as far as with 2x HBM", "Capacity alone would say so; the faster steps add to it."),
            Choice("further than with 2x HBM", "It doubles the tokens the pool holds and shortens every step that reads "
                                               "them: capacity and bandwidth both."),
        ),
        answer=bucket(sum(fp8) / len(fp8) - mid2, [(-0.2, "less than with 2x HBM"), (0.2, "about as far as with 2x HBM")],
                      "further than with 2x HBM"),
        reveal=f"With FP8 KV the knee sits at **{_band(fp8)}**, against {_band(double)} with 2x HBM.",
        gives_away=(f"**{_band(fp8)}**",),
    )
    s2 = """
FP8 acts twice: the pool holds twice the tokens, and each decode step reads half the cache bytes, so the same
batch runs faster. A counterfactual that moves only one of the two (more memory, same bandwidth) shows which
part is capacity.
"""
    step2 = Step(q2, s2, (
        holds("FP8 KV moves the knee above the BF16 knee in every seed", min(fp8) > max(base), f"{base} vs {fp8}"),
        holds("FP8 KV's knee is at least as high as 2x HBM's on average", sum(fp8) >= sum(double), f"{fp8} vs {double}"),
    ), LiveView("lab", ("sweep",), {"preset": "seed004-cliff-fp8"}, ("kv_dtype",), "The rate sweep with an FP8 cache."),
        (TryThis("In the serving lab, run the rate sweep on the cliff workload, then switch the KV cache to FP8 and "
                 "run it again.", {"preset": "seed004-cliff"}, panel="serving_lab"),))
    return Lesson(
        **course.header("C2"),
        objective="Explain why latency explodes as arrivals reach capacity, and how the KV pool sets where.",
        prerequisites=("C1", "A4"),
        setup="Raise the request rate step by step on one GPU and watch the tail of time to first token.",
        steps=(step1, step2),
        recap=("Latency has a knee where arrivals reach capacity; the KV pool sets the capacity.",
               "More memory at the same bandwidth moves the knee; FP8 KV moves it by capacity and by bandwidth.",
               "Quote the knee as a band over random seeds."),
        not_captured=("The sweep uses Poisson arrivals; bursty traffic reaches the knee earlier.",
                      "The lab's chart shows one seed; the band here comes from three sweeps run for this page."),
        ideas=("load-knee", "pool-sets-capacity", "knee-band"),
    )
