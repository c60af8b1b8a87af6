"""A5. Paging: stop wasting the pool."""

from __future__ import annotations

from functools import cache

from kvlab.app.viewlayer.block_map import block_map_html
from kvlab.app.viewlayer.format import percent
from kvlab.sim.block_map import STRANDED, BlockMap, MapRequest, block_map

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, between, equal, holds, keyed
from .runs import gib, run, tok

SHAPE = dict(prompt_tokens=1024, output_tokens=3072, concurrency=512)
# The block map's scenario, small enough to draw block by block: six requests (arrival step, prompt
# and output tokens) on a pool of 36 blocks of 16 tokens, max_model_len 256 tokens (16 blocks).
MAP_REQUESTS = (MapRequest(0, 48, 80), MapRequest(0, 32, 32), MapRequest(0, 64, 96), MapRequest(4, 48, 96),
                MapRequest(8, 32, 64), MapRequest(12, 64, 48))
MAP_POOL_BLOCKS, MAP_BLOCK_TOKENS, MAP_MAX_LEN_TOKENS = 36, 16, 256


@cache
def maps() -> tuple[BlockMap, ...]:
    """The small scenario under reserve-max, exact-length and paged allocation (sim.block_map)."""
    return tuple(block_map(MAP_REQUESTS, MAP_POOL_BLOCKS, MAP_BLOCK_TOKENS, MAP_MAX_LEN_TOKENS, a)
                 for a in ("reserve_max", "contiguous", "paged"))


def map_figure() -> str:
    reserve, exact, paged = maps()
    lengths = [r.prompt_tokens + r.output_tokens for r in MAP_REQUESTS]
    caption = (f"{len(MAP_REQUESTS)} requests of {min(lengths)} to {max(lengths)} tokens share a pool of "
               f"{MAP_POOL_BLOCKS} blocks of {MAP_BLOCK_TOKENS} tokens, max_model_len {MAP_MAX_LEN_TOKENS}. Reserving "
               f"max_model_len runs {reserve.peak_running} at once and finishes at step {max(reserve.finished_step)}. "
               f"Reserving the exact length runs {exact.peak_running} and finishes at step {max(exact.finished_step)}; "
               f"{percent(exact.share(STRANDED))} of its map is free blocks that would hold the next request, but not in "
               f"one run. Paging runs all {paged.peak_running} and finishes at step {max(paged.finished_step)}.")
    return block_map_html(list(maps()), caption)


def map_claims() -> tuple:
    reserve, exact, paged = maps()
    lengths = [r.prompt_tokens + r.output_tokens for r in MAP_REQUESTS]
    return (
        equal("the block map's requests are 64 to 160 tokens long", (min(lengths), max(lengths)), (64, 160)),
        equal("in the block map, reserving max_model_len runs 2 at once, the exact length 4, paging all 6",
              (reserve.peak_running, exact.peak_running, paged.peak_running), (2, 4, 6)),
        holds("in the block map, paging finishes first and reserve-max last",
              max(paged.finished_step) < max(exact.finished_step) < max(reserve.finished_step),
              f"{[max(m.finished_step) for m in (reserve, exact, paged)]}"),
        holds("in the block map, only the exact-length reservation strands free blocks (external fragmentation)",
              exact.share(STRANDED) > 0 and reserve.share(STRANDED) == paged.share(STRANDED) == 0,
              f"{[m.share(STRANDED) for m in (reserve, exact, paged)]}"),
        equal("in the block map, paging preempts no request", paged.preemptions, 0),
    )


def build() -> Lesson:
    exact = run(**SHAPE)
    paged = run(**SHAPE, allocation="paged")
    reserve = run(**SHAPE, allocation="reserve_max")
    reserve8k = run(**SHAPE, allocation="reserve_max", max_model_len=8192)
    reserved_tokens = round(reserve.kv_bytes_per_sequence / reserve.kv_bytes_per_token)
    # Share of the reserved memory holding tokens, averaged over a request's life (prompt + half the output).
    used_mean = exact.scenario["prompt_tokens"] + exact.scenario["output_tokens"] / 2
    waste_reserve = 1 - used_mean / reserved_tokens
    waste_exact = 1 - used_mean / (exact.kv_bytes_per_sequence / exact.kv_bytes_per_token)
    waste8k = 1 - used_mean / round(reserve8k.kv_bytes_per_sequence / reserve8k.kv_bytes_per_token)

    q1 = Prediction(
        key="a5-paged",
        question=(f"{exact.model_name} on an H100, requests of 1k prompt and 3k generated tokens, plenty of them waiting. "
                  f"If each request reserves its exact final length (4k) when admitted, {exact.max_sequences} run at once. "
                  "With paging (blocks of 16 tokens handed out as tokens are produced), how many?"),
        choices=(
            Choice(f"the same {exact.max_sequences} sequences", "Reserving the exact final length wastes nothing at the end, but a "
                   "request holds its whole reservation from the start, while it has produced only part of it."),
            Choice("about 1.6x as many", "On average a request is halfway through its answer, so it holds about 2.5k of "
                                         "its 4k tokens."),
            Choice("about 4x as many", "That would need requests to hold a quarter of their length on average; they hold "
                                       "the prompt plus half the output."),
        ),
        **keyed(paged.max_sequences / exact.max_sequences, [(1.2, f"the same {exact.max_sequences} sequences"),
                                                                  (2.5, "about 1.6x as many")], "about 4x as many"),
        reveal=f"**{paged.max_sequences}** with paging against {exact.max_sequences}.",
        gives_away=(f"**{paged.max_sequences}**",),
    )
    s1 = f"""
Paged attention cuts the cache into fixed-size **blocks** that can sit anywhere in the pool, with a block
table per sequence mapping its positions to blocks, as an operating system maps pages. A sequence takes a
new block only when it fills the last one, so it holds what it has produced, never more than one partly
filled block. Even against the ideal of reserving the exact final length, {exact.max_sequences} become
{paged.max_sequences}: the exact reservation still holds {waste_exact:.0%} unused space on average.
"""
    step1 = Step(q1, s1, (
        equal("exact-length reservation fits 99", exact.max_sequences, 99),
        equal("paging fits 157", paged.max_sequences, 157),
    ), LiveView("steady", ("kv_formula", "admission_numbers"), {**SHAPE, "allocation": "paged"}, ("allocation",),
                "Switch the allocation and read how much one sequence holds."),
        (TryThis("Set prompt 1,024 and output 3,072 tokens, then switch Allocation between contiguous and paged.",
                 SHAPE),))

    q2 = Prediction(
        key="a5-reserve",
        question=("But an engine does not know the output length when a request arrives. Engines before paging "
                  f"reserved the longest a request could grow (max_model_len; {tok(reserved_tokens)} tokens for this model). "
                  "How many of the same requests run then?"),
        choices=(
            Choice(f"still about {exact.max_sequences}", "That assumes the engine knew each answer's length. It did "
                                                         "not, so it had to plan for the worst."),
            Choice("about 40", "Closer, but the reservation is ten times the request, not two and a half."),
            Choice("fewer than 15", f"Each request reserves {tok(reserved_tokens)} tokens and uses 4k at most: "
                                    "about a tenth of what it holds."),
        ),
        **keyed(reserve.max_sequences, [(15, "fewer than 15"), (70, "about 40")], f"still about {exact.max_sequences}"),
        reveal=(f"**{reserve.max_sequences}.** On average {waste_reserve:.0%} of the reserved memory holds nothing. With "
                f"max_model_len set to 8,192, {reserve8k.max_sequences} fit."),
        gives_away=(f"**{reserve.max_sequences}.**",),
    )
    s2 = f"""
That is where the 60 to 80% waste figures for pre-2023 serving come from. Here it is {waste_reserve:.0%} because
each request reserves the model's whole {tok(reserved_tokens)}-token context; with max_model_len at 8,192 the same
requests leave {waste8k:.0%} of their reservation empty, inside that range. Reserving the maximum is
**internal fragmentation**, and the gaps left between contiguous regions as requests come and go add
**external fragmentation**. Paging bounds the first to one block per sequence and removes the second, so
the pool of {gib(paged.kv_pool_bytes)} holds {paged.max_sequences} requests instead of {reserve.max_sequences}. The
famous "up to 24x throughput" compares vLLM with Hugging Face Transformers; against the best earlier serving
systems (Orca, FasterTransformer) the vLLM paper reports 2 to 4x.
"""
    step2 = Step(q2, s2, (
        equal("reserving max_model_len fits 9", reserve.max_sequences, 9),
        holds("reserving max_model_len 8,192 fits 40 to 55", 40 <= reserve8k.max_sequences <= 55,
              repr(reserve8k.max_sequences)),
        holds("max-length reservation wastes over 80% here", waste_reserve > 0.8, f"{waste_reserve:.3f}"),
        between("reserving 8,192 tokens wastes 60% to 80%", waste8k, 0.6, 0.8),
        *map_claims(),
    ), LiveView("steady", ("kv_formula", "admission_numbers"), {**SHAPE, "allocation": "reserve_max"}, ("allocation", "max_model_len"),
                "Reserving max_model_len: try setting max_model_len lower."),
        (TryThis("Set Allocation to reserve_max, then lower max_model_len (advanced settings) from unset to 8192.",
                 SHAPE),), figure=map_figure())
    return Lesson(
        **course.header("A5"),
        objective="Name internal and external fragmentation, and compute how paging turns them into batch capacity.",
        prerequisites=("A4",),
        setup="A pool of a fixed size. Three ways to hand it out to requests whose answers grow token by token.",
        steps=(step1, step2),
        recap=("Reserving the maximum length wastes most of the pool when outputs are unknown.",
               "Paging hands out blocks as tokens arrive: waste is at most one block per sequence.",
               "Saved memory becomes batch, and batch becomes throughput."),
        not_captured=("The pool figures count the reservation effect alone; external fragmentation appears only in "
                      "the small block map, where contiguous reservations are placed first-fit.",
                      "Paging's own costs (block-table lookups in the attention kernel) are not modelled."),
        ideas=("fragmentation", "paged-attention", "max-len-reservation"),
    )
