"""D3. Admission, eviction, preemption."""

from __future__ import annotations

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, holds, keyed
from .runs import lab, secs

PRESET = "preemption-demo"


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
    return Lesson(
        **course.header("D3"),
        objective="Tell the three moves apart, compare watermark and reserve admission, and know why preemptions must "
                  "stay at zero.",
        prerequisites=("D1",),
        setup="The pool is full and answers keep growing. Something has to give.",
        steps=(step1, step2),
        recap=("Admit with room to grow, or preempt later.", "Recompute or swap matters less than the full pool.",
               "Alert on the preemption counter."),
        not_captured=("Swap traffic shares the host link with nothing else here; real hosts also serve networking and "
                      "storage.",),
        ideas=("admission-watermark", "preemption-recompute-swap", "eviction", "preemption-alert"),
    )
