"""The requests of one run: arrival times, prompt and output lengths, shared prefixes.

Everything random comes from the `random.Random(seed)` passed in, drawn in request order, so a
seed fixes the whole workload whatever the scheduler later does with it. Requests are small named
tuples: 100,000 of them cost a few tens of milliseconds to draw.
"""

from __future__ import annotations

import math
import random
from typing import NamedTuple

from .config import Workload


class Request(NamedTuple):
    """One request as the client sends it. `arrival_s` is NaN for a closed loop (the simulation
    stamps it when a client sends); `prefix_id` names a shared prefix of `prefix_tokens` tokens
    at the start of the prompt, or is None."""

    id: int
    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    prefix_id: str | None
    prefix_tokens: int


def _lengths(rng: random.Random, dist: str, value: int, low: int, high: int, sigma: float):
    """A function drawing one length: fixed, uniform in [low, high], or log-normal with median
    `value` and shape `sigma`, rounded and clipped to [low, high]."""
    if dist == "fixed":
        return lambda: value
    if dist == "uniform":
        return lambda: rng.randint(low, high)
    mu = math.log(value)

    def lognormal() -> int:
        return min(high, max(low, round(rng.lognormvariate(mu, sigma))))
    return lognormal


def _gaps(rng: random.Random, w: Workload):
    if w.arrival == "poisson":
        rate = w.rate_per_s
        return lambda: rng.expovariate(rate)
    # Gamma gaps with mean 1/rate and coefficient of variation cv: shape 1/cv^2, scale cv^2/rate.
    # cv > 1 clusters requests into bursts separated by lulls; cv = 1 is Poisson again.
    shape = 1.0 / (w.burst_cv * w.burst_cv)
    scale = 1.0 / (w.rate_per_s * shape)
    return lambda: rng.gammavariate(shape, scale)


def generate(w: Workload, rng: random.Random) -> list[Request]:
    """Draw `num_requests` requests (or convert the trace rows)."""
    if w.arrival == "trace":
        return [Request(i, r.arrival_s, r.prompt_tokens, r.output_tokens, r.prefix_id, r.prefix_tokens)
                for i, r in enumerate(w.trace or ())]
    prompt = _lengths(rng, w.prompt_dist, w.prompt_tokens, w.prompt_min_tokens, w.prompt_max_tokens, w.prompt_sigma)
    output = _lengths(rng, w.output_dist, w.output_tokens, w.output_min_tokens, w.output_max_tokens, w.output_sigma)
    closed = w.arrival == "closed"
    gap = None if closed else _gaps(rng, w)
    share = w.prefix_fraction if w.prefix_tokens > 0 else 0.0
    groups = [f"system-{g}" for g in range(w.prefix_groups)]
    t = 0.0
    out = []
    for i in range(w.num_requests):
        if not closed:
            t += gap()
        p = prompt()
        o = output()
        prefix_id, prefix_tokens = None, 0
        if share and rng.random() < share:
            prefix_id = groups[rng.randrange(len(groups))]
            prefix_tokens = min(w.prefix_tokens, p - 1)  # the prompt always has at least one own token
        out.append(Request(i, math.nan if closed else t, p, o, prefix_id, prefix_tokens))
    return out


def seed000_workload(**changes) -> Workload:
    """Seed 000's traffic shape: prompts with a median near 6k tokens and a tail past 30k,
    generations mostly under 300 tokens.

    Log-normal(median 6,000, sigma 0.8): 2.2% of prompts exceed 30k (P(Z > ln 5 / 0.8)), p99 about
    39k, clipped at 64k. Outputs log-normal(median 120, sigma 0.7): 90% under 300 tokens.
    """
    base = Workload(
        arrival="poisson", rate_per_s=2.0, num_requests=2000,
        prompt_dist="lognormal", prompt_tokens=6000, prompt_min_tokens=64, prompt_max_tokens=65536, prompt_sigma=0.8,
        output_dist="lognormal", output_tokens=120, output_min_tokens=8, output_max_tokens=2048, output_sigma=0.7,
    )
    return base.with_(**changes)
