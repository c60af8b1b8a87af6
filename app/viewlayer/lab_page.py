"""The serving lab as one page of the static site: the lab's session (`lab_session.LabSession`: its
settings, its runs, its views' data) plus the browser bridge's protocol: settings in, runs in slices,
model patches out.

`LabPage` is what the browser's worker holds for the lab. A run advances in slices of about `SLICE_S`
of CPU time: between slices the worker posts the progress patch and reads its messages (a new setting,
Cancel), so the page shows progress and never waits on Python.
"""

from __future__ import annotations

import base64
import binascii
import json

from kvlab.sim.engine.result import EngineResult
from kvlab.sim.engine.trace import MAX_TRACE_BYTES

from .lab_bench import CHOOSER as BENCH_CHOOSER
from .lab_controls import RADIO_FIELDS, lab_widget_value, view_lab_controls
from .lab_runs import finished_run
from .lab_session import LAB_VIEWS, LabSession, read_link
from .lab_settings import BOOLEAN_FIELDS, lab_defaults
from .lab_url import check_value

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
TRACE_FIRST_ROWS = 20_000


def model_name(view: str, part: str) -> str:
    return part if part.startswith("w.") else f"{view}.{part}"


def lab_page_models(run: LabSession, values: dict, views=None, controls: bool = True) -> dict[str, dict]:
    """{Bokeh model name: {property: value}} of the session's views (all, or those named) and its sidebar."""
    from .pages import bokeh_props

    out = {}
    for view, _ in LAB_VIEWS:
        if views is None or view in views:
            for part, props in run.view_data(view, values).items():
                out[model_name(view, part)] = bokeh_props(props)
    if controls:
        out.update(view_lab_controls(values))
    return out


class LabPage(LabSession):
    """The serving lab in the browser. Every bridge call returns {"patch", "query", "busy"}: `busy`
    says more slices are due (the worker then calls `tick()` until it is False)."""

    page = "serving_lab"

    def __init__(self, search: str = "", opening: str | None = None):
        values, link_issues = read_link(search)
        super().__init__(values, link_issues=link_issues, first_events=FIRST_SLICE_EVENTS,
                         trace_first_rows=TRACE_FIRST_ROWS, slice_events=FIRST_SLICE_EVENTS)
        self._known_opening = opening  # opening_json()'s text from the site, or None
        self.opening_source = ""  # how the default page's opening run came: "file" or "run"
        self.input_notice = ""
        self._shown: dict[str, dict] = {}
        self.views = None  # every view; a lesson's lab live view shows a few (lesson_page.lab_session)
        self._opening: str | None = None  # "due", then "running": the default page's opening run (start)

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
        return {"patch": patch, "query": self.query, "busy": self.busy}

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
        self.publish_link_issues()
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
        wanted = self.comparison_config()
        if main.config != self.config().to_dict():
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
            self.advance(events)
        while events is None and self.busy:
            self.advance(OPENING_SLICE_EVENTS)
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
        self.timed_slice(slice_s)
        changed = before != (self.result, self.compare, self.sweep, self.trace_rows, self.trace_note)
        return self._out(None if changed or not self.busy else STATUS_VIEWS)

    def finish(self) -> dict:
        """Run to the end in one call (CPython's tests; the worker slices with tick())."""
        self._open()
        while self.busy:
            self.advance(self._events_per_slice)
        return self._out()

    def change(self, widget: str, value) -> dict:
        """One widget moved. A run setting starts a new run (the previous one is cancelled); a
        display choice redraws; a refused value is set back with a notice naming the field."""
        self._open()
        if not widget.startswith("w.lab-"):  # the page's other widgets (the copy box) are not settings
            return self._out()
        self.input_notice = ""
        if widget == BENCH_CHOOSER:  # which run of a result file to replay: a choice of the file, not a setting
            self._shown.setdefault(widget, {})["value"] = value  # the browser shows it already: no echo
            self.choose_bench_run(str(value))
            return self._out()
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
        self.update({name: new})
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
