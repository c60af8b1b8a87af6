"""E4. Capstone: five cases, one set of five levers; read the signals, name the limit, pick the lever.

Each case is a lab run at its starting state; each lever is the same run with one change. Each case asks
two questions. First, which limit binds: the key is sim's own verdict on the run (sim/engine/diagnosis.py),
kept only while every rule it tried sits 25% or more from its threshold. Then, which lever raises goodput
the most: the simulator scores every pair (25 runs, a few seconds in all) on goodput against the case's
targets, p99 TTFT, and the cost of a million output tokens with every GPU billed for the run
(sim.engine.cost); the key is the lever with the highest goodput, kept only while it leads the runner-up
by 10% or more.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvlab.sim.catalog import gpu
from kvlab.sim.engine import EngineResult
from kvlab.sim.engine.cost import dollars_per_million_output_tokens
from kvlab.sim.engine.diagnosis import LIMITS, POOL_FULL_USAGE
from kvlab.sim.units import GIB

from .. import course
from .e3_cost import PRICE, usd
from .model import Choice, Claim, Lesson, LiveView, Prediction, Step, TryThis, between, holds, keyed, near
from .runs import lab, lab_config, ms, pct, secs, tok

LEVER_CONTROLS = ("kv_dtype", "gpu_memory_gib", "policy", "prefix_caching", "replicas")

# The limits the "which limit binds" questions offer, keyed by sim's verdict (sim/engine/diagnosis.py), in
# the order every card lists them.
LIMIT_CHOICES = {
    "prefill": "Prefill compute: prompts wait behind other prompts' prefill",
    "pool": "The KV cache pool: requests wait for free cache blocks",
    "arrivals": "The load: requests arrive faster than the engine completes them",
    "repeated_prefill": "Repeated prompt work: the same tokens computed over and over",
    "decode_step": "Decode memory reads: each token waits for one pass over weights and cache",
}
LIMIT_MARGIN = 0.25  # every rule sim tried sits this far from its threshold, so a small change cannot flip the key


@dataclass(frozen=True)
class Lever:
    key: str
    label: str  # the choice: the lever and the limit it relieves
    short: str  # its row in the tables
    changes: tuple[tuple[str, object], ...]


@dataclass(frozen=True)
class Case:
    key: str
    name: str
    preset: str
    start: tuple[tuple[str, object], ...]  # changes to the preset: the case as it runs

    def state(self) -> dict:
        """The lab state the case starts from: its preset and changes (live view, try-this)."""
        return {"preset": self.preset, **dict(self.start)}


def _hbm_gib(preset: str) -> float:
    return gpu(lab_config(preset).scenario.gpu).memory_bytes / GIB


def levers(case: Case) -> tuple[Lever, ...]:
    """The five levers, the same on every card (twice the HBM is twice the case's own card)."""
    return (
        Lever("fp8", "FP8 KV cache (each cached token takes half the bytes)", "FP8 KV cache", (("kv_dtype", "fp8"),)),
        Lever("hbm", "Twice the HBM at the same bandwidth (a larger pool)", "twice the HBM",
              (("gpu_memory_gib", 2 * _hbm_gib(case.preset)),)),
        Lever("lanes", "Prefill and decode lanes (decodes never wait behind a prompt)", "lanes", (("policy", "lanes"),)),
        Lever("prefix", "Prefix caching (a shared opening is prefilled once)", "prefix caching", (("prefix_caching", True),)),
        Lever("replica", "A second replica (twice the GPUs share the requests)", "second replica", (("replicas", 2),)),
    )


# Prefix caching is off in every starting state (the engine's default is on), so that it is a lever to pull.
CASES = (
    # At 0.5 requests/s no lever moves goodput by 10% (a replica: x1.08); at 1 request/s the queue behind long
    # prefills is long enough for one lever to lead.
    Case("tail", "the long-prompt tail", "long-prompts-light", (("rate_per_s", 1.0), ("num_requests", 400),
                                                                 ("prefix_caching", False))),
    Case("saturation", "the saturated pool", "seed001-saturation", (("num_requests", 600), ("prefix_caching", False))),
    Case("cliff", "past the cliff", "seed004-cliff", (("rate_per_s", 3.0), ("num_requests", 800), ("prefix_caching", False))),
    Case("rag", "the retrieval chat", "prefix-rag", (("rate_per_s", 8.0), ("prefix_tokens", 6000), ("prompt_tokens", 6500),
                                                     ("prompt_min_tokens", 6100), ("prompt_max_tokens", 12000),
                                                     ("prefix_caching", False))),
    Case("single", "one long-context user", "default", (
        ("model", "llama-3.1-8b"), ("arrival", "closed"), ("clients", 1), ("num_requests", 20), ("prompt_dist", "lognormal"),
        ("prompt_tokens", 60000), ("prompt_min_tokens", 8000), ("prompt_max_tokens", 120000), ("prompt_sigma", 0.6),
        ("output_dist", "lognormal"), ("output_tokens", 1000), ("output_min_tokens", 100), ("output_max_tokens", 4000),
        ("output_sigma", 0.3), ("ttft_target_s", 10.0), ("itl_target_s", 0.012), ("prefix_caching", False))),
)
CASE = {c.key: c for c in CASES}


def as_is(case: Case) -> EngineResult:
    return lab(case.preset, **dict(case.start))


def pulled(case: Case, lever: Lever) -> EngineResult:
    return lab(case.preset, **{**dict(case.start), **dict(lever.changes)})


def cost(r: EngineResult) -> float:
    return dollars_per_million_output_tokens(r, PRICE)


def ranked(case: Case) -> list[tuple[Lever, EngineResult]]:
    """The five levers by the goodput they reach, best first."""
    return sorted(((lv, pulled(case, lv)) for lv in levers(case)), key=lambda pair: -pair[1].goodput_per_s)


def change(case: Case, lever: Lever) -> float:
    """Goodput with the lever over goodput as the case runs: the matrix's cell."""
    return pulled(case, lever).goodput_per_s / as_is(case).goodput_per_s


def multiple(x: float) -> str:
    return f"\u00d7{x:.2f}" if x < 10 else f"\u00d7{x:,.0f}"


def first_up(text: str) -> str:
    return text[:1].upper() + text[1:]


def targets(r: EngineResult) -> str:
    return f"TTFT within {secs(r.ttft_target_s)} and mean ITL within {secs(r.itl_target_s)}"


def by_prompt(r: EngineResult) -> list[dict]:
    from kvlab.app.viewlayer.ttft_by_prompt import ttft_by_prompt_length

    return ttft_by_prompt_length(r.requests)


def card_tail(r: EngineResult) -> str:
    rows = by_prompt(r)
    short, longest = rows[1], rows[-2]
    return (f"Case 1, {CASE['tail'].name}: {r.model_name} over eight H100s, {r.config['workload']['rate_per_s']:.1f} "
            f"requests a second with prompts of a few thousand tokens and a tail past 30k. The pool is "
            f"{pct(r.mean_kv_usage)} used, {r.mean_running:.1f} requests run and {r.mean_waiting:.1f} wait on average. "
            f"TTFT p50 {secs(r.ttft_s.p50)}, p99 {secs(r.ttft_s.p99)}; prompts of {short['label']} tokens wait "
            f"{secs(short['p50_s'])} at p50 and {secs(short['p99_s'])} at p99, those of {longest['label']} "
            f"{secs(longest['p50_s'])} at p50. ITL p99 {ms(r.itl_s.p99)}. {pct(r.goodput_fraction)} of requests meet "
            f"{targets(r)}.")


def card_saturation(r: EngineResult) -> str:
    clients = r.config["workload"]["clients"]
    return (f"Case 2, {CASE['saturation'].name}: {r.model_name} on one H100 under SGLang, which may use "
            f"{r.config['scenario']['mem_fraction_static']:.0%} of the card for weights and cache: a pool of "
            f"{tok(r.kv_pool_tokens)} tokens. {clients} users each send the next request when the last answer ends; "
            f"answers run to thousands of tokens. {r.mean_running:.0f} requests run, {r.mean_waiting:.0f} wait, the pool "
            f"is {pct(r.mean_kv_usage)} used and {tok(r.preemptions)} requests were preempted. TTFT p50 "
            f"{secs(r.ttft_s.p50)}, ITL p50 {ms(r.itl_s.p50)}. {pct(r.goodput_fraction)} of requests meet {targets(r)}.")


def card_cliff(r: EngineResult) -> str:
    return (f"Case 3, {CASE['cliff'].name}: {r.model_name} on one H100, prompts of about 6k tokens and answers of "
            f"about 600. Requests arrive at {r.config['workload']['rate_per_s']:.1f} a second; the engine completes "
            f"{r.throughput_per_s:.2f} a second. The pool is {pct(r.mean_kv_usage)} used, {r.mean_running:.0f} requests "
            f"run and {r.mean_waiting:.0f} wait. TTFT p50 {secs(r.ttft_s.p50)}, ITL p50 {ms(r.itl_s.p50)}. "
            f"{pct(r.goodput_fraction)} of requests meet {targets(r)}.")


def card_rag(r: EngineResult) -> str:
    w = r.config["workload"]
    return (f"Case 4, {CASE['rag'].name}: {r.model_name} on one H100 at {w['rate_per_s']:.1f} requests a second. "
            f"{w['prefix_fraction']:.0%} of prompts open with the same {tok(w['prefix_tokens'])}-token system prompt and "
            f"document template, followed by a short question; answers are about {w['output_tokens']} tokens. The "
            f"engine completes {r.throughput_per_s:.2f} requests a second and computes {tok(r.prompt_tokens_per_s)} "
            f"prompt tokens a second. The pool is {pct(r.mean_kv_usage)} used, {r.mean_running:.0f} requests run and "
            f"{r.mean_waiting:.0f} wait. TTFT p50 {secs(r.ttft_s.p50)}. {pct(r.goodput_fraction)} of requests meet "
            f"{targets(r)}.")


def card_single(r: EngineResult) -> str:
    w = r.config["workload"]
    return (f"Case 5, {CASE['single'].name}: {r.model_name} on one H100 serving a single user who pastes long "
            f"documents (a median of {tok(w['prompt_tokens'])} tokens) and reads answers of about {tok(w['output_tokens'])} "
            f"tokens as they stream. The pool is {pct(r.mean_kv_usage)} used. TTFT p50 {secs(r.ttft_s.p50)}; ITL p50 "
            f"{ms(r.itl_s.p50)}, p99 {ms(r.itl_s.p99)}. {pct(r.goodput_fraction)} of requests meet {targets(r)}.")


def table(case: Case) -> str:
    """The reveal's table: the case as it runs and each lever, as the simulator scored them."""
    rows = [("as it runs", as_is(case))] + [(lv.short, pulled(case, lv)) for lv in levers(case)]
    body = "\n".join(f"| {name} | {r.goodput_per_s:.2f} | {secs(r.ttft_s.p99)} | {usd(cost(r))} |" for name, r in rows)
    return f"| lever | goodput, req/s | p99 TTFT | $ per M tokens |\n|---|---|---|---|\n{body}"


def question(case: Case, whys: dict[str, str]) -> Prediction:
    (best, top), (second, runner) = ranked(case)[:2]
    r = as_is(case)
    return Prediction(
        key=f"e4-{case.key}",
        question=f"{first_up(case.name)}: which one lever raises goodput the most?",
        choices=tuple(Choice(lv.label, whys[lv.key]) for lv in levers(case)),
        **keyed(top.goodput_per_s / runner.goodput_per_s, [(1.0, second.label)], best.label),
        reveal=(f"**{first_up(best.short)}: {top.goodput_per_s:.2f} good requests a second**, "
                f"{multiple(top.goodput_per_s / runner.goodput_per_s)} the runner-up ({second.short}, "
                f"{runner.goodput_per_s:.2f}). Goodput counts requests that meet {targets(r)}; cost bills every GPU "
                f"for the whole run at {usd(PRICE)} per GPU-hour, per million output tokens.\n\n{table(case)}"),
        gives_away=(f"**{first_up(best.short)}: {top.goodput_per_s:.2f} good requests a second**",),
    )


def verdict(case: Case) -> dict:
    """sim's verdict on which limit binds the case as it runs."""
    return as_is(case).binding_limit


def signals_list(case: Case) -> str:
    """Every rule sim tried on the case, in order, up to the one that named the limit: the signal, this
    run's figure and the rule's threshold (a list, not a table: it wraps on a phone)."""
    rows = []
    for t in verdict(case)["tried"]:
        name = LIMITS[t["limit"]]
        rule = (f"the rule for \u201c{name}\u201d needs {t['threshold']:.0%} or more" if t["threshold"]
                else f"no rule above held: \u201c{name}\u201d")
        rows.append(f"- {first_up(t['signal'])}: **{t['figure']:.0%}** ({rule})")
    return "\n".join(rows)


def limit_question(case: Case, card: str, whys: dict[str, str]) -> Prediction:
    b = verdict(case)
    label = LIMIT_CHOICES[b["limit"]]  # a verdict outside the five offered fails the lesson's build
    return Prediction(
        key=f"e4-{case.key}-limit",
        question=f"{card} Which limit binds?",
        choices=tuple(Choice(text, whys[key]) for key, text in LIMIT_CHOICES.items()),
        answer=label, figure=float(b["figure"]), edges=(float(b["threshold"]),),
        reveal=(f"**{label.split(':')[0]}.** The simulator reads the run's signals in a fixed order and names the "
                f"first limit whose rule holds: {b['name']}, because {b['reason']}.\n\n{signals_list(case)}"),
        gives_away=(f"**{label.split(':')[0]}.**",),
    )


def clear_verdict(case: Case) -> Claim:
    b = verdict(case)
    return holds(f"{case.name}: sim names {b['name']}, every rule it tried {LIMIT_MARGIN:.0%} or more from its threshold",
                 b["margin"] >= LIMIT_MARGIN, f"{b['limit']}, margin {b['margin']:.3f}")


def limit_step(case: Case, card: str, whys: dict[str, str], prose: str, claims: tuple[Claim, ...]) -> Step:
    return Step(limit_question(case, card, whys), prose, (clear_verdict(case), *claims))


def leads(case: Case) -> Claim:
    (best, top), (second, runner) = ranked(case)[:2]
    return holds(f"{case.name}: {best.short} leads {second.short} by 10% or more in goodput",
                 top.goodput_per_s >= 1.1 * runner.goodput_per_s, f"{top.goodput_per_s:.3f} vs {runner.goodput_per_s:.3f}")


def try_this(case: Case) -> TryThis:
    return TryThis("In the serving lab, pull one lever at a time (KV cache precision, GPU memory, policy, prefix "
                   "caching, replicas) and read goodput and p99 TTFT after each run; set it back before the next.",
                   case.state(), panel="serving_lab")


def view(case: Case, views: tuple[str, ...], caption: str) -> LiveView:
    return LiveView("lab", views, case.state(), LEVER_CONTROLS, caption)


def unchanged(case: Case, *keys: str) -> bool:
    """The named levers leave goodput within 3% of the case as it runs."""
    return all(abs(change(case, lv) - 1) <= 0.03 for lv in levers(case) if lv.key in keys)


def sig(case: Case) -> dict:
    return verdict(case)["signals"]


def step_tail_limit() -> Step:
    case = CASE["tail"]
    r, s = as_is(case), sig(case)
    queued = verdict(case)["figure"]  # sim's deciding figure: queueing's share of the mean TTFT
    whys = {
        "prefill": ("Most prompts meet the first-token target at p50; the misses are the ones that arrive while a "
                    "prompt tens of thousands of tokens long is being computed, and wait for it to finish."),
        "pool": f"The pool is {pct(r.mean_kv_usage)} used: no request waits for memory.",
        "arrivals": (f"The engine completes {r.throughput_per_s:.2f} requests a second and keeps up with what arrives; "
                     "the queue clears between long prompts."),
        "repeated_prefill": "These prompts share no opening: nothing is computed twice.",
        "decode_step": f"ITL p99 is {ms(r.itl_s.p99)}: the per-token target holds; the misses are first tokens.",
    }
    prose = f"""
The binding limit is prefill compute: the longest prompts' own prefill, and every short prompt that arrives while
one runs. Nothing else is short. The pool is {pct(r.mean_kv_usage)} used, the engine keeps up with arrivals, and no
two prompts share an opening. Queueing is {pct(queued)} of the mean TTFT, time spent waiting for the GPU's compute.
"""
    claims = (
        holds("the tail's pool is under 5% used", r.mean_kv_usage < 0.05, f"{r.mean_kv_usage:.3f}"),
        holds("the tail leaves no request waiting to start when its last request arrives",
              s["queued_at_last_arrival"] == 0, f"{s['queued_at_last_arrival']}"),
    )
    return limit_step(case, card_tail(r), whys, prose, claims)


def step_tail() -> Step:
    case = CASE["tail"]
    r, lv = as_is(case), {x.key: x for x in levers(case)}
    two, lanes = pulled(case, lv["replica"]), pulled(case, lv["lanes"])
    short_p50, short_p99 = (by_prompt(r)[1][k] for k in ("p50_s", "p99_s"))
    whys = {
        "fp8": f"The pool is {pct(r.mean_kv_usage)} full: halving the bytes of a token frees room nobody is short of.",
        "hbm": "A larger pool helps only when requests wait for memory; here they wait for the GPU's compute.",
        "lanes": ("Lanes spare the decodes the stalls, but the misses are first tokens, and a prompt still waits its "
                  "turn behind a long prefill, now in chunks that interleave with decode steps."),
        "prefix": "These prompts share no opening, so there is nothing for a cache of prefixes to reuse.",
        "replica": ("Short prompts miss their first-token target by queueing behind a long prompt's prefill; a second "
                    "engine gives them a free one to go to, at twice the bill."),
    }
    prose = f"""
Memory is idle, so the two memory levers score what the case already had. Lanes interleave the long
prefill with decode steps, which cuts the worst ITL ({ms(r.itl_s.p99)} to {ms(lanes.itl_s.p99)} at p99) but
makes first tokens later, not earlier. A second replica halves the queue: p99 TTFT falls from {secs(r.ttft_s.p99)}
to {secs(two.ttft_s.p99)}, while a million output tokens cost {usd(cost(two))} instead of {usd(cost(r))}. At this load
the GPUs idle much of the time, and the bill counts that too. The longest prompts still miss a
{secs(r.ttft_target_s)} target on either deployment: their own prefill takes longer than that.
"""
    claims = (
        leads(case),
        holds("in the tail, prompts of 1k to 4k tokens meet the first-token target at p50 and miss it at p99",
              short_p50 < r.ttft_target_s < short_p99, f"{short_p50:.3f} and {short_p99:.3f}"),
        holds("FP8 KV, twice the HBM and prefix caching leave the tail's goodput within 3%",
              unchanged(case, "fp8", "hbm", "prefix"), ", ".join(f"{change(case, x):.3f}" for x in levers(case))),
        holds("lanes lower the tail's p99 ITL and raise its p99 TTFT",
              lanes.itl_s.p99 < r.itl_s.p99 and lanes.ttft_s.p99 > r.ttft_s.p99,
              f"ITL {r.itl_s.p99:.3f} -> {lanes.itl_s.p99:.3f}, TTFT {r.ttft_s.p99:.2f} -> {lanes.ttft_s.p99:.2f}"),
        near("a second replica doubles the tail's cost per million tokens", cost(two) / cost(r), 2.0, 0.02),
    )
    return Step(question(case, whys), prose, claims,
                view(case, ("summary", "ttft_by_prompt"), "The long-prompt tail as the card describes it; pull one "
                     "lever and read TTFT by prompt length."), (try_this(case),))


def step_saturation_limit() -> Step:
    case = CASE["saturation"]
    r = as_is(case)
    whys = {
        "prefill": ("The prompts are a few hundred tokens; the queue is not waiting for them to be computed but for "
                    "room to keep each new request's cache."),
        "pool": (f"{tok(r.preemptions)} requests were preempted and {r.mean_waiting:.0f} wait on average: requests "
                 "are admitted, outgrow the blocks left, and are sent back to wait for blocks again."),
        "arrivals": "In a closed loop each user sends the next request only when the last answer ends: load cannot outrun the engine.",
        "repeated_prefill": "Each user's prompt is their own: nothing is computed twice.",
        "decode_step": f"ITL p50 is {ms(r.itl_s.p50)}, inside the per-token target; the misses are first tokens held in the queue.",
    }
    prose = f"""
The binding limit is the pool: requests wait for cache blocks, and the engine preempts when answers outgrow it.
{pct(verdict(case)['figure'])} of the requests were preempted at least once. An engine's log
reads the same way when the pool binds: cache usage pinned high with a waiting queue, and a preemption count that
should be zero.
"""
    claims = (holds("the saturated case preempts requests", r.preemptions > 0, f"{r.preemptions}"),)
    return limit_step(case, card_saturation(r), whys, prose, claims)


def step_saturation() -> Step:
    case = CASE["saturation"]
    r, lv = as_is(case), {x.key: x for x in levers(case)}
    big, fp8 = pulled(case, lv["hbm"]), pulled(case, lv["fp8"])
    whys = {
        "fp8": (f"FP8 doubles the pool to {tok(fp8.kv_pool_tokens)} tokens; a card twice the size, with the same share "
                "for the engine, does better than double."),
        "hbm": (f"The pool is what is left of the engine's share after the weights. Double the card and the share "
                f"doubles while the weights stay put, so the pool grows from {tok(r.kv_pool_tokens)} to "
                f"{tok(big.kv_pool_tokens)} tokens."),
        "lanes": "The queue is waiting for cache blocks, not for a turn at the GPU; a new schedule frees no blocks.",
        "prefix": "Each user's prompt is their own; there is no shared opening to keep.",
        "replica": ("A second engine holds a second pool and serves half the users each, but pays twice for it and "
                    "still holds fewer tokens than one card of twice the memory."),
    }
    prose = f"""
Read the pool's size before choosing how to grow it. The engine's share of an 80 GiB card, less the weights, leaves
{tok(r.kv_pool_tokens)} tokens; with twice the memory the same share leaves {tok(big.kv_pool_tokens)}
({multiple(big.kv_pool_tokens / r.kv_pool_tokens)}), more than an FP8 cache's {multiple(fp8.kv_pool_tokens / r.kv_pool_tokens)}.
Running requests rise from {r.mean_running:.0f} to {big.mean_running:.0f}. Each decode step then reads more cache, so
ITL grows ({ms(r.itl_s.p50)} to {ms(big.itl_s.p50)} at p50) but stays well inside its target. A card with twice the
memory at the same bandwidth and price is a counterfactual; the comparison shows which limit binds.
"""
    claims = (
        leads(case),
        near("twice the HBM gives the saturated case about 2.9x the pool", big.kv_pool_tokens / r.kv_pool_tokens, 2.9, 0.03),
        near("FP8 KV doubles the saturated case's pool", fp8.kv_pool_tokens / r.kv_pool_tokens, 2.0, 0.02),
        holds("twice the HBM raises running requests and p50 ITL and stays within the ITL target",
              big.mean_running > r.mean_running and r.itl_s.p50 < big.itl_s.p50 < big.itl_target_s,
              f"running {r.mean_running:.1f} -> {big.mean_running:.1f}, ITL {r.itl_s.p50:.4f} -> {big.itl_s.p50:.4f}"),
    )
    return Step(question(case, whys), prose, claims,
                view(case, ("summary", "timeline"), "The saturated pool as the card describes it; pull one lever and "
                     "watch running and waiting requests."), (try_this(case),))


def overload(case: Case) -> float:
    """Arrivals over completions as sim measured them for its verdict (the realised arrival rate, not the nominal)."""
    return sig(case)["overload"]


def step_cliff_limit() -> Step:
    case = CASE["cliff"]
    r, s = as_is(case), sig(case)
    left = verdict(case)["figure"]  # sim's deciding figure: the share not started at the last arrival
    whys = {
        "prefill": ("Prompts of about 6k tokens take prefill time, but the queue grows because more requests arrive "
                    "than complete, whichever work fills the steps."),
        "pool": (f"The pool is {pct(r.mean_kv_usage)} used and it does set what one engine completes; but arrivals "
                 f"outrun that by {multiple(overload(case))}, and the queue grows however the pool is spent."),
        "arrivals": (f"When the last request arrives, {pct(left)} of the run's requests have not started: the queue "
                     "grows for as long as the load lasts."),
        "repeated_prefill": "The prompts share no opening: nothing is computed twice.",
        "decode_step": f"ITL p50 is {ms(r.itl_s.p50)}; the misses are first tokens of requests that wait.",
    }
    prose = f"""
The binding limit is the load: requests arrive {multiple(overload(case))} as fast as one engine completes
them, and when the last one arrives {tok(s['queued_at_last_arrival'])} requests are still waiting to start. The pool
is {pct(r.mean_kv_usage)} used and is what sets the engine's capacity, but the first question is how far past the
knee the load is.
"""
    claims = (holds("past the cliff, a tenth or more of the requests are still waiting when the last one arrives",
                    left >= 0.1, f"{left:.3f}"),)
    return limit_step(case, card_cliff(r), whys, prose, claims)


def step_cliff() -> Step:
    case = CASE["cliff"]
    r, lv = as_is(case), {x.key: x for x in levers(case)}
    two, fp8, big = pulled(case, lv["replica"]), pulled(case, lv["fp8"]), pulled(case, lv["hbm"])
    rate = r.config["workload"]["rate_per_s"]
    whys = {
        "fp8": (f"The pool binds, and FP8 is the best single-card lever, but it raises the completed rate to "
                f"{fp8.throughput_per_s:.2f} a second: still short of the {rate:.1f} that arrive, so the queue keeps growing."),
        "hbm": (f"A larger pool lets more requests run, but each step then reads more cache at the same bandwidth: "
                f"{big.throughput_per_s:.2f} a second completes, short of the arrivals."),
        "lanes": "The queue is longer than any schedule can drain: requests arrive faster than the engine finishes them.",
        "prefix": "The prompts share no opening; prefix caching has nothing to reuse.",
        "replica": (f"Arrivals exceed what one engine completes by {multiple(overload(case))}; only a lever that "
                    "at least matches that factor takes the deployment back below its knee."),
    }
    prose = f"""
Requests arrive at {rate:.1f} a second and one engine completes {r.throughput_per_s:.2f}. FP8 lifts that to
{fp8.throughput_per_s:.2f} and twice the HBM to {big.throughput_per_s:.2f}: both move the knee, neither far enough, so
the queue still grows and most first tokens come late. Two engines complete {two.throughput_per_s:.2f} a second,
all that arrives, for {usd(cost(two))} per million output tokens against {usd(cost(r))} for one overloaded engine.
Name the limit, then check the lever moves it far enough.
"""
    claims = (
        leads(case),
        holds("past the cliff, FP8 KV and twice the HBM each raise completions but stay short of the arrival rate",
              r.throughput_per_s < big.throughput_per_s < rate and r.throughput_per_s < fp8.throughput_per_s < rate,
              f"{r.throughput_per_s:.2f}, FP8 {fp8.throughput_per_s:.2f}, HBM {big.throughput_per_s:.2f}, rate {rate}"),
        holds("past the cliff, FP8 KV completes more than twice the HBM", fp8.throughput_per_s > big.throughput_per_s,
              f"{fp8.throughput_per_s:.3f} vs {big.throughput_per_s:.3f}"),
        near("past the cliff, two engines complete all that arrives", two.throughput_per_s / rate, 0.95, 0.06),
        holds("past the cliff, two engines cost more per million tokens than one", cost(two) > cost(r),
              f"{cost(r):.3f} -> {cost(two):.3f}"),
    )
    return Step(question(case, whys), prose, claims,
                view(case, ("summary", "timeline"), "Past the cliff as the card describes it; pull one lever and watch "
                     "whether the queue still grows."), (try_this(case),))


def step_rag_limit() -> Step:
    case = CASE["rag"]
    r, s = as_is(case), sig(case)
    repeated = verdict(case)["figure"]  # sim's deciding figure: the repeated share of computed prompt tokens
    whys = {
        "prefill": ("Prompt computation is what the queue waits for, but most of it computes the same opening again: "
                    "name the waste before the resource."),
        "pool": (f"Requests waited with the pool {pct(POOL_FULL_USAGE)} used or more for only {pct(s['waiting_share_pool_full'])} "
                 "of the time they waited; they wait for prompts to be computed, not for blocks."),
        "arrivals": ("Requests do arrive faster than they complete, but most of the work that slows the engine is one "
                     "opening computed again; take that away first, then see whether the load still binds."),
        "repeated_prefill": (f"{pct(repeated)} of the prompt tokens the GPU computes repeat an opening an earlier "
                             "request already had."),
        "decode_step": "The per-token target holds; the misses are first tokens.",
    }
    prose = f"""
The binding limit is prefill compute spent again and again on the same opening: {pct(repeated)} of the prompt
tokens the GPU computes repeat what an earlier request already had. The queue does grow, so the load outruns the
engine too; the simulator's rule for repeated work comes first because removing the waste changes what the engine
can carry.
"""
    claims = (between("in the retrieval chat, 60% to 90% of the prompt tokens computed repeat an earlier opening",
                      repeated, 0.6, 0.9),)
    return limit_step(case, card_rag(r), whys, prose, claims)


def step_rag() -> Step:
    case = CASE["rag"]
    r, lv = as_is(case), {x.key: x for x in levers(case)}
    cached, two = pulled(case, lv["prefix"]), pulled(case, lv["replica"])
    w = r.config["workload"]
    whys = {
        "fp8": "Halving the bytes of the cache leaves the prompt's compute as it was, and the prompts are the work here.",
        "hbm": "A larger pool admits more prompts to prefill, but the GPU's compute, not its memory, is what they wait for.",
        "lanes": "Reordering the steps does not shrink them; the same prompt tokens still need computing.",
        "prefix": (f"Almost every prompt opens with the shared {tok(w['prefix_tokens'])}-token template; kept once, "
                   "only each question is computed, and the prompt tokens the GPU computes fall to about a quarter."),
        "replica": (f"Two engines double the compute and reach {two.throughput_per_s:.2f} completed a second, but each "
                    "still computes every shared opening, and the queue does not clear."),
    }
    prose = f"""
With prefix caching the engine computes {tok(cached.prompt_tokens_computed)} prompt tokens instead of {tok(r.prompt_tokens_computed)}
({pct(cached.prefix_hit_rate)} of the prompt tokens are read from the cache), TTFT p50 falls from
{secs(r.ttft_s.p50)} to {secs(cached.ttft_s.p50)}, and a million output tokens cost {usd(cost(cached))} instead of
{usd(cost(r))}. A second replica doubles the compute and the bill ({usd(cost(two))}) and still leaves a queue.
"""
    claims = (
        leads(case),
        between("prefix caching computes about a quarter of the retrieval chat's prompt tokens",
                cached.prompt_tokens_computed / r.prompt_tokens_computed, 0.2, 0.3),
        holds("FP8 KV and twice the HBM leave the retrieval chat's goodput within 3%", unchanged(case, "fp8", "hbm"),
              ", ".join(f"{change(case, x):.3f}" for x in levers(case))),
        holds("a second replica leaves requests waiting in the retrieval chat", two.mean_waiting > 1,
              f"{two.mean_waiting:.1f}"),
        holds("prefix caching cuts the retrieval chat's cost per million tokens and p50 TTFT",
              cost(cached) < cost(r) and cached.ttft_s.p50 < r.ttft_s.p50, f"{cost(r):.3f} -> {cost(cached):.3f}"),
    )
    return Step(question(case, whys), prose, claims,
                view(case, ("summary", "timeline"), "The retrieval chat as the card describes it; tick prefix caching "
                     "or try another lever."), (try_this(case),))


def step_single_limit() -> Step:
    case = CASE["single"]
    r, s = as_is(case), sig(case)
    whys = {
        "prefill": (f"TTFT p50 is {secs(r.ttft_s.p50)} against a target of {secs(r.ttft_target_s)}: most of these long "
                    "prompts prefill in time; more requests miss the per-token target."),
        "pool": f"The pool is {pct(r.mean_kv_usage)} used: one user's cache fits with room to spare.",
        "arrivals": "One user waits for each answer before sending the next; the load cannot outrun the engine.",
        "repeated_prefill": "Each document is new: nothing is computed twice.",
        "decode_step": ("Nothing queues, so each token waits only for its decode step, and that step reads the weights "
                        "and this user's whole cache."),
    }
    prose = f"""
The binding limit is memory bandwidth within one request. With one user nothing queues, and each token waits for
a decode step that streams the weights and the whole context. {pct(s['missed_itl_share'])} of the requests
miss the per-token target of {ms(r.itl_target_s, 0)}, and {pct(s['missed_ttft_share'])} miss the first-token one.
"""
    claims = (holds("the single user's requests never queue", r.queue_s.max == 0, f"{r.queue_s.max:.3f}"),
              holds("more of the single user's requests miss the per-token target than the first-token one",
                    s["missed_itl"] > s["missed_ttft"], f"{s['missed_itl']} vs {s['missed_ttft']}"))
    return limit_step(case, card_single(r), whys, prose, claims)


def step_single() -> Step:
    case = CASE["single"]
    r, lv = as_is(case), {x.key: x for x in levers(case)}
    fp8, two = pulled(case, lv["fp8"]), pulled(case, lv["replica"])
    whys = {
        "fp8": ("With one user nothing queues; each token waits for one decode step, which reads the weights and this "
                "user's whole cache. Half the cache's bytes make that read shorter."),
        "hbm": "The pool has room to spare for one user; more of it changes nothing the user waits for.",
        "lanes": "With one request at a time there is nothing for a decode to wait behind.",
        "prefix": "Each document is new; a cache of shared openings has nothing to reuse.",
        "replica": "A single user's request runs on one engine; a second engine idles and doubles the bill.",
    }
    prose = f"""
FP8 halves the context's share of that read: ITL p50 falls from {ms(r.itl_s.p50)} to
{ms(fp8.itl_s.p50)}, and the share of requests whose mean ITL meets {secs(r.itl_target_s)} rises from
{pct(r.goodput_fraction)} to {pct(fp8.goodput_fraction)}. TTFT does not move ({secs(r.ttft_s.p50)} at p50 either way):
prefill is compute. The second replica scores as the case already did and costs {usd(cost(two))} per million output
tokens instead of {usd(cost(r))}.
"""
    claims = (
        leads(case),
        holds("FP8 KV lowers the single user's p50 ITL by 5% to 20%", 0.8 <= fp8.itl_s.p50 / r.itl_s.p50 <= 0.95,
              f"{r.itl_s.p50:.4f} -> {fp8.itl_s.p50:.4f}"),
        near("FP8 KV leaves the single user's p50 TTFT as it was", fp8.ttft_s.p50, r.ttft_s.p50, 0.01),
        holds("the single user's pool is under half used", r.mean_kv_usage < 0.5, f"{r.mean_kv_usage:.3f}"),
        holds("twice the HBM, lanes, prefix caching and a replica leave the single user's goodput within 3%",
              unchanged(case, "hbm", "lanes", "prefix", "replica"), ", ".join(f"{change(case, x):.3f}" for x in levers(case))),
        near("a second replica doubles the single user's cost per million tokens", cost(two) / cost(r), 2.0, 0.02),
    )
    return Step(question(case, whys), prose, claims,
                view(case, ("summary", "distribution"), "One long-context user as the card describes it; switch KV "
                     "cache precision and read ITL."), (try_this(case),))


def matrix_rows() -> tuple[str, ...]:
    """The symptom x lever matrix as the simulator scored it: each case's goodput change per lever."""
    return tuple(f"{first_up(c.name)}: " + ", ".join(f"{lv.short} {multiple(change(c, lv))}" for lv in levers(c)) + "."
                 for c in CASES)


def cheaper_when_better() -> Claim:
    """The recap's last line: a lever that keeps the GPU count and raises goodput by 10% lowers the cost of a token."""
    pairs = [(c, lv) for c in CASES for lv in levers(c) if lv.key != "replica" and change(c, lv) > 1.1]
    dearer = [f"{c.key}/{lv.key}" for c, lv in pairs if cost(pulled(c, lv)) >= cost(as_is(c))]
    return holds("every lever but the replica that raises goodput by 10% lowers the cost per million tokens",
                 pairs and not dearer, f"{len(pairs)} such levers; dearer: {dearer or 'none'}")


def build() -> Lesson:
    return Lesson(
        **course.header("E4"),
        objective="Read a deployment's signals, name the limit that binds, and choose the one lever that moves it.",
        prerequisites=("C2", "C3", "D1", "E1", "E3"),
        setup=("Five deployments, each with a problem, and the same five levers on offer for each. Read the card, "
               "decide which limit binds, then pick the one lever that raises goodput the most: requests a second that "
               "meet both the first-token and the per-token targets stated on the card. The simulator runs every lever "
               "on every case and prices each run."),
        steps=(step_tail_limit(), step_tail(), step_saturation_limit(), step_saturation(), step_cliff_limit(),
               step_cliff(), step_rag_limit(), step_rag(), step_single_limit(), step_single()),
        recap=("Find the binding limit first: prefill compute, the pool, the load against one engine's capacity, "
               "repeated prompt work, or one request's memory reads. Then check the lever moves it far enough.",
               "Goodput with each lever against the case as it runs (x1.00: no change):", *matrix_rows(),
               "Only the replica adds GPUs; every other lever keeps the bill per GPU-hour and, when it raises "
               "goodput, lowers the cost of a token."),
        not_captured=("Each case is one simulated deployment with one lever pulled at a time; real systems mix these "
                      "problems and combine levers.",
                      "The simulator names one limit by trying fixed rules in order over the whole run's averages; two "
                      "limits can bind at once (past the cliff the pool sets the capacity the load outruns), and a "
                      "run that changes over time can bind on different limits in turn.",
                      "Twice the HBM at the same bandwidth and price is a counterfactual card.",
                      "Cost bills every GPU for the run's whole duration, idle time included; host, network and "
                      "input-token pricing are not modelled.",
                      "The lanes policy here does not reproduce the published lanes fix for the long-prompt tail."),
        ideas=("choose-lever",),
        extra_claims=(cheaper_when_better(),),
    )
