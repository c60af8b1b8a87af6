"""A whole panel page for one state: every view's data under the Bokeh model names the page uses.

Model names are `<view>.<part>` (`hbm_bar.bars`, `notices.pane`) and `w.<setting>` for widgets.
`PanelPage` is what the browser bridge runs in the worker: it holds the settings as a plain dict,
turns one widget change into one evaluation, and returns only the model properties that changed.
The Panel server builds its views from the same `VIEWS` table, so both runtimes show the same
thing (tests/app/test_viewlayer_parity.py checks it property by property).
"""

from __future__ import annotations

from html import escape

from .admission_numbers import view_admission_numbers
from .batch_chart import view_batch_chart
from .controls import CHECKBOX_FIELDS, RADIO_FIELDS, view_controls, widget_value
from .engine_log import view_engine_log
from .fit_curve import view_fit_curve
from .hbm_bar import view_hbm_bar
from .kv_formula import view_kv_formula
from .notices import view_notices
from .phase_numbers import view_phase_numbers
from .query import encode_query, parse_query, sim_check
from .roofline import view_roofline
from .settings import defaults
from .state import FALLBACK_CONTEXT_TOKENS, Computed, ConfigCache, compute
from .step_breakdown import view_step_breakdown


def _notices(c: Computed, s: dict, page: PanelPage | None) -> dict:
    notices = [*page.url_notices, *page.input_notices] if page else ()
    return view_notices(c.result, c.issues, notices, page.link_note if page else "")


# (view name, function of (computed, settings, page) -> {part: props}), in page order.
VIEWS = {
    "admission": (
        ("notices", _notices),
        ("admission_numbers", lambda c, s, p: view_admission_numbers(c.result)),
        ("hbm_bar", lambda c, s, p: view_hbm_bar(c.result)),
        ("kv_formula", lambda c, s, p: view_kv_formula(c.result)),
        ("fit_curve", lambda c, s, p: view_fit_curve(c.result, c.fit)),
        ("engine_log", lambda c, s, p: view_engine_log(c.result)),
    ),
    "phases": (
        ("notices", _notices),
        ("phase_numbers", lambda c, s, p: view_phase_numbers(c.result)),
        ("step_prefill", lambda c, s, p: view_step_breakdown(c.result, "prefill")),
        ("step_decode", lambda c, s, p: view_step_breakdown(c.result, "decode")),
        ("roofline", lambda c, s, p: view_roofline(c.result)),
        ("batch_chart", lambda c, s, p: view_batch_chart(c.result, c.batch)),
        ("engine_log", lambda c, s, p: view_engine_log(c.result)),
    ),
}
# A lesson names a view by what it is; the phases panel's step breakdown there is the decode step's.
VIEW_BY_NAME = {v: fn for page in VIEWS.values() for v, fn in page}
VIEW_ALIASES = {"step_breakdown": "step_decode"}
ACTIVE_FIELDS = (*RADIO_FIELDS, *CHECKBOX_FIELDS)  # widgets whose Bokeh property is `active`, not `value`
CURVES = {"admission": ("fit",), "phases": ("batch",)}
# The views that draw a swept curve. A change answers without them and brings them in its last
# tick(): in the browser the new numbers need not wait for a sweep (the phases panel's batch
# curve, 40 evaluations on every new prompt length, was most of a slider move's Python time).
CURVE_VIEWS = frozenset({"fit_curve", "batch_chart"})
# The views a move is shown in first, with the widgets: what the student watches while moving a
# control (the page's numbers) and what says a value was refused. A change answers with only
# those (its reply lists them as `first`), and the next tick() brings the other views of the same
# evaluation: in the browser the numbers wait for neither the other views' Python (half of a
# phases move's, and most of it while Chromium still runs Pyodide's WebAssembly unoptimised) nor
# their rendering. The browser sets them at once and the rest (the charts and the other panes)
# one frame later, so the frame that shows the new numbers lays out and paints only them (on the
# admission panel that frame took 4.9 ms at the median with every pane set at once and 4.0 ms
# with the numbers alone, 150 moves each in Chromium here; docs/benchmarks/2026-12-01-site.md, session 7).
FIRST_VIEWS = frozenset({"notices", "admission_numbers", "phase_numbers"})


def bokeh_props(props: dict) -> dict:
    """A view part's data as the Bokeh properties to set. An HTML part's `html` becomes the `text`
    of Panel's HTML model, which Panel's JavaScript decodes before setting innerHTML: it is sent
    escaped, exactly as Panel's own HTML pane sends it."""
    out = {}
    for key, value in props.items():
        if key == "html":
            out["text"] = escape(value)
        else:
            out[key] = value
    return out


def page_models(page: str, computed: Computed, settings: dict, panel_page: PanelPage | None = None,
                positions: dict | None = None, skip: frozenset = frozenset()) -> dict[str, dict]:
    """{Bokeh model name: {property: value}} for every view (but those in `skip`) and widget of
    `page` in this state."""
    out = {}
    views = panel_page.views if panel_page is not None else VIEWS[page]
    for view, fn in views:
        if view in skip:
            continue
        for part, props in fn(computed, settings, panel_page).items():
            out[f"{view}.{part}"] = bokeh_props(props)
    out.update(view_controls(settings, computed.context_tokens, positions))
    return out


def _same(a, b) -> bool:
    """Equality that treats NaN as equal to NaN (a log chart's gaps), for skipping unchanged properties."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


class PanelPage:
    """The state of one panel page in the browser: settings in, model patches out."""

    def __init__(self, page: str, search: str = "", views: tuple[str, ...] | None = None, state: dict | None = None):
        """`views` and `state`: a lesson's live view (those views by name, from that state; no link is read)."""
        if page not in VIEWS and views is None:
            raise ValueError(f"no panel page {page!r}; known: {', '.join(VIEWS)}")
        self.page = page
        self.values = defaults()
        if views is None:
            self.views = VIEWS[page]
            self.curves = CURVES[page]
            parsed, self.url_notices = parse_query(search)
        else:
            self.views = tuple((VIEW_ALIASES.get(v, v), VIEW_BY_NAME[VIEW_ALIASES.get(v, v)]) for v in views)
            self.curves = tuple(c for c, v in (("fit", "fit_curve"), ("batch", "batch_chart")) if v in views)
            parsed, self.url_notices = dict(state or {}), []
        self.values.update(parsed)
        self.input_notices: list[str] = []  # a typed value the setting refused
        self.link_note = ""
        self.positions: dict[str, float] = {}
        self._configs = ConfigCache()
        self._computed: Computed | None = None
        self._shown: dict[str, dict] = {}
        self.query = ""
        self.busy = False  # the last change's other views, or its curve views, are still to come (tick)
        self._rest_due = False  # the other views of the last change's evaluation (the next tick)
        self._warm: PanelPage | None = None  # warm_up()'s copy of the page
        self._warm_moves = 0  # and the moves made on it

    def _evaluate(self, curves: bool = True, skip: frozenset = frozenset()) -> dict[str, dict]:
        previous = self._computed.context_tokens if self._computed else FALLBACK_CONTEXT_TOKENS
        self._computed = compute(self.values, self.curves if curves else (), previous, self._configs)
        self.query, note = encode_query(self.values, self._computed.config)
        self.link_note = note or ""
        return self._views(skip if curves else skip | CURVE_VIEWS)

    def _views(self, skip: frozenset) -> dict[str, dict]:
        """Every model but those of the views in `skip`, from the last evaluation."""
        return page_models(self.page, self._computed, self.values, self, self.positions, skip=skip)

    def models(self) -> dict[str, dict]:
        """Every model's properties for the current settings (no diff): what the parity test compares."""
        return self._evaluate()

    def _diff(self, models: dict[str, dict]) -> dict[str, dict]:
        changed = {}
        for name, props in models.items():
            shown = self._shown.setdefault(name, {})
            delta = {k: v for k, v in props.items() if k not in shown or not _same(shown[k], v)}
            if delta:
                changed[name] = delta
                shown.update(delta)
        return changed

    @staticmethod
    def _first(patch: dict) -> list[str]:
        return [name for name in patch if name.startswith("w.") or name.partition(".")[0] in FIRST_VIEWS]

    def start(self) -> dict:
        """The first patch: everything, for the page's opening state (the link's settings)."""
        self._shown = {}
        return {"patch": self._diff(self._evaluate()), "query": self.query}

    def change(self, widget: str, value) -> dict:
        """One widget moved: evaluate once and return the properties that changed of the widgets
        and FIRST_VIEWS (`first` names them); `busy` says the next tick() returns the same
        evaluation's other views, and the tick after it the curve views.

        A value the setting refuses (a typed number out of sim's range) is not applied; the widget
        is set back to the setting's value and the notice area says why."""
        try:
            name, new, position = widget_value(widget, value)
        except (ValueError, TypeError, IndexError) as e:
            return {"patch": {}, "query": self.query, "error": str(e), "busy": self.busy}
        why = None
        if name not in ("model", "config_text"):
            try:
                why = sim_check(name, new)
            except (TypeError, ValueError) as e:
                why = str(e)
        if why:
            self.busy = self._rest_due = False
            self._shown.pop(widget, None)  # resend the widget's real value
            self.input_notices = [f"Ignored {name}={new!r}: {why}."]
            patch = self._diff(self._evaluate())
            return {"patch": patch, "first": self._first(patch), "query": self.query, "busy": False}
        self.input_notices = []
        # The browser already shows the widget's new value: never echo it back (it would fight a drag).
        prop = "active" if name in ACTIVE_FIELDS else "value"
        self._shown.setdefault(widget, {})[prop] = value
        if position is not None:
            self.positions[name] = position
        self.values[name] = new
        self.busy = self._rest_due = True
        patch = self._diff(self._evaluate(curves=False, skip=self._not_first))
        return {"patch": patch, "first": self._first(patch), "query": self.query, "busy": True}

    def tick(self) -> dict:
        """The rest of the last change: first its other views (`first` is empty: the browser sets
        them after the frame that shows the numbers), then, in another tick, the curve views (and
        nothing else, unless it changed)."""
        if self._rest_due:
            self._rest_due = False
            self.busy = bool(self.curves)
            patch = self._diff(self._views(FIRST_VIEWS | CURVE_VIEWS))
            return {"patch": patch, "first": [], "query": self.query, "busy": self.busy}
        self.busy = False
        return {"patch": self._diff(self._evaluate()), "query": self.query, "busy": False}

    @property
    def _not_first(self) -> frozenset:
        return frozenset(view for view, _ in self.views if view not in FIRST_VIEWS)

    # Chromium first runs Pyodide's WebAssembly unoptimised and compiles a function's optimised
    # code once that function has run long enough; meanwhile each compilation takes a core.
    # Without a warm-up a panel's first slider moves took 3-5 times the Python time of later ones;
    # with 12 moves of the memory slider the first moves still spiked to 7-12 ms (1.3-1.7 ms
    # later), and in a Chromium with this tiering off they did not (docs/benchmarks/2026-12-01-site.md). So the worker
    # calls warm_up() while it has nothing else to do after the page's start (and again after a
    # pause in the student's moves): WARM_UP_ROUNDS rounds of moves of every sidebar slider (each
    # takes its own path: a log slider's position, the sweeps it moves) on a copy of the page,
    # which runs every step of a move (evaluation, both sweeps, every view, the diff) and leaves
    # this page's state alone. A step is one change (its first views) or one of its two ticks, so a
    # student's move waits for one of those at most, never a whole move. The values sit far from
    # the defaults, out of the way of the student's first moves.
    WARM_UP = tuple(
        (f"w.{name}", round(start + step * i, 3))
        for name, start, step in (("gpu_memory_utilization", 0.50, 0.01), ("prompt_tokens", 6.0, 0.125),
                                  ("output_tokens", 5.0, 0.125), ("concurrency", 3.0, 0.125))
        for i in range(4)
    )
    WARM_UP_ROUNDS = 6

    def warm_up(self) -> dict:
        """The next step (a move, or one of its ticks) of a throwaway copy of this page; `more` is
        false once the warm-up is done."""
        if self._warm is None:
            self._warm = PanelPage(self.page)
            self._warm.values = dict(self.values)
            self._warm.start()
            self._warm_moves = 0
        if self._warm.busy:
            out = self._warm.tick()
        elif self._warm_moves < len(self.WARM_UP) * self.WARM_UP_ROUNDS:
            out = self._warm.change(*self.WARM_UP[self._warm_moves % len(self.WARM_UP)])
            self._warm_moves += 1
        else:
            self._warm = None
            return {"more": False, "patch": {}}
        return {"more": True, "patch": out["patch"]}
