"""The serving lab's one place that runs the engine on the server.

Settings -> `sim.engine` jobs -> immutable `EngineResult`s -> views. A run goes in slices of
events, so a long one shows its progress and a Cancel button works: in a served page the slices
run from a periodic callback on the event loop; in a notebook or a test (`synchronous=True`) they
run back to back. Any change to a run setting cancels the run in progress and starts again; the
first slice runs at once, so a run of the default size (a few thousand events) is finished before
the change's reply leaves the server. The jobs themselves (main run, comparison, sweep) are driven
by `viewlayer.lab_runs.LabRuns`, the driver the browser's `LabPage` uses too.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import panel as pn
import param
from kvlab.sim.engine import EngineResult
from kvlab.sim.engine.sweep import Sweep
from kvlab.sim.engine.trace import TraceReader

from ..server import activity as server_activity
from ..viewlayer.lab_runs import LabRuns
from ..viewlayer.lab_sweep import sweep_rates
from .settings import NO_COMPARISON, RUN_FIELDS, LabSettings

TICK_MS = 30  # period of the slice callback
SLICE_S = 0.08  # target CPU time of one slice: the page stays responsive between slices
# A served slice runs in pieces of this much, yielding to the event loop between them, so another
# session's message waits at most one piece, not a whole slice (benchmarks/upload_latency.py: its
# slider's p95 while a 10^6-row trace loaded was 966 ms with whole 80 ms slices).
PIECE_S = 0.01
# Between pieces the slice sleeps this long rather than yielding once: a message goes through
# several steps (read, handle, debounce, write), each needing a turn of the loop; a timer lets them
# all run before the next piece instead of one step per piece.
PIECE_GAP_S = 0.001
FIRST_SLICE_EVENTS = 40_000  # enough for a default run to finish in the first slice
TRACE_FIRST_ROWS = 2_000  # a trace this long is read at once (about 12 ms); longer ones in slices


class LabStore(param.Parameterized):
    settings = param.ClassSelector(class_=LabSettings, constant=True)
    result = param.ClassSelector(class_=EngineResult, allow_None=True, doc="the chosen policy's run")
    compare = param.ClassSelector(class_=EngineResult, allow_None=True, doc="the comparison policy's run")
    issues = param.List(default=[], doc="[{field, message}] of the last run")
    running = param.Boolean(default=False)
    progress = param.Number(default=0.0, bounds=(0, 1))
    done_requests = param.Integer(default=0, doc="requests finished by the run in progress (main, then comparison)")
    total_requests = param.Integer(default=0)
    status = param.String(default="")
    sweep = param.ClassSelector(class_=Sweep, allow_None=True)
    sweep_running = param.Boolean(default=False)
    sweep_progress = param.Number(default=0.0, bounds=(0, 1))
    trace_note = param.String(default="", doc="what the imported trace holds, or why it was refused")

    def __init__(self, settings: LabSettings | None = None, synchronous: bool = False, **params):
        super().__init__(settings=settings or LabSettings(), **params)
        self.synchronous = synchronous
        self._runs = LabRuns()
        self._callback = None
        self._trace_reader: TraceReader | None = None
        self._trace_name = ""
        self._events_per_slice = 20_000
        self.settings.param.watch(lambda *_: self.run(), list(RUN_FIELDS))
        self.run()

    # ----- the main run (and its comparison) ----------------------------------------------
    def run(self) -> None:
        """Cancel what is running and start the chosen policy's run, then the comparison's. The
        main result is published as soon as it is done; the comparison follows a slice later."""
        s = self.settings
        compare = s.config(policy=s.compare_policy) if s.compare_policy not in (NO_COMPARISON, s.policy) else None
        self._apply(self._runs.start(s.config(), compare))
        self._apply(self._runs.advance(FIRST_SLICE_EVENTS))
        if self._runs.running:
            self._ensure_ticking()

    def cancel(self) -> None:
        self._runs.cancel()
        self._tick()

    def _apply(self, changes: dict) -> None:
        """Set the run fields the driver changed; every view redraws in one message to the browser."""
        if changes:
            with _hold():
                self.param.update(**changes)

    # ----- an imported trace ----------------------------------------------------------------------
    def load_trace(self, data: bytes, filename: str = "trace") -> None:
        """Parse an uploaded CSV / JSONL trace and run it; a malformed file is refused with the
        rows at fault (or the limit it passes) named, and the previous settings stay. A big file
        is read in slices from the tick callback, like a run, so other sessions keep answering."""
        self._trace_reader = TraceReader(data if data is not None else b"")
        self._trace_name = str(filename)[:200]
        self.trace_note = f"Reading {self._trace_name}\u2026"
        self._advance_trace(TRACE_FIRST_ROWS)
        if self._trace_reader is not None:
            self._ensure_ticking()

    def _advance_trace(self, rows: int) -> None:
        reader = self._trace_reader
        if reader is None or not reader.advance(rows):
            if reader is not None:
                self.trace_note = f"Reading {self._trace_name}: {reader.progress:.0%}\u2026"
            return
        self._trace_reader = None
        if reader.issues:
            self.trace_note = "Trace refused: " + "; ".join(i.message for i in reader.issues)
            return
        rows = reader.rows
        s = self.settings
        s.trace_rows = rows
        span = rows[-1].arrival_s - rows[0].arrival_s
        self.trace_note = f"{len(rows):,} requests from {self._trace_name} over {span:,.1f} s; arrivals now follow the trace."
        if s.arrival != "trace":
            s.arrival = "trace"  # a run setting: the change starts the run
        else:
            self.run()

    # ----- the rate sweep ---------------------------------------------------------------------
    def sweep_rates(self) -> list[float]:
        return sweep_rates(self.settings.values())

    def run_sweep(self) -> None:
        self._apply(self._runs.start_sweep(self.settings.config(), self.sweep_rates(), self.settings.seed))
        self._ensure_ticking()

    # ----- slicing ----------------------------------------------------------------------------
    def _ensure_ticking(self) -> None:
        if self.synchronous:
            while self._busy():
                self._tick()
            return
        if self._callback is None:
            self._callback = pn.state.add_periodic_callback(self._served_tick, period=TICK_MS)

    async def _served_tick(self) -> None:
        """A served slice: pieces of PIECE_S until SLICE_S has passed, each run once the event loop
        is otherwise idle (other sessions' messages are read and answered first). A slice runs at
        least one piece, so a lab advances however busy the server is."""
        end = time.perf_counter() + SLICE_S
        ctx = getattr(pn.state.curdoc, "session_context", None)  # kept: a destroyed document drops it
        if not pn.state.loaded:
            # Not before the browser has said its document is ready: until then Panel's hold drops
            # model changes, counting on the document being sent whole when the page connects, which
            # may have happened already. A comparison finished in that moment never reached the page
            # (3 of 8 lab loads showed its caption without its bars). The next tick tries again.
            return
        while True:
            await _loop_idle(end)
            if _page_closed(ctx):
                return
            self._tick(PIECE_S)
            if not self._busy() or time.perf_counter() >= end:
                return

    def _tick(self, target_s: float = SLICE_S) -> None:
        """One slice of whatever is running; sized so each slice takes about `target_s`. Only a
        served slice (`_served_tick`) asks whether its page is closed: a synchronous store (a
        notebook, a test, a lesson's view built for the static site) and a Cancel click (made on an
        open page) always advance."""
        t0 = time.perf_counter()
        if self._trace_reader is not None:
            self._advance_trace(max(self._events_per_slice // 4, 500))
        else:
            self._apply(self._runs.advance(self._events_per_slice))
        spent = time.perf_counter() - t0
        if spent > 0:  # wall time only sizes the slices; no result depends on it
            scale = min(max(target_s / spent, 0.5), 2.0)
            self._events_per_slice = int(min(max(self._events_per_slice * scale, 500), 200_000))
        if not self._busy() and self._callback is not None:
            self._callback.stop()
            self._callback = None

    def _busy(self) -> bool:
        return self._runs.busy or self._trace_reader is not None


async def _loop_idle(until: float) -> None:
    """Sleep PIECE_GAP_S, then on while the event loop has other work ready or a browser's message
    came in the last moments (another session's message still in its steps, some of which wait on
    timers: app/server_activity.py), up to `until`: a slice's pieces run when the loop is otherwise
    idle. (`_ready` is asyncio's queue of ready callbacks: private, but there is no public way to ask.)"""
    await asyncio.sleep(PIECE_GAP_S)
    ready = getattr(asyncio.get_running_loop(), "_ready", ())
    while (len(ready) or server_activity.busy()) and time.perf_counter() < until:
        await asyncio.sleep(PIECE_GAP_S)


def _page_closed(ctx) -> bool:
    """True while no open websocket holds the page's session (`ctx`, its Bokeh session context):
    the page was closed (Bokeh destroys the session some seconds later; Tornado may notice the close
    only after the messages queued before it), its session is destroyed, or it has not connected
    yet. Its slices wait: they would cost the other sessions CPU and push patches onto a closed
    websocket (logged as WebSocketClosedError)."""
    if ctx is None:
        return False  # a notebook, a test or Pyodide: no server session
    session = getattr(ctx, "_session", None)  # Bokeh's ServerSession (no public accessor)
    if session is None or session.destroyed:
        return True
    for conn in list(session._subscribed_connections):
        ws = getattr(conn._socket, "ws_connection", None)
        if ws is not None and not ws.is_closing():
            return False
    return True


def _hold():
    """Panel's hold (one message for many model changes) where there is a document to hold."""
    return pn.io.hold() if pn.state.curdoc is not None else contextlib.nullcontext()
