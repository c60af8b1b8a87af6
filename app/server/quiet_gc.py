"""kvlab serve's full garbage collections, run when no page is waiting on the server.

CPython starts a full collection by itself whenever the objects that outlived two younger
collections have grown by a quarter, and a full collection walks every tracked object in the
process. With a 10^6-row trace being read (each row an object), that was 8 full collections of up
to 0.4-0.8 s each, measured with a gc.callbacks timer: the event loop, which serves every session,
stood still for each, and each stall landed on some other page's slider move (issue 16 asks for
p95 under 50 ms while such a trace loads). So, in the server process only:

- what the server imported before its first page (Panel, Bokeh, Tornado) is frozen: it lives as
  long as the process, and no collection walks it again;
- the automatic full collection is switched off; the young generations keep collecting as
  before (most cyclic garbage dies young and goes there);
- `collect_if_due`, run every CHECK_S by a Panel scheduled task, makes the full collection
  itself: after FULL_QUIET_S without one once no browser message has come for QUIET_FOR_S; at
  once when Python's allocated blocks have grown GROWTH-fold since the last one (garbage in
  reference cycles waits for a full collection: a lab run replaced mid-way was 900,000 blocks of
  it until runs broke their own cycles, `Simulation.release`; this bounds the heap to about
  twice what is alive whatever else makes cycles, as Go's collector does by default); and after
  FULL_MAX_S in any case. Panel still collects a few seconds after a session is destroyed.
"""

from __future__ import annotations

import gc
import sys
import time

from . import activity

CHECK_S = 1.0
FULL_QUIET_S = 10.0
FULL_MAX_S = 60.0
QUIET_FOR_S = 1.0
GROWTH = 2.0
NEVER = 1 << 30  # a generation-2 threshold the count of generation-1 collections never reaches

_last_full_s = time.monotonic()
_blocks_after_full = sys.getallocatedblocks()


def due(since_full_s: float, quiet_s: float, growth: float) -> bool:
    """Is a full collection due, `since_full_s` after the last one, `quiet_s` after the last
    browser message, with the allocated blocks `growth` times what the last one left?"""
    return (since_full_s >= FULL_MAX_S or growth >= GROWTH
            or (since_full_s >= FULL_QUIET_S and quiet_s >= QUIET_FOR_S))


def collect_if_due() -> None:
    growth = sys.getallocatedblocks() / max(_blocks_after_full, 1)
    if due(time.monotonic() - _last_full_s, activity.quiet_s(), growth):
        gc.collect()  # _note_full records it


def _note_full(phase: str, info: dict) -> None:
    global _last_full_s, _blocks_after_full
    if phase == "stop" and info.get("generation") == 2:
        _last_full_s = time.monotonic()
        _blocks_after_full = sys.getallocatedblocks()


def install() -> None:
    """Freeze what is alive now and take the full collections over (once per process)."""
    if _note_full in gc.callbacks:
        return
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, NEVER)
    gc.callbacks.append(_note_full)
