"""The KV pool over time under each allocation rule (lesson A5): rows are the pool's blocks, columns
the engine's steps, one panel per rule on one shared time axis. Standard library only.

A block holding tokens is vermillion (the cache), a block reserved but not yet written (or never
to be) the light vermillion of an empty pool, a free block that the next waiting request cannot use
because no run of free blocks is long enough (external fragmentation) grey, a free block blank.
The data is sim's (sim.block_map); a block's run of steps in one state is drawn as one rectangle.
"""

from __future__ import annotations

from kvlab.sim.block_map import HELD, RESERVED, STRANDED

from . import format as fmt
from .figure import figure, line, panel, rect, svg, text
from .html import key_legend
from .palette import COLORS

WIDTH = 300
LEFT = 30
RIGHT = 296
ROW = 4  # one block's height
TOP = 4
FILLS = {HELD: COLORS["kv_used"], RESERVED: COLORS["kv_free"], STRANDED: COLORS["context_reserve"]}
TITLES = {"reserve_max": "Reserve max_model_len", "contiguous": "Reserve the exact final length",
          "paged": "Paged: a block when the last fills"}


def _tick_steps(span: int) -> int:
    return next(t for t in (10, 25, 50, 100, 200, 500, 1000, 10**9) if span / t <= 4)


def _runs(states: list[str]):
    """(first step, steps, state) for each run of one state along a block's row."""
    start = 0
    for i in range(1, len(states) + 1):
        if i == len(states) or states[i] != states[start]:
            yield start, i - start, states[start]
            start = i


def summary(m) -> str:
    """The panel's numbers in words: its text alternative."""
    return (f"{TITLES[m.allocation]}: {m.pool_blocks} blocks of {m.block_tokens} tokens over {m.steps} steps. "
            f"At most {m.peak_running} of {len(m.requests)} requests run at once; the last finishes at step "
            f"{max(m.finished_step)}. Of the block-steps, {fmt.percent(m.share(HELD))} hold tokens, "
            f"{fmt.percent(m.share(RESERVED))} are reserved but empty and {fmt.percent(m.share(STRANDED))} are free "
            f"but in runs too short for the next request.")


def map_panel(m, span_steps: int) -> str:
    """One rule's map, its x axis `span_steps` long so that every panel shares one time scale."""
    scale = (RIGHT - LEFT) / span_steps
    bottom = TOP + m.pool_blocks * ROW
    parts = []
    for b in range(m.pool_blocks):
        row = [cells[b] for cells in m.cells]
        parts += [rect(LEFT + first * scale, TOP + b * ROW, n * scale, ROW, FILLS[state])
                  for first, n, state in _runs(row) if state in FILLS]
    parts.append(rect(LEFT, TOP, RIGHT - LEFT, bottom - TOP, "none", outline=True))
    tick = _tick_steps(span_steps)
    for t in range(0, span_steps + 1, tick):
        parts += [line(LEFT + t * scale, bottom, LEFT + t * scale, bottom + 3), text(LEFT + t * scale, bottom + 14, str(t), "middle")]
    parts += [text(LEFT - 3, TOP + 8, "1", "end", "small"), text(LEFT - 3, bottom, str(m.pool_blocks), "end", "small"),
              text(RIGHT, bottom + 27, "step", "end", "small"), text(0, bottom + 27, "blocks \u2195", cls="small")]
    head = (f"{TITLES[m.allocation]}: at most {m.peak_running} running, all done at step {max(m.finished_step)}")
    return panel(head, svg(summary(m), WIDTH, bottom + 31, "".join(parts)))


def block_map_html(maps: list, caption: str) -> str:
    """The figure: one panel per BlockMap (sim.block_map) on one time axis, a legend and the caption."""
    span = max(m.steps for m in maps)
    legend = key_legend([(COLORS["kv_used"], "holds tokens"), (COLORS["kv_free"], "reserved, empty"),
                         (COLORS["context_reserve"], "free, but no run long enough for the next request")])
    return figure("block-map", [map_panel(m, span) for m in maps], caption, legend)
