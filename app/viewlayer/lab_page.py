"""The serving lab as one page of the static site: settings in, engine runs in slices, model patches out.

`LabPage` is what the browser's worker holds for the lab (the Panel server's `LabStore` does the
same job with param and a periodic callback; both drive the engine jobs through one
`lab_runs.LabRuns`). It keeps the settings as a plain dict and the same fields a `LabStore` has
(`result`, `compare`, `status`, `progress`, ...), so the view functions in `LAB_VIEWS` read either.
A run advances in slices of about `SLICE_S` of CPU time: between slices the worker posts the
progress patch and reads its messages (a new setting, Cancel), so the page shows progress and
never waits on Python.
"""

from __future__ import annotations

import base64
import binascii
import json
import time

from kvlab.sim.engine.result import EngineResult
from kvlab.sim.engine.trace import MAX_TRACE_BYTES, TraceReader

from .lab_comparison import view_lab_comparison
from .lab_controls import RADIO_FIELDS, lab_widget_value, view_lab_controls
from .lab_distribution import view_lab_distribution
from .lab_log import view_lab_log
from .lab_runs import LabRuns, finished_run
from .lab_settings import (
    BOOLEAN_FIELDS,
    NO_COMPARISON,
    RUN_FIELDS,
    check_value,
    encode_lab_query,
    lab_config,
    lab_defaults,
    parse_lab_query,
    preset_values,
)
from .lab_status import view_lab_notices, view_lab_status, view_lab_summary
from .lab_sweep import sweep_rates, view_lab_sweep
from .lab_timeline import view_lab_timeline
from .ttft_by_prompt import view_ttft_by_prompt

# (view name, function of (run, settings) -> {part: props}), in page order. A part named `w.*` is a
# widget found by its own name; every other part is the model `<view>.<part>`.
LAB_VIEWS = (
    ("lab_status", view_lab_status),
    ("lab_notices", view_lab_notices),
    ("lab_summary", view_lab_summary),
    ("lab_distribution", view_lab_distribution),
    ("lab_ttft_by_prompt", lambda run, values: view_ttft_by_prompt(run.result)),
    ("lab_comparison", view_lab_comparison),
    ("lab_timeline", view_lab_timeline),
    ("lab_sweep", view_lab_sweep),
    ("lab_log", view_lab_log),
)
STATUS_VIEWS = ("lab_status", "lab_notices")  # what changes while a run is in progress
SLICE_S = 0.05  # CPU time of one slice: the progress bar moves about 20 times a second
# The first slice of a run, before any slice has been timed: about 50 ms in Pyodide (which runs the
# engine at roughly 25,000 events a second in Chromium here), so even a default 600-request run
# (2,500 events) shows its progress. (The server's LabStore runs 40,000 at once, to finish a
# default run before its reply leaves; slicing changes no result.)
FIRST_SLICE_EVENTS = 1_250
# The opening run (the link's state) is run at once, as the server does: until it is drawn, the page
# shows the pre-rendered default run, and a first patch without a result would blank every chart.
OPENING_SLICE_EVENTS = 40_000
# The default page's opening run is not run before the page answers: the page was built showing it.
# The site ships that run's results (opening_json, written by the build); the worker passes them
# in, and start() takes them when they are this state's run. Without them, the worker runs it as
# soon as Python is up (start says busy), in ticks of FIRST_SLICE_EVENTS that send nothing; a
# change that comes first finishes it at once.
OPENING_FORMAT = 1
SLICE_EVENTS = (500, 200_000)  # bounds of the slice size the timing adapts
TRACE_FIRST_ROWS = 20_000


def model_name(view: str, part: str) -> str:
    return part if part.startswith("w.") else f"{view}.{part}"


def lab_page_models(run, values: dict, views=None, controls: bool = True) -> dict[str, dict]:
    """{Bokeh model name: {property: value}} of the lab's views (all, or those named) and its sidebar."""
    from .pages import bokeh_props

    out = {}
    for view, fn in LAB_VIEWS:
        if views is None or view in views:
            for part, props in fn(run, values).items():
                out[model_name(view, part)] = bokeh_props(props)
    if controls:
        out.update(view_lab_controls(values))
    return out


class LabPage:
    """The serving lab in the browser. Every method returns {"patch", "query", "busy"}: `busy` says
    more slices are due (the worker then calls `tick()` until it is False)."""

    page = "serving_lab"

    def __init__(self, search: str = "", opening: str | None = None):
        self.values, notices = parse_lab_query(search)
        self._known_opening = opening  # opening_json()'s text from the site, or None
        self.opening_source = ""  # how the default page's opening run came: "file" or "run"
        self.link_issues = [{"field": "link", "message": n} for n in notices]
        self.result = self.compare = None
        self.issues: list[dict] = []
        self.trace_note = ""
        self.trace_rows = None
        self.status = ""
        self.running = False
        self.progress = 0.0
        self.done_requests = self.total_requests = 0
        self.sweep = None
        self.sweep_running = False
        self.sweep_progress = 0.0
        self.input_notice = ""
        self._runs = LabRuns()
        self._reader: TraceReader | None = None
        self._trace_name = ""
        self._events_per_slice = FIRST_SLICE_EVENTS
        self._shown: dict[str, dict] = {}
        self.views = None  # every view; a lesson's lab live view shows a few (lesson_page.lab_session)
        self.query = encode_lab_query(self.values)
        self._opening: str | None = None  # "due", then "running": the default page's opening run (start)

    # ---- the runs (as engine_views.store.LabStore runs them) ---------------------------------------
    def _config(self, policy=None):
        return lab_config(self.values, policy, self.trace_rows)

    def _comparison_config(self):
        """The comparison policy's EngineConfig, or None when none is asked for (or it is the policy itself)."""
        v = self.values
        return self._config(v["compare_policy"]) if v["compare_policy"] not in (NO_COMPARISON, v["policy"]) else None

    def run(self, first_events: int = FIRST_SLICE_EVENTS) -> None:
        self._apply(self._runs.start(self._config(), self._comparison_config()))
        self._apply(self._runs.advance(first_events))

    def _apply(self, changes: dict) -> None:
        for name, value in changes.items():
            setattr(self, name, value)

    def cancel(self) -> None:
        self._runs.cancel()
        self._slice(0)

    def run_sweep(self) -> None:
        self._apply(self._runs.start_sweep(self._config(), sweep_rates(self.values), self.values["seed"]))

    def load_trace(self, data: bytes, filename: str = "trace") -> None:
        self._reader = TraceReader(data)
        self._trace_name = str(filename)[:200]
        self.trace_note = f"Reading {self._trace_name}\u2026"
        self._advance_trace(TRACE_FIRST_ROWS)

    def _advance_trace(self, rows: int) -> None:
        reader = self._reader
        if not reader.advance(rows):
            self.trace_note = f"Reading {self._trace_name}: {reader.progress:.0%}\u2026"
            return
        self._reader = None
        if reader.issues:
            self.trace_note = "Trace refused: " + "; ".join(i.message for i in reader.issues)
            return
        rows = reader.rows
        self.trace_rows = rows
        span = rows[-1].arrival_s - rows[0].arrival_s
        self.trace_note = f"{len(rows):,} requests from {self._trace_name} over {span:,.1f} s; arrivals now follow the trace."
        self.values["arrival"] = "trace"
        self.run()

    @property
    def busy(self) -> bool:
        return self._runs.busy or self._reader is not None

    def _slice(self, events: int) -> None:
        """One slice of whatever is running, in the server store's order."""
        if self._reader is not None:
            self._advance_trace(max(events // 4, 500))
        else:
            self._apply(self._runs.advance(events))

    # ---- what the page shows ------------------------------------------------------------------------
    def models(self) -> dict[str, dict]:
        """Every model's properties for the current state (no diff): what the tests compare."""
        self._open()
        return lab_page_models(self, self.values, self.views)

    def _out(self, views=None) -> dict:
        """The patch: every model (or only `views`, the progress, with no controls) diffed against what is shown."""
        models = lab_page_models(self, self.values, views if views is not None else self.views, controls=views is None)
        patch = {}
        for name, props in models.items():
            shown = self._shown.setdefault(name, {})
            delta = {k: v for k, v in props.items() if k not in shown or shown[k] != v}
            if delta:
                patch[name] = delta
                shown.update(delta)
        self.query = encode_lab_query(self.values)
        return {"patch": patch, "query": self.query, "busy": self.busy}

    def _publish_issues(self) -> None:
        if self.link_issues:
            self.issues = self.link_issues + list(self.issues)

    # ---- the bridge's calls -------------------------------------------------------------------------
    def start(self) -> dict:
        """The first patch: the link's state, its run started (a default-size run finishes in this call)."""
        self._shown = {}
        if self.values == lab_defaults() and not self.link_issues:
            # The page was built in exactly this state (the default run, its comparison included) and
            # shows these models already: nothing is sent, so the bridge redraws no chart (the site
            # test reads the opening page back and compares it with this state), and the run itself
            # follows in ticks (_open), unless the site's copy of its results is this state's run.
            known = self._read_opening(self._known_opening)
            self._known_opening = None
            if known is not None:
                self._apply(finished_run(*known))
                self._show_as_built()
                self.opening_source = "file"
                return {"patch": {}, "query": self.query, "busy": False}
            self._opening = "due"
            self.opening_source = "run"
            return {"patch": {}, "query": self.query, "busy": True}
        self.run(OPENING_SLICE_EVENTS)
        self._publish_issues()
        return self._out()

    def _read_opening(self, text: str | None):
        """(result, comparison) from opening_json()'s text when they are the runs of this page's
        configurations, else None (no text, another format, another state, anything malformed)."""
        if not text:
            return None
        try:
            data = json.loads(text)
            if data.get("format") != OPENING_FORMAT:
                return None
            main = EngineResult.from_dict(data["result"])
            compare = EngineResult.from_dict(data["compare"]) if data["compare"] is not None else None
        except (ValueError, TypeError, KeyError, AttributeError):
            return None
        wanted = self._comparison_config()
        if main.config != self._config().to_dict():
            return None
        if (compare.config if compare else None) != (wanted.to_dict() if wanted else None):
            return None
        return main, compare

    def _show_as_built(self) -> None:
        """What the page shows is this state's every model: it was built showing the opening run."""
        self._shown = {name: dict(props) for name, props in lab_page_models(self, self.values).items()}

    def _open(self, events: int | None = None) -> bool:
        """The default page's opening run: started if due, then `events` more of it (None: all of
        it). Once it is done, what the page shows is its models; True then."""
        if self._opening is None:
            return True
        if self._opening == "due":
            self._opening = "running"
            self.run(events or OPENING_SLICE_EVENTS)
        elif events is not None:
            self._slice(events)
        while events is None and self.busy:
            self._slice(OPENING_SLICE_EVENTS)
        if self.busy:
            return False
        self._show_as_built()
        self._opening = None
        return True

    def tick(self, slice_s: float = SLICE_S) -> dict:
        """About `slice_s` of work; the progress patch, or every view once a run has finished. The
        default page's opening run goes a slice at a time and sends nothing: the page shows it."""
        if self._opening is not None:
            return {"patch": {}, "query": self.query, "busy": not self._open(FIRST_SLICE_EVENTS)}
        if not self.busy:
            return self._out()
        before = (self.result, self.compare, self.sweep, self.trace_rows, self.trace_note)
        t0 = time.perf_counter()
        self._slice(self._events_per_slice)
        spent = time.perf_counter() - t0
        if spent > 0:  # wall time only sizes the slices; no result depends on it
            scale = min(max(slice_s / spent, 0.5), 2.0)
            self._events_per_slice = int(min(max(self._events_per_slice * scale, SLICE_EVENTS[0]), SLICE_EVENTS[1]))
        changed = before != (self.result, self.compare, self.sweep, self.trace_rows, self.trace_note)
        return self._out(None if changed or not self.busy else STATUS_VIEWS)

    def finish(self) -> dict:
        """Run to the end in one call (CPython's tests; the worker slices with tick())."""
        self._open()
        while self.busy:
            self._slice(self._events_per_slice)
        return self._out()

    def change(self, widget: str, value) -> dict:
        """One widget moved. A run setting starts a new run (the previous one is cancelled); a
        display choice redraws; a refused value is set back with a notice naming the field."""
        self._open()
        if not widget.startswith("w.lab-"):  # the page's other widgets (the copy box) are not settings
            return self._out()
        self.input_notice = ""
        try:
            name, new = lab_widget_value(widget, value)
            new, why = check_value(name, new)
        except (ValueError, TypeError, IndexError) as e:
            name, why = widget, str(e)
        if why:
            self.input_notice = f"Ignored {name}={value!r}: {why}."
            self._shown.pop(widget, None)  # resend the widget's real value
            return self._out()
        prop = "active" if name in RADIO_FIELDS or name in BOOLEAN_FIELDS else "value"
        self._shown.setdefault(widget, {})[prop] = value  # the browser shows it already: no echo
        if name == "preset":
            if new != self.values["preset"]:
                self.values.update(preset_values(new))
                self.values["preset"] = new
                self.run()
            return self._out()
        old = self.values[name]
        self.values[name] = new
        if name in RUN_FIELDS and new != old:
            self.run()
        return self._out()

    def click(self, widget: str) -> dict:
        """A button: Cancel or Run the sweep."""
        self._open()
        if widget == "w.lab-cancel":
            self.cancel()
        elif widget == "w.lab-sweep":
            self.run_sweep()
        return self._out()

    def upload(self, filename: str, content_b64: str) -> dict:
        """A trace chosen in the file box: its base64 text (what Bokeh's FileInput holds)."""
        self._open()
        self.input_notice = ""
        if not isinstance(content_b64, str) or len(content_b64) > MAX_TRACE_BYTES * 4 // 3 + 4:
            # The parser's limit (sim.engine.trace), checked before decoding; the page refuses such a file first.
            self.trace_note = f"Trace refused: the file is larger than {MAX_TRACE_BYTES / 1e6:g} MB ({MAX_TRACE_BYTES:,} bytes)."
            return self._out()
        try:
            data = base64.b64decode(content_b64, validate=True)
        except (binascii.Error, ValueError):
            self.trace_note = "Trace refused: the file could not be read."
            return self._out()
        self.load_trace(data, filename or "trace")
        return self._out()


def opening_json() -> str:
    """The default page's opening run (its policy's run and its comparison), as the site ships it
    for LabPage(opening=...): computed here, in CPython, by the same engine and code."""
    page = LabPage()
    page.start()
    page.finish()
    return json.dumps({"format": OPENING_FORMAT, "result": page.result.to_dict(),
                       "compare": page.compare.to_dict() if page.compare is not None else None},
                      separators=(",", ":"), sort_keys=True)
