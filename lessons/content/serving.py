"""Lesson 2, "Tails and cliffs": what a serving engine does over time, from sim's time-domain
engine on the workload shapes of seeds 000, 001 and 004.

Every figure is simulated when the lesson is built (about a second of CPython); each claim is a
`Claim` checked by tests/lessons/test_serving_lesson.py.
"""

from __future__ import annotations

from functools import cache

from kvlab.sim.engine import EngineResult, simulate
from kvlab.sim.engine.presets import seed000, seed001, seed004
from kvlab.sim.engine.sweep import Sweep, knee, rate_sweep

from .model import Claim, Lesson, Prediction, Section, TryThis

SWEEP_RATES_PER_S = (0.5, 1.0, 1.5, 1.75, 2.0, 2.5, 3.0)
SWEEP_REQUESTS = 400
SATURATION_REQUESTS = 600
SATURATION_SLOTS = 150  # seed 001's max_running_requests


@cache
def shared_queue() -> EngineResult:
    return simulate(seed000("fcfs"))


@cache
def chunked() -> EngineResult:
    return simulate(seed000("chunked"))


@cache
def cliff(kv_dtype: str) -> Sweep:
    return rate_sweep(seed004(kv_dtype).with_(num_requests=SWEEP_REQUESTS), list(SWEEP_RATES_PER_S))


@cache
def saturation(output_median_tokens: int) -> EngineResult:
    return simulate(seed001(output_median_tokens).with_(num_requests=SATURATION_REQUESTS))


def steady(r: EngineResult, key: str) -> float:
    """Mean of a time series over the middle of the run, after the start-up transient and before a
    closed loop with a finite number of requests drains."""
    v = r.series[key]
    mid = v[len(v) // 4: len(v) * 3 // 5]
    return sum(mid) / len(mid)


def _s(x: float) -> str:
    return f"{x:.2f} s" if x < 10 else f"{x:.1f} s"


def _ms(x: float) -> str:
    return f"{x * 1e3:.0f} ms" if x < 1 else _s(x)


def _bucket(value: float, edges: list[tuple[float, str]], last: str) -> str:
    """The first label whose upper edge is above `value`: turns a simulated figure into the
    matching multiple-choice answer, so the answer key is computed, not typed."""
    for edge, label in edges:
        if value < edge:
            return label
    return last


def distribution() -> Section:
    r = shared_queue()
    cfg = seed000("fcfs")
    ratio = r.ttft_s.p99 / r.ttft_s.p50
    text = f"""
Seed 000's deployment serves {r.model_name} on {r.gpus} GPUs. Prompts have a median near
{cfg.workload.prompt_tokens:,} tokens and a tail past 30k; answers are short. At {cfg.workload.rate_per_s:g} requests per second the
engine is busy but keeps up: over the run it completes {r.completed:,} requests.

The **mean** time to first token is {_s(r.ttft_s.mean)}. That sounds acceptable. The **median** is
{_s(r.ttft_s.p50)}, and the **99th percentile** is {_s(r.ttft_s.p99)}, {ratio:.1f} times the median: one user
in a hundred waits that long before the first word appears. The mean sits near the median because
the slow requests are rare, and it hides them. Plot the whole distribution and read its tail.
"""
    claims = [
        Claim("p99 TTFT is more than 5x the median on seed 000's shape", ratio > 5),
        Claim("the mean TTFT is less than a third of the p99", r.ttft_s.mean < r.ttft_s.p99 / 3),
        Claim("every request completes", r.completed == r.num_requests),
    ]
    predict = Prediction(
        question="On this workload, how does the 99th-percentile time to first token compare with the median?",
        choices=["about 1.5x", "about 3x", "more than 5x"],
        answer=_bucket(ratio, [(2.2, "about 1.5x"), (5, "about 3x")], "more than 5x"),
        reveal=f"p50 {_s(r.ttft_s.p50)}, p99 {_s(r.ttft_s.p99)}: {ratio:.1f}x.",
    )
    return Section("Plot the distribution, not the mean", text, claims,
                   [TryThis("Open the lab on seed 000's shared queue and read the TTFT histogram and CDF.",
                            {"preset": "seed000-shared-queue"}, panel="serving_lab")], [predict])


def prefill_stalls_decode() -> Section:
    fcfs, mixed = shared_queue(), chunked()
    itl_gain = fcfs.itl_s.p99 / mixed.itl_s.p99
    ttft_gain = fcfs.ttft_s.p99 / mixed.ttft_s.p99
    text = f"""
With one shared queue, a step either prefills whole prompts or decodes. A 30k-token prompt is a
long step, and every running conversation waits for it: the 99th-percentile gap between two tokens
of the same answer is **{_ms(fcfs.itl_s.p99)}**, and the worst is {_s(fcfs.itl_s.max)}.

Chunked prefill splits prompts into pieces of at most `max_num_batched_tokens` and puts every
waiting decode into each step first. A decode then waits for one chunk at most, and p99 inter-token
latency falls to **{_ms(mixed.itl_s.p99)}** ({itl_gain:.1f}x better). Time to first token improves too, from
{_s(fcfs.ttft_s.p99)} to {_s(mixed.ttft_s.p99)} at p99: decode tokens ride inside compute-bound prefill steps
almost for free instead of each paying its own read of the weights, so the same load is lighter.
"""
    claims = [
        Claim("chunked prefill cuts p99 ITL more than 5x", itl_gain > 5),
        Claim("chunked prefill cuts p99 TTFT by more than 15%", mixed.ttft_s.p99 < 0.85 * fcfs.ttft_s.p99),
        Claim("chunked prefill cuts the worst ITL more than 20x", mixed.itl_s.max < 0.05 * fcfs.itl_s.max),
    ]
    predict = Prediction(
        question="Switching seed 000's engine to chunked prefill with decode first improves which tail more?",
        choices=["p99 time to first token", "p99 inter-token latency"],
        answer="p99 inter-token latency" if itl_gain > ttft_gain else "p99 time to first token",
        reveal=f"ITL p99 {itl_gain:.1f}x better, TTFT p99 {ttft_gain:.2f}x better.",
    )
    return Section("A long prefill stalls every decode", text, claims,
                   [TryThis("Compare the shared queue with chunked prefill side by side in the lab.",
                            {"preset": "seed000-chunked"}, panel="serving_lab")], [predict])


def the_cliff() -> Section:
    bf16, fp8 = cliff("bf16"), cliff("fp8")
    k16, k8 = knee(bf16.points), knee(fp8.points)
    pts = bf16.points
    i = [p.rate_per_s for p in pts].index(k16)
    before, at = pts[i - 1], pts[i]
    w = seed004().workload
    text = f"""
Seed 004's point is that latency does not degrade gently. Send prompts with a median of
{w.prompt_tokens:,} tokens and answers of about {w.output_tokens:,} to one H100 running Qwen3-8B, and raise the
request rate. From {pts[0].rate_per_s:g} to {before.rate_per_s:g} requests/s, p99 time to first token only goes from
{_s(pts[0].ttft_p99_s)} to {_s(before.ttft_p99_s)}. One more step, to {at.rate_per_s:g} requests/s, and it jumps to
{_s(at.ttft_p99_s)}; at {pts[-1].rate_per_s:g} requests/s it is {_s(pts[-1].ttft_p99_s)}. The knee is where the KV pool
runs full: average use climbs from {pts[1].mean_kv_usage:.0%} at {pts[1].rate_per_s:g} requests/s to {at.mean_kv_usage:.0%} at
the knee and {pts[i + 1].mean_kv_usage:.0%} just past it. New requests no longer fit, so they queue for
admission, and the queue grows without bound.

Store the cache in FP8 and each token costs half the bytes, so the same pool holds twice the
tokens, and the knee moves from {k16:g} to **{k8:g} requests/s**. The cliff is still there; it is further away.
"""
    claims = [
        Claim("p99 TTFT has a knee within the swept rates", k16 is not None),
        Claim("below the knee, p99 TTFT stays within 2.5x of light load", before.ttft_p99_s < 2.5 * pts[0].ttft_p99_s),
        Claim("at the knee, one step of at most 35% in load at least doubles p99 TTFT",
              at.rate_per_s <= 1.35 * before.rate_per_s and at.ttft_p99_s > 2 * before.ttft_p99_s),
        Claim("an FP8 cache moves the knee at least 30% higher", k8 is not None and k8 >= 1.3 * k16),
        Claim("average KV use rises as the knee is crossed", pts[i + 1].mean_kv_usage > 2 * pts[1].mean_kv_usage),
    ]
    predict = Prediction(
        question="Halving the bytes per token with an FP8 KV cache moves the latency knee to...",
        choices=["a lower rate", "the same rate", "a higher rate"],
        answer="a higher rate" if k8 > k16 else ("the same rate" if k8 == k16 else "a lower rate"),
        reveal=f"The knee moves from {k16:g} to {k8:g} requests per second.",
    )
    return Section("The batching cliff", text, claims,
                   [TryThis("Run the rate sweep on seed 004's workload, then again with the FP8 cache.",
                            {"preset": "seed004-cliff"}, panel="serving_lab")], [predict])


def saturation_section() -> Section:
    long, short = saturation(3000), saturation(1500)
    running, usage = steady(long, "running"), steady(long, "kv_usage")
    running_short = steady(short, "running")
    text = f"""
Seed 001 describes an SGLang deployment that allowed {SATURATION_SLOTS} requests at once and never ran more
than about 50. Recreate the shape: {SATURATION_SLOTS} clients, long generations (a median of 3,000 tokens), a KV
pool of {long.kv_pool_tokens:,} tokens. In steady state only **{running:.0f}** requests run while the cache is
**{usage:.0%}** full and the rest wait. The limit that binds is not `max_running_requests`; it is the
pool, divided by the tokens each running request holds.

Halve the generation length and each request holds fewer tokens, so more of them fit: {running_short:.0f} run at
once. Raising the request limit would change nothing; making each request smaller, or the cache
cheaper per token, does.
"""
    claims = [
        Claim("fewer than half of the 150 slots run at saturation", running < 0.5 * SATURATION_SLOTS),
        Claim("the KV cache is more than 85% full at saturation", usage > 0.85),
        Claim("shorter outputs let more requests run", running_short > running / 0.8),
    ]
    predict = Prediction(
        question=f"With {SATURATION_SLOTS} clients and 3,000-token answers, about how many requests run at once?",
        choices=["about 150", "about 100", "fewer than 60"],
        answer=_bucket(running, [(60, "fewer than 60"), (125, "about 100")], "about 150"),
        reveal=f"{running:.0f} run while the cache is {usage:.0%} full.",
    )
    return Section("Saturation: the pool, not the limit", text, claims,
                   [TryThis("Open seed 001's saturation in the lab and watch running, waiting and KV usage over time.",
                            {"preset": "seed001-saturation"}, panel="serving_lab")], [predict])


def build() -> Lesson:
    return Lesson(
        slug="serving",
        title="Tails and cliffs: serving over time",
        summary="Tail latency, chunked prefill, the batching cliff and KV saturation, simulated request by request.",
        sections=[distribution(), prefill_stalls_decode(), the_cliff(), saturation_section()],
    )
