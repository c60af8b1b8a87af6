"""E1. Prefix caching: compute only the suffix."""

from __future__ import annotations

from functools import cache

from kvlab.sim.engine.sweep import rate_sweep

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, holds, keyed
from .runs import lab, lab_config, pct, secs

PRESET = "prefix-rag"
RATES = (4.0, 8.0, 12.0, 16.0, 20.0)


# A second prompt design for step 3: the same application with the user's details written into the
# instructions' first line, so no two prompts share a start, trimmed to about half the length.
SPECIFIC = {"prompt_tokens": 1200, "prompt_min_tokens": 900, "prefix_fraction": 0.0, "prefix_tokens": 0}


def computed_per_request(r) -> float:
    """Prompt tokens the GPU computed per completed request (a cache hit is not computed)."""
    return r.prompt_tokens_computed / r.completed


@cache
def capacity(caching: bool) -> float:
    """Highest completed requests/s over a sweep: what the GPU finishes when offered more than it can."""
    sweep = rate_sweep(lab_config(PRESET, prefix_caching=caching, num_requests=400), list(RATES))
    return max(p.throughput_per_s for p in sweep.points)


def build() -> Lesson:
    on, off = lab(PRESET), lab(PRESET, prefix_caching=False)
    ratio = on.ttft_s.p50 / off.ttft_s.p50
    w = lab_config(PRESET).workload
    cap_on, cap_off = capacity(True), capacity(False)

    q1 = Prediction(
        key="e1-ttft",
        question=(f"A retrieval app: {w.prefix_fraction:.0%} of requests open with the same {w.prefix_tokens:,}-token "
                  f"instructions; prompts are about {w.prompt_tokens:,} tokens; {w.rate_per_s:g} requests/s on one H100. "
                  "Turn prefix caching on. Median time to first token becomes..."),
        choices=(
            Choice("x0.9", "This assumes the prefix is a small part of the work; it is most of each prompt."),
            Choice("about x0.5", "Closer, but a hit skips the whole shared part, not half of it."),
            Choice("about x0.3", f"A hit computes only the suffix, a few hundred tokens instead of {w.prompt_tokens:,}; "
                                 "the front end and the per-step host time stay."),
        ),
        # The engine's front end (25 ms) and host time per step stay with or without a hit, so the
        # median lands near x0.35: the bucket edge sits at 0.4.
        **keyed(ratio, [(0.4, "about x0.3"), (0.7, "about x0.5")], "x0.9"),
        reveal=(f"**{secs(off.ttft_s.p50)} to {secs(on.ttft_s.p50)}** (x{ratio:.2f}); {pct(on.prefix_hit_rate)} of prompt "
                "tokens were found in the cache."),
        gives_away=(f"{secs(on.ttft_s.p50)}** (x{ratio:.2f})",),
    )
    s1 = """
Keys and values of a token depend only on the tokens before it. Two prompts that start with the same
tokens therefore have the same cache for that start, and an engine can keep those blocks and reuse them: the
new request computes only its own suffix. Put what is shared (instructions, tools, examples) first and what
varies last, and keep the shared part byte-for-byte identical: one changed token early on ends the match.
"""
    step1 = Step(q1, s1, (
        holds("prefix caching cuts median TTFT at least 2.5x", ratio < 0.4, f"x{ratio:.3f}"),
        holds("more than half the prompt tokens hit the cache", on.prefix_hit_rate > 0.5, f"{on.prefix_hit_rate:.3f}"),
    ), LiveView("lab", ("summary", "distribution"), {"preset": PRESET, "prefix_caching": False}, ("prefix_caching", "prefix_fraction"),
                "The RAG workload with prefix caching off: tick it on."),
        (TryThis("In the serving lab, tick prefix caching off and on and compare TTFT.", {"preset": PRESET},
                 panel="serving_lab"),))

    q2 = Prediction(
        key="e1-capacity",
        question=(f"Offer more and more traffic. Without prefix caching the GPU completes at most {cap_off:.1f} requests/s. "
                  "With it?"),
        choices=(
            Choice("the same", "Caching saves prefill compute, and prefill is what this GPU spends most on."),
            Choice("a little more", "It saves most of every prefill; that is not a small saving here."),
            Choice("much more", "Prefill of the shared part was most of the GPU's work; without it the same GPU serves "
                                "more requests."),
        ),
        **keyed(cap_on / cap_off, [(1.05, "the same"), (1.25, "a little more")], "much more"),
        reveal=f"**{cap_on:.1f} requests/s** at the highest rate swept, {cap_on / cap_off:.2f} times.",
        gives_away=(f"**{cap_on:.1f} requests/s**",),
    )
    s2 = """
Prefix caching is economics as much as latency: the work skipped is GPU time not bought. It also costs pool
space: cached blocks stay until the pool needs them and are evicted least-recently-used first, so a hot prefix
survives and a cold one goes.
"""
    step2 = Step(q2, s2, (
        holds("prefix caching raises the completed rate at least 25%", cap_on > 1.25 * cap_off, f"{cap_off:.2f} -> {cap_on:.2f}"),
    ), LiveView("lab", ("sweep",), {"preset": PRESET}, ("prefix_caching",), "The rate sweep with prefix caching; run it."),
        (TryThis("In the serving lab, run the rate sweep with prefix caching on, then off.", {"preset": PRESET},
                 panel="serving_lab"),))
    step3 = step_design(on)
    return Lesson(
        **course.header("E1"),
        objective="Quantify what prefix caching does to TTFT and to capacity, and design prompts that share prefixes.",
        prerequisites=("C1", "B1"),
        setup="Many applications send the same long instructions with every request. Must the GPU read them anew each time?",
        steps=(step1, step2, step3),
        recap=("A prefix hit computes only the suffix: TTFT falls and capacity rises.",
               "Shared text first, varying text last, byte-for-byte identical: a longer shared prompt can cost less "
               "than a shorter one that shares nothing."),
        not_captured=("The workload's shared prefix is one group; real applications have many, and hit rates depend on "
                      "their popularity and the pool's size.",),
        ideas=("prefix-caching", "prompt-design-prefix", "prefix-economics"),
    )


def step_design(shared) -> Step:
    """Seed 004: a prompt built to share its start, even a longer one, can cost less than a shorter prompt
    that never hits the cache."""
    specific = lab(PRESET, **SPECIFIC)
    w, ws = lab_config(PRESET).workload, lab_config(PRESET, **SPECIFIC).workload
    per_shared, per_specific = computed_per_request(shared), computed_per_request(specific)
    ratio = per_shared / per_specific
    q = Prediction(
        key="e1-design",
        question=(f"Two designs of the same app, both with prefix caching on. Design A writes each user's details into "
                  f"the first line of the instructions and trims the prompt to about {ws.prompt_tokens:,} tokens, so no "
                  f"two prompts start alike. Design B keeps {w.prompt_tokens:,}-token prompts whose first "
                  f"{w.prefix_tokens:,} tokens are identical for {w.prefix_fraction:.0%} of requests. Which makes the GPU "
                  "compute fewer prompt tokens per request?"),
        choices=(
            Choice("A, half as long", "Length is not the work here: with a cache, the work is the part no earlier "
                                      "request computed, and A's prompts have no such part."),
            Choice("about the same", "A hit skips the shared start entirely; B's requests compute only their suffix."),
            Choice("B, twice as long", "B's shared start is computed once and then found in the cache; each request "
                                       "computes its suffix, a few hundred tokens."),
        ),
        **keyed(ratio, [(0.9, "B, twice as long"), (1.1, "about the same")], "A, half as long"),
        reveal=(f"**B computes {per_shared:,.0f} prompt tokens a request, A {per_specific:,.0f}** (x{ratio:.2f}); median "
                f"TTFT {secs(shared.ttft_s.p50)} against {secs(specific.ttft_s.p50)}."),
        gives_away=(f"**B computes {per_shared:,.0f}",),
    )
    prose = f"""
Prompt design decides what the cache can save. Design A is the shorter prompt, yet every one of its tokens is
new, so the GPU computes {per_specific:,.0f} tokens a request. Design B sends twice the text, but its
instructions come first and never change: they are computed once and then read from the cache, and the GPU
computes {per_shared:,.0f} tokens a request ({pct(shared.prefix_hit_rate)} of prompt tokens hit). Counted in
GPU time, the longer shared prompt is the cheaper one. Keep anything personal (a name, a date, a retrieved
document) after the shared part.
"""
    claims = (
        holds("the longer shared-prefix design computes at least 25% fewer prompt tokens per request",
              ratio < 0.75, f"{per_shared:.0f} vs {per_specific:.0f}"),
        holds("and its median TTFT is lower", shared.ttft_s.p50 < specific.ttft_s.p50,
              f"{shared.ttft_s.p50:.4f} vs {specific.ttft_s.p50:.4f}"),
    )
    return Step(q, prose, claims,
                LiveView("lab", ("summary",), {"preset": PRESET, **SPECIFIC}, ("prefix_fraction", "prompt_tokens"),
                         "Design A: nothing shared. Raise the shared fraction and watch the prompt tokens computed."),
                (TryThis("In the serving lab, set the shared fraction to 0 and then back to 0.9 with prefix caching on.",
                         {"preset": PRESET}, panel="serving_lab"),))
