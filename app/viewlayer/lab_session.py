"""The serving lab's one session (standard library only): it owns the lab's state, runs the engine in
slices and gives each view's data. The browser's `lab_page.LabPage` is this session plus the bridge's
protocol (patches, the opening run); the Panel server's `engine_views.store.LabStore` wraps one, as the
panels' `Store` wraps `viewlayer.state.compute()`: its param settings forward every change here, and it
mirrors the run fields below into params its views watch.

State: `values` (every setting, `lab_settings.lab_defaults()`'s keys), `trace_rows` (an imported trace:
data, not a setting), and the run fields (`RUN_STATE`). Each call that changes run fields records them (and a
setting the session changes itself: arrivals that follow an imported trace); `pop_changes()` hands
them to a host that publishes changes (the server's param update). Which slice
sizes a host uses is its own (`first_events`, `trace_first_rows`, `slice_events`): slicing changes no
result.
"""

from __future__ import annotations

import json
import time

from kvlab.sim.catalog import model_for_repo
from kvlab.sim.engine.bench import workload
from kvlab.sim.engine.compare import ResultFileProblem, read_runs
from kvlab.sim.engine.trace import TraceReader

from .lab_bench import run_labels, sending, view_lab_bench
from .lab_comparison import view_lab_comparison
from .lab_distribution import view_lab_distribution
from .lab_log import view_lab_log
from .lab_runs import LabRuns, finished_run
from .lab_settings import NO_COMPARISON, RUN_FIELDS, lab_config, lab_defaults, merge_values
from .lab_status import view_lab_notices, view_lab_status, view_lab_summary
from .lab_sweep import sweep_rates, view_lab_sweep
from .lab_timeline import view_lab_timeline
from .lab_url import encode_lab_query, parse_lab_query
from .ttft_by_prompt import view_ttft_by_prompt

# (view name, function of (session, settings) -> {part: props}), in page order. A part named `w.*` is a
# widget found by its own name; every other part is the model `<view>.<part>`.
LAB_VIEWS = (
    ("lab_status", view_lab_status),
    ("lab_notices", view_lab_notices),
    ("lab_summary", view_lab_summary),
    ("lab_distribution", view_lab_distribution),
    ("lab_ttft_by_prompt", lambda run, values: view_ttft_by_prompt(run.result)),
    ("lab_comparison", view_lab_comparison),
    ("lab_bench", view_lab_bench),
    ("lab_timeline", view_lab_timeline),
    ("lab_sweep", view_lab_sweep),
    ("lab_log", view_lab_log),
)
VIEW_FUNCTIONS = dict(LAB_VIEWS)
# What a session shows of its runs, and its value before any: `lab_runs.LabRuns` changes the first
# eleven, reading a trace the last.
RUN_STATE = {"result": None, "compare": None, "issues": [], "running": False, "progress": 0.0, "done_requests": 0,
             "total_requests": 0, "status": "", "sweep": None, "sweep_running": False, "sweep_progress": 0.0,
             "trace_note": ""}
SLICE_EVENTS = (500, 200_000)  # bounds of the slice size the timing adapts


def read_link(search: str) -> tuple[dict, list[dict]]:
    """(the settings a link holds, an issue per value it carried that was refused)."""
    values, notices = parse_lab_query(search)
    return values, [{"field": "link", "message": n} for n in notices]


class LabSession:
    def __init__(self, values: dict | None = None, *, link_issues: list[dict] | None = None, first_events: int = 1_250,
                 trace_first_rows: int = 20_000, slice_events: int = 1_250, known_runs: dict | None = None):
        self.values = dict(values) if values is not None else lab_defaults()
        # (config, comparison config) -> (result, comparison): finished runs to show instead of running
        # them again (the site build renders each lesson's live views once per theme).
        self.known_runs = known_runs
        self.trace_rows = None
        self.bench = None  # the run of a benchmark result file the trace rows replay (sim.engine.compare.MeasuredRun)
        self.bench_runs: list = []  # every run of that file, in its order (a file may hold several)
        self.link_issues = list(link_issues or [])  # the values a link carried that were ignored, as issues
        for name, value in RUN_STATE.items():
            setattr(self, name, list(value) if isinstance(value, list) else value)
        self.first_events = first_events  # a run's first slice, run at once when it starts
        self.trace_first_rows = trace_first_rows  # a trace's rows read at once when it is chosen
        self._events_per_slice = slice_events
        self._runs = LabRuns()
        self._reader: TraceReader | None = None
        self._trace_name = ""
        self._changed: dict = {}
        self._changed_settings: set[str] = set()  # settings the session changed itself (arrivals by a trace)

    @classmethod
    def from_query(cls, search: str, **sizes) -> LabSession:
        """The session a link opens (nothing runs yet); what the link carried that was refused is in `link_issues`."""
        values, issues = read_link(search)
        return cls(values, link_issues=issues, **sizes)

    @property
    def query(self) -> str:
        """The link that reopens this state (`lab_url`)."""
        return encode_lab_query(self.values)

    # ---- settings -------------------------------------------------------------------------------------
    def update(self, changes: dict) -> bool:
        """Take checked settings (a new preset first, the rest on top: `lab_settings.merge_values`);
        a changed run setting cancels the run in progress and starts again. True if it did."""
        before = [self.values[k] for k in RUN_FIELDS]
        self.values = merge_values(self.values, changes)
        if before == [self.values[k] for k in RUN_FIELDS]:
            return False
        self.run()
        return True

    def config(self, policy: str | None = None):
        """The EngineConfig of this state (with `policy` instead of the chosen one if given); a
        replayed benchmark run keeps its client's concurrency cap."""
        cfg = lab_config(self.values, policy, self.trace_rows)
        if self.bench is not None and self.values["arrival"] == "trace":
            cfg = cfg.with_(max_concurrency=self.bench.spec.max_concurrency)
        return cfg

    def comparison_config(self):
        """The comparison policy's EngineConfig, or None when none is asked for (or it is the policy itself)."""
        v = self.values
        return self.config(v["compare_policy"]) if v["compare_policy"] not in (NO_COMPARISON, v["policy"]) else None

    # ---- runs -----------------------------------------------------------------------------------------
    def run(self, first_events: int | None = None) -> None:
        """Cancel what is running and start the chosen policy's run, then the comparison's; the first
        `first_events` events run now. The main result is published as soon as it is done; the
        comparison follows a slice later."""
        main, other = self.config(), self.comparison_config()
        known = self.known_runs.get((main, other)) if self.known_runs is not None else None
        if known is not None:
            self._runs = LabRuns()  # nothing of an earlier run is left to publish
            self._apply(finished_run(*known))
            return
        self._apply(self._runs.start(main, other))
        self._apply(self._runs.advance(self.first_events if first_events is None else first_events))

    def publish_link_issues(self) -> None:
        """Put the link's refused values before the run's own issues (once the opening run has started)."""
        if self.link_issues:
            self._apply({"issues": self.link_issues + list(self.issues)})

    def cancel(self) -> None:
        """Stop every run; what they had done is published (marked cancelled)."""
        self._runs.cancel()
        self.advance(0)

    def sweep_rates(self) -> list[float]:
        return sweep_rates(self.values)

    def run_sweep(self) -> None:
        self._apply(self._runs.start_sweep(self.config(), self.sweep_rates(), self.values["seed"]))

    @property
    def busy(self) -> bool:
        """A run, its comparison, a sweep or a trace has slices to go."""
        return self._runs.busy or self._reader is not None

    def advance(self, events: int) -> None:
        """One slice of whatever is running: the trace being read, else the runs."""
        if self._reader is not None:
            self._advance_trace(max(events // 4, 500))
        else:
            self._apply(self._runs.advance(events))

    def timed_slice(self, target_s: float) -> None:
        """One slice, sized by the last ones' timing to take about `target_s`."""
        t0 = time.perf_counter()
        self.advance(self._events_per_slice)
        spent = time.perf_counter() - t0
        if spent > 0:  # wall time only sizes the slices; no result depends on it
            scale = min(max(target_s / spent, 0.5), 2.0)
            self._events_per_slice = int(min(max(self._events_per_slice * scale, SLICE_EVENTS[0]), SLICE_EVENTS[1]))

    # ---- an imported trace ----------------------------------------------------------------------------
    def load_trace(self, data: bytes, filename: str = "trace") -> None:
        """Parse a CSV / JSON-lines trace and run it; a malformed file is refused with the rows at
        fault (or the limit it passes) named, and the previous settings stay. A big file is read in
        slices, like a run (`advance`)."""
        data = data if data is not None else b""
        self._trace_name = str(filename)[:200]
        if _is_result_file(data):
            self._load_result(data)
            return
        self._reader = TraceReader(data)
        self._apply({"trace_note": f"Reading {self._trace_name}\u2026"})
        self._advance_trace(self.trace_first_rows)

    def _load_result(self, data: bytes) -> None:
        """A benchmark client's result file: replay its first run as a trace, and keep what it
        measured for the comparison (view_lab_bench). A bad file is refused naming its keys."""
        try:
            runs = read_runs(data)
        except ResultFileProblem as e:
            self._apply({"trace_note": f"Benchmark result {self._trace_name} refused: " + "; ".join(e.lines[:6])})
            return
        self.bench_runs = runs
        self._replay(0)

    def choose_bench_run(self, label: str) -> None:
        """Replay another run of the loaded result file, chosen by its label (`lab_bench.run_labels`);
        the run being replayed, or a label the file has not, changes nothing."""
        labels = run_labels(self.bench_runs)
        if label in labels and self.bench_runs[labels.index(label)] is not self.bench:
            self._replay(labels.index(label))

    def _replay(self, index: int) -> None:
        runs = self.bench_runs
        run = runs[index]
        self.bench = run
        self.trace_rows = workload(run.spec).trace
        more = f" (run {index + 1} of {len(runs)})" if len(runs) > 1 else ""
        # The file names its model and its client's engine; the GPU, TP and version stay the lab's.
        changes = {"arrival": "trace", "engine": run.bench_tool}
        model = model_for_repo(run.model_id) if run.model_id else None
        if model is not None:
            changes["model"] = model
        named = f" on {model}" if model else ""
        self._apply({"trace_note": f"Benchmark result {self._trace_name}{more}: {len(self.trace_rows):,} requests sent "
                                   f"{sending(run.spec)}{named}; arrivals now follow it."})
        self.values = {**self.values, **changes}
        self._changed_settings.update(changes)
        self.run()

    @property
    def reading_trace(self) -> bool:
        return self._reader is not None

    def _advance_trace(self, rows: int) -> None:
        reader = self._reader
        if not reader.advance(rows):
            self._apply({"trace_note": f"Reading {self._trace_name}: {reader.progress:.0%}\u2026"})
            return
        self._reader = None
        if reader.issues:
            self._apply({"trace_note": "Trace refused: " + "; ".join(i.message for i in reader.issues)})
            return
        rows = reader.rows
        self.trace_rows = rows
        self.bench, self.bench_runs = None, []  # a plain trace replaces a replayed benchmark run
        span = rows[-1].arrival_s - rows[0].arrival_s
        self._apply({"trace_note": f"{len(rows):,} requests from {self._trace_name} over {span:,.1f} s; "
                                   "arrivals now follow the trace."})
        self.values = {**self.values, "arrival": "trace"}
        self._changed_settings.add("arrival")
        self.run()

    # ---- what the views show and what changed -----------------------------------------------------------
    def view_data(self, view: str, values: dict | None = None) -> dict:
        """{part: {property: value}} of lab view `view` (a name in LAB_VIEWS) for this state; `values`:
        the settings with a view's own display choice, if it has one."""
        return VIEW_FUNCTIONS[view](self, self.values if values is None else values)

    def _apply(self, changes: dict) -> None:
        for name, value in changes.items():
            setattr(self, name, value)
        self._changed.update(changes)

    def pop_changes(self) -> tuple[dict, dict]:
        """(the run fields, the settings) the session changed itself since the last call, with their values now."""
        changed, self._changed = self._changed, {}
        settings, self._changed_settings = self._changed_settings, set()
        return {name: getattr(self, name) for name in changed}, {name: self.values[name] for name in settings}


def _is_result_file(data: bytes) -> bool:
    """A benchmark result file rather than a trace: its first JSON object states a run's totals
    (completed, duration), where a trace's rows state one request each."""
    text = data.lstrip()
    if not text.startswith(b"{"):
        return False
    for candidate in (text.split(b"\n", 1)[0], text):  # JSON lines, else one object over several lines
        try:
            obj = json.loads(candidate)
        except ValueError:
            continue
        return isinstance(obj, dict) and ("completed" in obj or "duration" in obj)
    return False
