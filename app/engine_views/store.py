"""The serving lab on the server: a param store that wraps the lab's one session
(`viewlayer.lab_session.LabSession`, the browser's `LabPage` is the same session), as the panels'
`Store` wraps `viewlayer.state.compute()`.

Settings (`LabSettings`, param, what the widgets edit) -> the session (it holds the state, runs the
engine, gives each view's data) -> the run fields mirrored here as params the views watch, set in one
held update so every view redraws in one message to the browser. A run goes in slices of events, so a
long one shows its progress and a Cancel button works: in a served page the slices run from a periodic
callback on the event loop; in a notebook or a test (`synchronous=True`) they run back to back. Any
change to a run setting cancels the run in progress and starts again; the first slice runs at once, so
a run of the default size (a few thousand events) is finished before the change's reply leaves the
server.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import panel as pn
import param
from kvlab.sim.engine import EngineResult
from kvlab.sim.engine.sweep import Sweep

from ..server import activity as server_activity
from ..viewlayer.lab_session import LabSession
from .settings import URL_FIELDS, LabSettings

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
# The session's slice sizes here: the first slice of a run (FIRST_SLICE_EVENTS), the rows of a trace
# read at once, and the first timed slice (the timing sizes the next ones).
SIZES = {"first_events": FIRST_SLICE_EVENTS, "trace_first_rows": TRACE_FIRST_ROWS, "slice_events": 20_000}


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

    def __init__(self, settings: LabSettings | None = None, synchronous: bool = False,
                 session: LabSession | None = None, **params):
        """`session`: one opened from a link (`from_query`); `settings` then start from its values."""
        if settings is None:
            settings = LabSettings()
            if session is not None:
                settings.set_values(session.values)
        super().__init__(settings=settings, **params)
        self.synchronous = synchronous
        self.session = session or LabSession(settings.values(), **SIZES)
        self._callback = None
        self.settings.param.watch(self._on_settings, list(URL_FIELDS))
        self.run()
        self.session.publish_link_issues()
        self._publish()

    @classmethod
    def from_query(cls, query: str, synchronous: bool = False) -> LabStore:
        """The lab a link opens; the values it carried that were refused are notices above the run."""
        return cls(synchronous=synchronous, session=LabSession.from_query(query, **SIZES))

    def _on_settings(self, *events) -> None:
        """A setting changed: the session takes them all (a changed run setting starts a new run). All:
        a preset set without its event (param's discard_events) is taken with the values on top."""
        self.session.update(self.settings.values())
        self._after()

    # ----- the session's calls ------------------------------------------------------------------------
    def run(self) -> None:
        """Cancel what is running and start the chosen policy's run, then the comparison's."""
        self.session.run()
        self._after()

    def cancel(self) -> None:
        self.session.cancel()
        self._tick()

    def load_trace(self, data: bytes, filename: str = "trace") -> None:
        """Parse an uploaded CSV / JSONL trace and run it (the session's `load_trace`). A big file
        is read in slices from the tick callback, like a run, so other sessions keep answering."""
        self.session.load_trace(data, filename)
        self._after()

    def choose_bench_run(self, label: str) -> None:
        """Replay another run of the loaded result file (the session's `choose_bench_run`)."""
        self.session.choose_bench_run(label)
        self._after()

    def sweep_rates(self) -> list[float]:
        return self.session.sweep_rates()

    def run_sweep(self) -> None:
        self.session.run_sweep()
        self._after()

    def _after(self) -> None:
        self._publish()
        if self.session.busy:
            self._ensure_ticking()

    def _publish(self) -> None:
        """Mirror what the session changed: its run fields into this store's params, and a setting it
        set itself (arrivals following an imported trace) into the settings, in one held update."""
        changes, values = self.session.pop_changes()
        if changes or values:
            with _hold():
                if values:
                    self.settings.param.update(**values)  # the session holds them already: nothing reruns
                self.param.update(**changes)

    # ----- slicing ----------------------------------------------------------------------------
    def _ensure_ticking(self) -> None:
        if self.synchronous:
            while self.session.busy:
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
            if not self.session.busy or time.perf_counter() >= end:
                return

    def _tick(self, target_s: float = SLICE_S) -> None:
        """One slice of whatever is running; sized so each slice takes about `target_s`. Only a
        served slice (`_served_tick`) asks whether its page is closed: a synchronous store (a
        notebook, a test, a lesson's view built for the static site) and a Cancel click (made on an
        open page) always advance."""
        self.session.timed_slice(target_s)
        self._publish()
        if not self.session.busy and self._callback is not None:
            self._callback.stop()
            self._callback = None


async def _loop_idle(until: float) -> None:
    """Sleep PIECE_GAP_S, then on while the event loop has other work ready or a browser's message
    came in the last moments (another session's message still in its steps, some of which wait on
    timers: app/server/activity.py), up to `until`: a slice's pieces run when the loop is otherwise
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
