"""D3. Admission, eviction, preemption."""

from __future__ import annotations

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, holds, keyed
from .runs import lab, lab_config, pct, secs

PRESET = "preemption-demo"
# Step 3: many shared prefixes on a pool too small for them all (the preset D4 starts from), with few
# or many distinct ones.
EVICTION = "prefix-eviction"
FEW, MANY = 50, 400


def build() -> Lesson:
    water, reserve = lab(PRESET), lab(PRESET, admission="reserve")
    swap = lab(PRESET, preemption="swap")
    ratio = water.preemptions / max(reserve.preemptions, 1)
    ttft_ratio = swap.ttft_s.p99 / water.ttft_s.p99

    q1 = Prediction(
        key="d3-admission",
        question=(f"A saturated pool: {water.config['workload']['clients']} clients, answers of about 3,000 tokens. Admission "
                  "policy A admits a request whenever a few blocks are free (a watermark). Policy B also holds back room "
                  "for part of each running request's remaining output. Over the same requests, A preempts..."),
        choices=(
            Choice("about as often as B", "Both admit into the same pool, but A does not look ahead."),
            Choice("several times as often as B", "A admits requests whose answers will not fit later; when they grow, "
                                                  "someone must give its blocks back."),
            Choice("less often than B", "Holding back room can only make admission more careful, not cause preemptions."),
        ),
        **keyed(ratio, [(0.8, "less often than B"), (2, "about as often as B")], "several times as often as B"),
        reveal=(f"**{water.preemptions:,} preemptions against {reserve.preemptions:,}** ({ratio:.1f}x)."),
        gives_away=(f"**{water.preemptions:,} preemptions",),
    )
    s1 = """
An engine has three moves when memory runs short. **Admission** decides who starts: a watermark admits while
free blocks remain, a reserve admits only if running requests' expected growth still fits. **Eviction** drops
cached blocks nobody is using (prefix-cache entries). **Preemption** takes blocks from a running request: it is
either recomputed later from its tokens or swapped to host memory and back. Preemptions appear in vLLM's log
as warnings and in its metrics as a counter; in production that counter should stay at zero.
"""
    step1 = Step(q1, s1, (
        holds("watermark admission preempts at least 3x as often as reserve admission", ratio >= 3,
              f"{water.preemptions} vs {reserve.preemptions}"),
    ), LiveView("lab", ("summary", "timeline"), {"preset": PRESET}, ("admission", "preemption"),
                "The saturated pool with watermark admission: preemptions counted in the tiles."),
        (TryThis("In the serving lab, switch Admission between watermark and reserve and read the preemptions.",
                 {"preset": PRESET}, panel="serving_lab"),))

    q2 = Prediction(
        key="d3-swap",
        question="Keep watermark admission. Preempt by swapping to host memory instead of recomputing. p99 TTFT...",
        choices=(
            Choice("falls a lot", "Swapping saves the recompute, but here the wait is the queue for a full pool."),
            Choice("stays about the same", "At saturation, time to first token is the wait for admission; how evicted "
                                           "requests come back hardly matters."),
            Choice("rises a lot", "Swap traffic uses the PCIe link, not the GPU's compute; it does not add much wait."),
        ),
        **keyed(ttft_ratio, [(0.8, "falls a lot"), (1.25, "stays about the same")], "rises a lot"),
        reveal=f"**{secs(water.ttft_s.p99)} with recompute, {secs(swap.ttft_s.p99)} with swap.**",
        gives_away=(f"{secs(swap.ttft_s.p99)} with swap",),
    )
    s2 = """
How a preempted request comes back is a second-order choice; the first-order fact is that the pool is full.
Recompute costs GPU time (a prefill again); swap costs host-link time and host memory. Either way the fix is
admission that leaves room, or a pool that fits the load.
"""
    step2 = Step(q2, s2, (
        holds("swap and recompute give p99 TTFT within 10% here", abs(ttft_ratio - 1) < 0.1, f"x{ttft_ratio:.3f}"),
        holds("swap mode swaps", swap.swaps > 0, repr(swap.swaps)),
    ), LiveView("lab", ("summary", "log"), {"preset": PRESET, "preemption": "swap"}, ("preemption",),
                "Swap preemption: the engine log shows each preemption."),
        (TryThis("In the serving lab, switch Preemption to swap and read the engine log's warnings.", {"preset": PRESET},
                 panel="serving_lab"),))
    step3 = step_eviction()
    return Lesson(
        **course.header("D3"),
        objective="Tell the three moves apart, compare watermark and reserve admission, and know why preemptions must "
                  "stay at zero.",
        prerequisites=("D1",),
        setup="The pool is full and answers keep growing. Something has to give.",
        steps=(step1, step2, step3),
        recap=("Admit with room to grow, or preempt later.", "Recompute or swap matters less than the full pool.",
               "Alert on the preemption counter.",
               "When the prefixes that recur outgrow the pool, eviction drops each before its next use: the hit rate "
               "collapses."),
        not_captured=("Swap traffic shares the host link with nothing else here; real hosts also serve networking and "
                      "storage.",),
        ideas=("admission-watermark", "preemption-recompute-swap", "eviction", "preemption-alert"),
    )


def step_eviction() -> Step:
    """Seed 003: eviction is cheap until it drops prefixes that come back; then a high-hit workload thrashes."""
    few, many = lab(EVICTION, prefix_groups=FEW), lab(EVICTION, prefix_groups=MANY)
    w = lab_config(EVICTION).workload
    per = {n: r.prompt_tokens_computed / r.completed for n, r in ((FEW, few), (MANY, many))}
    pool = many.kv_pool_tokens

    def working_set(n: int) -> int:
        return n * w.prefix_tokens

    q = Prediction(
        key="d3-evict",
        question=(f"Every request opens with one of {FEW} customers' {w.prefix_tokens:,}-token instructions, each customer "
                  f"as busy as the next; the pool holds {pool:,} tokens, and {pct(few.prefix_hit_rate)} of prompt tokens "
                  f"hit the cache. Now {MANY} customers share the same traffic. The hit rate becomes..."),
        choices=(
            Choice("about the same", "Each customer now comes back eight times less often, and the pool cannot wait "
                                     "that long for all of them."),
            Choice("about half", "The pool still holds some of the starts, but far fewer than half of them."),
            Choice("under a quarter", f"The {MANY} starts need {working_set(MANY):,} tokens, several pools' worth: "
                                      "least-recently-used eviction drops most of them before they recur."),
        ),
        **keyed(many.prefix_hit_rate, [(0.25, "under a quarter"), (few.prefix_hit_rate * 0.8, "about half")], "about the same"),
        reveal=(f"**{pct(many.prefix_hit_rate)}**: the GPU computes {per[MANY]:,.0f} prompt tokens a request instead of "
                f"{per[FEW]:,.0f}, and median TTFT goes from {secs(few.ttft_s.p50)} to {secs(many.ttft_s.p50)}."),
        gives_away=(f"**{pct(many.prefix_hit_rate)}**",),
    )
    prose = f"""
Eviction is the cheap move only while what it drops is not needed again. {FEW} starts of
{w.prefix_tokens:,} tokens are {working_set(FEW):,} tokens, which the pool of {pool:,} holds beside the running
requests. {MANY} are {working_set(MANY):,} tokens: the pool must evict cached blocks under pressure, and
least-recently-used eviction knows only when a start was last used, not how soon it will be back. Each start is
dropped before it recurs, so a workload that hit {pct(few.prefix_hit_rate)} of the time now hits
{pct(many.prefix_hit_rate)} and recomputes its instructions again and again: it thrashes. The engine drops
{many.prefix_evicted_blocks:,} blocks over the run. A larger pool, fewer distinct starts, or a slower tier that
keeps what HBM drops (lesson D4) turns it back into a hit workload.
"""
    claims = (
        holds(f"{MANY} prefixes hit less than half as often as {FEW}", many.prefix_hit_rate < few.prefix_hit_rate / 2,
              f"{few.prefix_hit_rate:.3f} -> {many.prefix_hit_rate:.3f}"),
        holds(f"with {MANY} prefixes the GPU computes at least 2.5x the prompt tokens a request",
              per[MANY] > 2.5 * per[FEW], f"{per[FEW]:.0f} -> {per[MANY]:.0f}"),
        holds(f"{FEW} starts fit the pool and {MANY} do not", working_set(FEW) < pool < working_set(MANY),
              f"{working_set(FEW)} < {pool} < {working_set(MANY)}"),
    )
    return Step(q, prose, claims,
                LiveView("lab", ("summary",), {"preset": EVICTION, "prefix_groups": FEW}, ("prefix_groups",),
                         f"{FEW} distinct prefixes on a small pool: raise Distinct prefixes and watch the hit rate."),
                (TryThis(f"In the serving lab, set Distinct prefixes from {FEW} to {MANY} and compare the prefix hit rate.",
                         {"preset": EVICTION, "prefix_groups": FEW}, panel="serving_lab"),))
