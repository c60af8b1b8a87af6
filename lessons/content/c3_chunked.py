"""C3. Head-of-line blocking, and chunked prefill as a trade."""

from __future__ import annotations

from functools import cache

from kvlab.app.viewlayer.step_timeline import TimelinePanel, step_timeline_html
from kvlab.sim.engine.config import TraceRequest
from kvlab.sim.engine.steps import StepTimeline, step_timeline

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, holds, keyed
from .runs import lab, lab_config, secs

LIGHT = "long-prompts-light"
BUSY = "seed000-chunked"
# The step timeline's scenario, on the long-prompt deployment: forty answers start 50 ms apart (500-token
# prompts, 600 tokens each), and at 2.5 s one 30,000-token prompt arrives among them.
ANSWERS, LONG_PROMPT_TOKENS, LONG_ARRIVAL_S = 40, 30_000, 2.5
TIMELINE_TRACE = (tuple(TraceRequest(0.05 * i, 500, 600) for i in range(ANSWERS))
                  + (TraceRequest(LONG_ARRIVAL_S, LONG_PROMPT_TOKENS, 20),))


@cache
def timeline(policy: str) -> StepTimeline:
    """Every step of the scenario under `policy` (sim.engine.steps)."""
    return step_timeline(lab_config(LIGHT, arrival="trace", trace=TIMELINE_TRACE, policy=policy))


def long_prompt_ttft_s(t: StepTimeline) -> float:
    return t.result.requests["ttft_s"][ANSWERS]


def _panel(title: str, t: StepTimeline) -> TimelinePanel:
    return TimelinePanel(title, t.steps, LONG_ARRIVAL_S, LONG_ARRIVAL_S + long_prompt_ttft_s(t), t.longest_decode_gap())


def chunk_steps(t: StepTimeline) -> list:
    """The steps that computed part of the long prompt (after it arrived, until its first token)."""
    end_s = LONG_ARRIVAL_S + long_prompt_ttft_s(t)
    return [s for s in t.steps if s.prompt_tokens and LONG_ARRIVAL_S <= s.start_s < end_s]


def timeline_figure() -> str:
    whole, chunked = timeline("fcfs"), timeline("chunked")
    (w0, w1), (c0, c1) = whole.longest_decode_gap(), chunked.longest_decode_gap()
    chunks = chunk_steps(chunked)
    caption = (f"{ANSWERS} answers are streaming when a {LONG_PROMPT_TOKENS:,}-token prompt arrives (time 0). Whole, its "
               f"prefill is one step of {secs(chunk_steps(whole)[0].end_s - chunk_steps(whole)[0].start_s)} and every "
               f"answer waits {secs(w1 - w0)} for its next token. Chunked, it runs in {len(chunks)} steps that each carry "
               f"all {ANSWERS} answers too, so the longest wait is {secs(c1 - c0)}, but each of those steps takes "
               f"{secs(min(s.end_s - s.start_s for s in chunks))} to {secs(max(s.end_s - s.start_s for s in chunks))}. "
               f"The long prompt's first token: {secs(long_prompt_ttft_s(whole))} whole, "
               f"{secs(long_prompt_ttft_s(chunked))} chunked.")
    return step_timeline_html([_panel("Whole prefill (one shared queue)", whole),
                               _panel("Chunked prefill (2,048-token steps)", chunked)], caption)


def timeline_claims() -> tuple:
    whole, chunked = timeline("fcfs"), timeline("chunked")
    (w0, w1), (c0, c1) = whole.longest_decode_gap(), chunked.longest_decode_gap()
    chunks = chunk_steps(chunked)
    return (
        holds("whole, the long prompt is one step with no decode in it", len(chunk_steps(whole)) == 1
              and chunk_steps(whole)[0].decode_seqs == 0, repr(chunk_steps(whole))),
        holds("whole, every answer waits over a second: the run's worst ITL", w1 - w0 > 1.0
              and abs((w1 - w0) / whole.result.itl_s.max - 1) < 0.01, f"{w1 - w0:.3f} vs {whole.result.itl_s.max:.3f} s"),
        holds("chunked, every chunk step carries all 40 answers", all(s.decode_seqs == ANSWERS for s in chunks),
              repr([s.decode_seqs for s in chunks])),
        holds("chunked, the longest wait is under a tenth of whole's", (c1 - c0) * 10 < w1 - w0, f"{c1 - c0:.3f} s"),
        holds("chunked, the long prompt's first token comes later", long_prompt_ttft_s(chunked) > long_prompt_ttft_s(whole),
              f"{long_prompt_ttft_s(whole):.3f} vs {long_prompt_ttft_s(chunked):.3f} s"),
    )


def build() -> Lesson:
    whole, chunk = lab(LIGHT), lab(LIGHT, policy="chunked")
    small, big = lab(LIGHT, policy="chunked", max_num_batched_tokens=512), lab(LIGHT, policy="chunked", max_num_batched_tokens=8192)
    busy_whole = lab(BUSY, policy="fcfs")
    busy_chunk = lab(BUSY)
    busy_lanes = lab(BUSY, policy="lanes")
    p99_ratio = chunk.itl_s.p99 / whole.itl_s.p99

    q1 = Prediction(
        key="c3-light",
        question=(f"The long-prompt deployment at light load ({whole.config['workload']['rate_per_s']:g} req/s). One "
                  "shared queue runs each prompt whole, and every running answer waits while it does. Switch to chunked "
                  "prefill: prompts split into 2,048-token pieces that share steps with the running decodes. What happens "
                  "to the 99th-percentile gap between tokens (p99 ITL)?"),
        choices=(
            Choice("much better", "Chunking is sold as the cure for stalls, and it does cure the worst ones. But at light "
                                  "load, stalls are rare enough to sit above the 99th percentile."),
            Choice("about the same", "Something does change: decodes now share many steps with prefill chunks."),
            Choice("much worse", "Most steps used to be pure decode, a few milliseconds each. Now a decode often rides "
                                 "in a step that also computes a 2,048-token chunk, and that step is longer."),
        ),
        **keyed(p99_ratio, [(0.5, "much better"), (2, "about the same")], "much worse"),
        reveal=(f"**p99 ITL goes from {secs(whole.itl_s.p99)} to {secs(chunk.itl_s.p99)}** ({p99_ratio:.0f}x worse), while the "
                f"worst gap falls from {secs(whole.itl_s.max)} to {secs(chunk.itl_s.max)}. p99 TTFT: {secs(whole.ttft_s.p99)} "
                f"whole, {secs(chunk.ttft_s.p99)} chunked."),
        gives_away=(f"{secs(chunk.itl_s.p99)}",),
    )
    s1 = f"""
A long prompt processed whole is **head-of-line blocking**: every running answer waits behind it. Chunked
prefill bounds that wait to one chunk, so the worst stall shrinks from {secs(whole.itl_s.max)} to
{secs(chunk.itl_s.max)}. The price is paid by the typical token: many decode steps now carry a chunk, so the
99th-percentile gap grows, and TTFT does not improve at this load (the first token still needs every chunk).

It is a trade, and the chunk size (`max_num_batched_tokens`) is the dial: 512-token chunks give p99 ITL
{secs(small.itl_s.p99)} and a worst gap of {secs(small.itl_s.max)}; 8,192-token chunks give
{secs(big.itl_s.p99)} and {secs(big.itl_s.max)}.
"""
    step1 = Step(q1, s1, (
        holds("at light load chunking makes p99 ITL at least 5x worse", p99_ratio >= 5, f"x{p99_ratio:.1f}"),
        holds("at light load chunking cuts the worst ITL at least 20x", chunk.itl_s.max * 20 <= whole.itl_s.max,
              f"{whole.itl_s.max:.3f} -> {chunk.itl_s.max:.3f} s"),
        holds("at light load chunking does not improve p99 TTFT", chunk.ttft_s.p99 >= 0.98 * whole.ttft_s.p99,
              f"{whole.ttft_s.p99:.3f} -> {chunk.ttft_s.p99:.3f} s"),
        holds("smaller chunks: lower p99 ITL and lower worst ITL", small.itl_s.p99 < chunk.itl_s.p99 and small.itl_s.max < chunk.itl_s.max,
              f"p99 {small.itl_s.p99:.4f} vs {chunk.itl_s.p99:.4f}; max {small.itl_s.max:.3f} vs {chunk.itl_s.max:.3f}"),
        holds("bigger chunks: a larger worst ITL", big.itl_s.max > chunk.itl_s.max, f"{big.itl_s.max:.3f} vs {chunk.itl_s.max:.3f}"),
        *timeline_claims(),
    ), LiveView("lab", ("summary", "distribution"), {"preset": LIGHT, "policy": "chunked", "compare_policy": "fcfs"},
                ("max_num_batched_tokens", "policy"),
                "Chunked prefill at light load against the shared queue (orange), on the same requests."),
        (TryThis("In the serving lab, set the comparison policy to fcfs, then move max_num_batched_tokens between 512 and 8192.",
                 {"preset": LIGHT, "policy": "chunked"}, panel="serving_lab"),), figure=timeline_figure())

    q2 = Prediction(
        key="c3-busy",
        question=(f"Now the same deployment near saturation ({busy_whole.config['workload']['rate_per_s']:g} req/s). "
                  "Chunking's effect on p99 ITL is..."),
        choices=(
            Choice("worse with chunks", "At this load stalls are frequent enough to set the 99th percentile "
                                              "themselves."),
            Choice("about 10x better", "Many decodes now wait behind whole prompts; bounding each wait to a chunk "
                                       "removes the tail."),
            Choice("unchanged", "The engine is busy with both policies, but in very different ways."),
        ),
        **keyed(busy_whole.itl_s.p99 / busy_chunk.itl_s.p99, [(0.8, "worse with chunks"), (3, "unchanged")],
                      "about 10x better"),
        reveal=(f"**p99 ITL {secs(busy_whole.itl_s.p99)} whole, {secs(busy_chunk.itl_s.p99)} chunked**; p99 TTFT "
                f"{secs(busy_whole.ttft_s.p99)} and {secs(busy_chunk.ttft_s.p99)}."),
        gives_away=(f"{secs(busy_chunk.itl_s.p99)} chunked",),
    )
    s2 = f"""
Near saturation, chunking also helps time to first token. That is a capacity effect: decode tokens ride
inside compute-bound prefill steps almost for free, instead of each decode step paying its own weight read,
so the same GPUs finish more work per second and queues are shorter. Whether chunking helps depends on load:
measure at the load you run.

A third policy gives the answers their own lane: decode steps and prefill steps take turns, and a prefill step
computes at most one chunk. The stall stays bounded (p99 ITL {secs(busy_lanes.itl_s.p99)}, worst gap
{secs(busy_lanes.itl_s.max)}), but the decodes no longer ride inside the prefill steps, so the capacity effect
is lost: p99 TTFT is {secs(busy_lanes.ttft_s.p99)}, against {secs(busy_chunk.ttft_s.p99)} chunked. Lanes protect
the streaming answers; they do not buy throughput. A published account credits lanes with a much lower p99 TTFT;
what the simulator reproduces of that fix is the bounded stall, and lesson C1 shows why its TTFT figure cannot hold
for prompts as long as these.
"""
    step2 = Step(q2, s2, (
        holds("near saturation chunking cuts p99 ITL at least 5x", busy_whole.itl_s.p99 >= 5 * busy_chunk.itl_s.p99,
              f"{busy_whole.itl_s.p99:.3f} -> {busy_chunk.itl_s.p99:.3f} s"),
        holds("near saturation chunking cuts p99 TTFT", busy_chunk.ttft_s.p99 < 0.85 * busy_whole.ttft_s.p99,
              f"{busy_whole.ttft_s.p99:.2f} -> {busy_chunk.ttft_s.p99:.2f} s"),
        holds("near saturation lanes bound the stall as chunking does", busy_lanes.itl_s.max < 0.01 * busy_whole.itl_s.max,
              f"worst ITL {busy_whole.itl_s.max:.2f} -> {busy_lanes.itl_s.max:.3f} s"),
        holds("near saturation lanes lose chunking's capacity: p99 TTFT at least 1.5x chunked's",
              busy_lanes.ttft_s.p99 >= 1.5 * busy_chunk.ttft_s.p99, f"{busy_chunk.ttft_s.p99:.2f} vs {busy_lanes.ttft_s.p99:.2f} s"),
    ), LiveView("lab", ("summary", "distribution"), {"preset": BUSY, "compare_policy": "fcfs"}, ("rate_per_s",),
                "Near saturation: chunked prefill against the shared queue (orange)."),
        (TryThis("In the serving lab, compare policies at 2.0 req/s, then lower the rate to 0.5 and compare again.",
                 {"preset": BUSY}, panel="serving_lab"),))
    return Lesson(
        **course.header("C3"),
        objective="Explain head-of-line blocking, what chunked prefill bounds and what it costs, and why the answer "
                  "depends on load and chunk size.",
        prerequisites=("C1",),
        setup="A 30,000-token prompt arrives while forty answers are streaming. Who waits, and for how long?",
        steps=(step1, step2),
        recap=("Whole-prompt prefill blocks every running decode: rare but long stalls.",
               "Chunking bounds the stall and lengthens typical decode steps: at light load p99 ITL gets worse.",
               "Near saturation chunking wins on both ITL and TTFT, by capacity; chunk size is the dial.",
               "Separate lanes bound the stall too, but give up the capacity chunking gains."),
        not_captured=("The separate-lanes policy in the lab is a model of the fix the long-prompt case study describes; "
                      "its CPU-side parts (tokenizer pool, incremental block tables) are lesson C4's topic.",),
        ideas=("head-of-line", "chunked-prefill-trade", "lanes"),
    )
