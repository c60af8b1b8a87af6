"""C2. Queues and the load knee.

The answers rest on the most each deployment can finish per second (a closed loop that keeps more
requests in flight than the pool holds, over three random draws of the workload), not on where a
coarse rate sweep first sees p99 TTFT leave its floor: on a grid of half a request per second the
sweep's knee moves by whole grid steps, which decided the old answers."""

from __future__ import annotations

from functools import cache

from kvlab.sim.engine.sweep import knee, rate_sweep

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, holds, keyed
from .runs import lab, lab_config, pct, secs, tok

RATES = (0.5, 1.0, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0)
SEEDS = (0, 1, 2)
REQUESTS = 400
# Peak sustained rate: more clients than any of the three pools holds (about 54, 121 and 106
# running), and enough requests that the first admissions and the last drain are a small part.
CLIENTS = 256
SATURATED_REQUESTS = 3200


@cache
def sweep(name: str, seed: int):
    return rate_sweep(lab_config(name, num_requests=REQUESTS, seed=seed), list(RATES))


def knees(name: str) -> tuple[float | None, ...]:
    """The knee of p99 TTFT against rate for each random seed of the workload."""
    return tuple(knee(sweep(name, s).points) for s in SEEDS)


def saturated(name: str):
    """One closed-loop run per seed with the engine kept full: its throughput is the most it sustains."""
    return tuple(lab(name, arrival="closed", clients=CLIENTS, num_requests=SATURATED_REQUESTS, seed=s) for s in SEEDS)


def _mean(xs) -> float:
    return sum(xs) / len(xs)


def _band(xs, digits: int = 2) -> str:
    lo, hi = f"{min(xs):.{digits}f}", f"{max(xs):.{digits}f}"
    return f"{lo} req/s" if lo == hi else f"{lo} to {hi} req/s"


def build() -> Lesson:
    base_knees = knees("seed004-cliff")
    pts = sweep("seed004-cliff", 0).points
    below, above = (next(p for p in pts if p.rate_per_s == rate) for rate in (1.5, 2.0))  # either side of the knee
    w = lab_config("seed004-cliff").workload
    base, double, fp8 = saturated("seed004-cliff"), saturated("cliff-2x-hbm"), saturated("seed004-cliff-fp8")
    cap = {k: [r.throughput_per_s for r in runs_] for k, runs_ in (("base", base), ("double", double), ("fp8", fp8))}
    gain_double = _mean(cap["double"]) / _mean(cap["base"])
    gain_fp8 = _mean(cap["fp8"]) / _mean(cap["base"])
    pool = {k: runs_[0].kv_pool_tokens for k, runs_ in (("base", base), ("double", double), ("fp8", fp8))}
    running = {k: _mean([r.mean_running for r in runs_]) for k, runs_ in (("base", base), ("double", double), ("fp8", fp8))}

    q1 = Prediction(
        key="c2-hbm",
        question=(f"Qwen3-8B on one H100, prompts of about {w.prompt_tokens:,} tokens and answers of about "
                  f"{w.output_tokens:,}. Kept full, the engine finishes at most {_band(cap['base'])} (three random draws "
                  "of the workload); as arrivals approach that rate, p99 TTFT leaves its floor. Give the same GPU twice "
                  f"the memory at the same bandwidth: the KV pool grows from {tok(pool['base'])} to {tok(pool['double'])} "
                  "tokens. The most it finishes per second, and with it the knee, is multiplied by about..."),
        choices=(
            Choice("x1: no change", "Bandwidth is unchanged, but the pool was what capped the running batch; a bigger batch "
                              "shares each step's weight read among more requests."),
            Choice("x1.4", "More requests run at once, but every step reads all their caches through the same "
                           "bandwidth, so each step is slower: the gain is well short of the pool's."),
            Choice("x2", "That takes the pool's growth for the rate's, as if the steps stayed as short with more than "
                         "twice the cache to read."),
        ),
        **keyed(gain_double, [(1.15, "x1: no change"), (1.7, "x1.4")], "x2"),
        reveal=(f"**{_band(cap['double'])}** with 160 GiB against {_band(cap['base'])} with 80 GiB: x{gain_double:.2f} "
                f"on average, for x{pool['double'] / pool['base']:.1f} the pool. About {running['double']:.0f} requests "
                f"run at once instead of {running['base']:.0f}."),
        gives_away=(f"**{_band(cap['double'])}**", f"x{gain_double:.2f}"),
    )
    s1 = f"""
Every queue has a knee: as arrivals approach what the server can finish, waiting time climbs without limit.
For an LLM engine, what it can finish depends on how many requests run at once, and that is the KV pool. Under
the knee the pool has room: average use climbs from {pct(pts[1].mean_kv_usage)} at {pts[1].rate_per_s:g} req/s to
{pct(pts[-1].mean_kv_usage)} at {pts[-1].rate_per_s:g} req/s, and once new requests no longer fit they queue for
admission and their first token waits.

The lab's rate sweep finds where p99 TTFT leaves its floor: {_band(base_knees, 2)} with 80 GiB over three random
draws, just about the most the engine sustains. Past it the tail does not grow, it leaps: on the first draw p99
TTFT is {secs(below.ttft_p99_s)} at {below.rate_per_s:g} req/s and {secs(above.ttft_p99_s)} at {above.rate_per_s:g}
req/s, {above.ttft_p99_s / below.ttft_p99_s:.0f} times the wait for a third more load.
The knee is a band, not a point, and a sweep reads it only to the spacing of its rates; the sustained rate,
measured with the engine kept full, is the steadier figure to compare.
"""
    step1 = Step(q1, s1, (
        holds("2x HBM at the same bandwidth raises the sustained rate in every seed", min(cap["double"]) > max(cap["base"]),
              f"{cap['base']} vs {cap['double']}"),
        holds("the gain is well short of the pool's", gain_double < 0.75 * pool["double"] / pool["base"],
              f"x{gain_double:.2f} for x{pool['double'] / pool['base']:.2f} the pool"),
        holds("with 80 GiB the sweep's knee lies within 10% of the sustained rate in every seed",
              all(0.9 * min(cap["base"]) <= k <= 1.1 * max(cap["base"]) for k in base_knees),
              f"knees {base_knees}, sustained {cap['base']}"),
        holds("the knee differs between seeds (a band, not a point)", len(set(base_knees)) > 1, repr(base_knees)),
        holds("across the knee, a third more load multiplies p99 TTFT by more than 5", above.ttft_p99_s > 5 * below.ttft_p99_s,
              f"{below.ttft_p99_s:.2f} -> {above.ttft_p99_s:.2f} s"),
        holds("KV use rises with the rate", pts[-1].mean_kv_usage > 3 * pts[1].mean_kv_usage,
              f"{pts[1].mean_kv_usage:.2f} -> {pts[-1].mean_kv_usage:.2f}"),
    ), LiveView("lab", ("sweep",), {"preset": "cliff-2x-hbm"}, ("gpu_memory_gib",),
                "The lab's rate sweep with 160 GiB: p99 latency against request rate, one seed on a coarse grid of rates."),
        (TryThis("In the serving lab, run the rate sweep, then set the GPU memory override to 160 GiB and run it again.",
                 {"preset": "seed004-cliff"}, panel="serving_lab"),))

    q2 = Prediction(
        key="c2-fp8",
        question=("Back to 80 GiB, and store the cache in FP8 instead: half the bytes per token, so the pool holds "
                  f"{tok(pool['fp8'])} tokens. Against the BF16 card's, the most it finishes per second is multiplied by about..."),
        choices=(
            Choice("x1.2", "FP8 does more than add room: each step also reads half the cache bytes, so a bigger batch "
                           "costs less step time than it did in BF16."),
            Choice("x1.5", "It acts twice: the pool doubles, and every step reads half the bytes per cached token, so "
                           "the bigger batch slows the steps less than 160 GiB of BF16 cache does."),
            Choice("x2", "The pool doubles, but the prompts' prefills and the weight read take as long as before; "
                         "only the cache part of the work shrinks."),
        ),
        **keyed(gain_fp8, [(1.35, "x1.2"), (1.75, "x1.5")], "x2"),
        reveal=(f"**{_band(cap['fp8'])}**, x{gain_fp8:.2f} on average: more than twice the memory gave (x{gain_double:.2f}), "
                f"though its pool is smaller ({tok(pool['fp8'])} against {tok(pool['double'])} tokens) and fewer "
                f"requests run at once ({running['fp8']:.0f} against {running['double']:.0f})."),
        gives_away=(f"**{_band(cap['fp8'])}**", f"x{gain_fp8:.2f}"),
    )
    s2 = """
FP8 acts twice: the pool holds twice the tokens, and each decode step reads half the cache bytes, so the same
batch runs faster. More memory at the same bandwidth moves only the first of the two. That is why the smaller
FP8 pool carries more traffic than the larger BF16 one: capacity is requests finished per second, and a step
that reads fewer bytes finishes sooner.
"""
    step2 = Step(q2, s2, (
        holds("FP8 KV sustains more than BF16 in every seed", min(cap["fp8"]) > max(cap["base"]), f"{cap['base']} vs {cap['fp8']}"),
        holds("FP8 KV sustains more than 2x HBM in every seed", all(f > d for f, d in zip(cap["fp8"], cap["double"], strict=True)),
              f"{cap['fp8']} vs {cap['double']}"),
        holds("with a smaller pool than 2x HBM's", pool["fp8"] < pool["double"], f"{pool['fp8']} vs {pool['double']}"),
    ), LiveView("lab", ("sweep",), {"preset": "seed004-cliff-fp8"}, ("kv_dtype",),
                "The lab's rate sweep with an FP8 cache (one seed, coarse grid)."),
        (TryThis("In the serving lab, run the rate sweep on the cliff workload, then switch the KV cache to FP8 and "
                 "run it again.", {"preset": "seed004-cliff"}, panel="serving_lab"),))
    return Lesson(
        **course.header("C2"),
        objective="Explain why latency explodes as arrivals reach capacity, and how the KV pool sets where.",
        prerequisites=("C1", "A4"),
        setup="Raise the request rate step by step on one GPU and watch the tail of time to first token.",
        steps=(step1, step2),
        recap=("Latency has a knee where arrivals reach capacity; the KV pool sets the capacity.",
               "More memory at the same bandwidth moves the knee by capacity alone; FP8 KV moves it by capacity and "
               "by bandwidth, and further.",
               "Quote the knee as a band over random seeds, and compare deployments by what they sustain."),
        not_captured=("The sweep uses Poisson arrivals; bursty traffic reaches the knee earlier.",
                      f"The sustained rates come from closed-loop runs of {SATURATED_REQUESTS:,} requests per seed, made "
                      "for this page; the lab's chart shows one seed's sweep."),
        ideas=("load-knee", "pool-sets-capacity", "knee-band"),
    )
