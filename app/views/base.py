"""What every view shares: a store to read, a layout built once, a refresh on every change.

Views build their Bokeh figures and panes once and afterwards only replace data (a
ColumnDataSource's columns, a pane's text). Rebuilding a figure per slider move would resend the
whole plot model to the browser; replacing columns sends a few hundred bytes.

What a view shows is computed by its function in `kvlab.app.viewlayer` (standard library, the
same function the static site's browser bridge calls): `data()` calls it, and `apply()` sets each
part's properties on the model `build()` registered under that part's name in `self.parts`.
"""

from __future__ import annotations

import math

import panel as pn
import param
from bokeh.models import CustomJS, CustomJSTicker, Span
from bokeh.plotting import figure

from ..pages import building_site
from ..viewlayer import html
from ..viewlayer.html import BASE_CSS
from ..viewlayer.pages import _same
from ..viewlayer.palette import ink, muted
from .store import Store


def is_dark() -> bool:
    return pn.config.theme == "dark"


class StoreView(pn.viewable.Viewer):
    store = param.ClassSelector(class_=Store, doc="the store this view displays")
    watched = ("result",)  # store params whose change calls refresh()
    view_name = ""  # the view's name in viewlayer.pages.VIEWS; its models are "<view_name>.<part>"

    def __init__(self, **params):
        super().__init__(**params)
        self.dark = is_dark()
        self.parts: dict[str, object] = {}
        self._layout = self.build()
        if building_site():  # names the bridge finds models by; off elsewhere: two panels in one notebook would repeat them
            self.name_models()
        self.store.param.watch(lambda *_: self.refresh(), list(self.watched))
        self.refresh()

    def build(self) -> pn.viewable.Viewable:
        """Most views are one HTML pane that refresh() rewrites; chart views override this."""
        self.pane = self.parts["pane"] = html_pane(margin=(5, 10))
        return self.pane

    def data(self) -> dict:
        """{part: {property: value}} from the view layer for the store's current state."""
        raise NotImplementedError

    def refresh(self) -> None:
        self.apply(self.data())

    def apply(self, data: dict) -> None:
        """Set each part's properties; unchanged ones are not resent to the browser."""
        for part, props in data.items():
            target = self.parts[part]
            if part.startswith("w."):
                # A widget of the view (named by its kv-w-* class): it holds its own value; only the
                # properties its Panel widget has (a progress bar's value, a button's disabled) are set.
                props = {k: v for k, v in props.items() if k in target.param and k != "value"} \
                    if isinstance(target, pn.widgets.Widget) and not isinstance(target, pn.indicators.Progress) else props
            if isinstance(target, TextPane):
                if "html" in props:
                    target.object = props["html"]
                if "visible" in props:
                    target.visible = props["visible"]
                continue
            for key, value in props.items():
                if not _same(getattr(target, key), value):
                    setattr(target, key, value)

    def name_models(self) -> dict[str, object]:
        """Give every part's model its stable name; returns {name: model or pane}."""
        named = {}
        for part, target in self.parts.items():
            if part.startswith("w."):  # a widget: the page build names it from its kv-w-* class
                continue
            name = f"{self.view_name}.{part}"
            if isinstance(target, TextPane):
                target.model_name = name
            else:
                target.name = name
            named[name] = target
        return named

    def __panel__(self):
        return self._layout


class TextPane(pn.pane.HTML):
    """An HTML pane whose updates resend only the text.

    Panel's HTML pane recomputes every property of its model on each update, design and
    stylesheets included: about 2 ms of server time per pane per slider move, which five panes
    turn into a third of the latency budget. Only `object` ever changes here, so only `text` is sent.
    """

    model_name = param.String(default="", doc="the Bokeh model's name (the static site's bridge finds it by it)")

    _rename = {**pn.pane.HTML._rename, "model_name": None}

    def _update(self, ref, model) -> None:
        model.text = self._transform_object(self.object)["object"]

    def _get_model(self, doc, root=None, parent=None, comm=None):
        model = super()._get_model(doc, root, parent, comm)
        if self.model_name:
            model.name = self.model_name
        return model


def html_pane(text: str = "", **kw) -> TextPane:
    """An HTML pane for text this package builds (every interpolated string escaped in app.html)."""
    return TextPane(text, stylesheets=[BASE_CSS], sizing_mode="stretch_width", **kw)


# Major ticks of a log axis, spread over its whole length. Bokeh's LogTicker falls back to even linear
# steps when the range spans under two decades, and on a log axis those crowd into its top end (a
# latency axis from 5 ms to 0.3 s showed "0.20.250.3" in a heap at the right and nothing else).
# Candidates are the round numbers of each decade in order of preference (powers of ten, then 2 and
# 5, then 3, then the rest); one is kept only if it sits at least a seventh of the axis (in log
# distance) from every tick kept before it, so at most seven labels share the axis and none touch
# on a 320 px phone. A sliver of a decade with under two such ticks gets even steps instead, which
# on so short a stretch of a log axis look even.
LOG_TICKS_JS = """
const lo = Math.min(cb_data.start, cb_data.end), hi = Math.max(cb_data.start, cb_data.end);
if (!(lo > 0) || !(hi > lo) || !isFinite(hi)) { return []; }
const round = (t) => Number(t.toPrecision(6));
const span = Math.log10(hi / lo), gap = span / 7;
const ranked = [[1], [2, 5], [3], [1.5, 2.5, 4, 6, 7, 8, 9]];
const kept = [];
for (const mantissas of ranked) {
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    for (const m of mantissas) {
      const t = round(m * Math.pow(10, e));
      if (t >= lo && t <= hi && kept.every((k) => Math.abs(Math.log10(t / k)) >= gap)) { kept.push(t); }
    }
  }
}
if (kept.length >= 2) { return kept.sort((a, b) => a - b); }
const raw = (hi - lo) / 4, unit = Math.pow(10, Math.floor(Math.log10(raw)));
const step = [1, 2, 2.5, 5, 10].map((m) => m * unit).find((s) => s >= raw);
const even = [];
for (let t = Math.ceil(lo / step) * step; t <= hi * (1 + 1e-9); t += step) { even.push(round(t)); }
return even;
"""


def log_ticker() -> CustomJSTicker:
    return CustomJSTicker(major_code=LOG_TICKS_JS, minor_code="return [];")


def base_figure(dark: bool, height: int, **kw):
    """A figure styled for the panels: no toolbar clutter, transparent so the page's theme shows.
    No title on the canvas: a chart's title is HTML above it (`chart_title_pane`). A log axis gets
    `log_ticker`'s ticks."""
    fig = figure(height=height, sizing_mode="stretch_width", toolbar_location=None, tools="", title=None,
                 background_fill_alpha=0, border_fill_alpha=0, outline_line_color=None, **kw)
    for axes, kind in ((fig.xaxis, kw.get("x_axis_type")), (fig.yaxis, kw.get("y_axis_type"))):
        if kind == "log":
            for axis in axes:
                axis.ticker = log_ticker()
    text, faint = ink(dark), muted(dark)
    for axis in (*fig.xaxis, *fig.yaxis):
        axis.axis_label_text_color = faint
        axis.major_label_text_color = text
        axis.axis_line_color = faint
        axis.major_tick_line_color = faint
        # The dark theme (Bokeh's dark_minimal) hides axis lines and ticks with alpha 0; a value
        # equal to the default (1) would not be written out and the theme would win, so the light
        # charts had axes and the dark ones none. 0.99 draws the same line in both.
        axis.axis_line_alpha = axis.major_tick_line_alpha = 0.99
        axis.minor_tick_line_color = None
        axis.axis_label_text_font_style = "normal"
        # One size in both themes. Bokeh's default (13px) would not be written out, and the dark
        # theme's own (1.25em) would then win.
        axis.axis_label_text_font_size = "13.5px"
        axis.major_label_text_font_size = "12px"
    for grid in (*fig.xgrid, *fig.ygrid):
        grid.grid_line_color = faint
        grid.grid_line_alpha = 0.25
    return fig


def legend_key(fig, y=0, **visuals):
    """A renderer that only gives a legend entry its key: one point at x = NaN, never drawn.
    BokehJS draws no key for a renderer without data, so an entry whose glyph's source can be
    empty needs one. `y` must be on the figure's y range."""
    return fig.scatter(x=[math.nan], y=[y], **visuals)


def chart_title_pane(text: str = "") -> TextPane:
    """A chart's title as HTML above its canvas, not Bokeh's title drawn on it: canvas text cannot
    wrap, so on a 360 px phone the longer titles ran off the chart's edge, and a screen reader
    never reads it. A view whose title changes sets it through its "title" part."""
    return html_pane(text=html.chart_title(text) if text else "", margin=(5, 10, 0, 10))


UNDER_TITLE = (0, 10, 5, 10)  # a chart's margin under its title pane


def chart_with_summary(view: StoreView, fig, title: str = "", legend: bool = False) -> pn.Column:
    """A chart under its title, and under it its text summary (the view layer's "summary" part:
    the numbers the chart draws, for readers who cannot see the canvas); with `legend`, between
    them the view layer's "legend" part (`html.key_legend`)."""
    view.parts["title"] = chart_title_pane(title)
    if legend:
        view.parts["legend"] = html_pane(margin=(0, 10, 6, 10))
    view.summary = view.parts["summary"] = html_pane(margin=(0, 10, 8, 10))
    panes = [view.parts["title"], bokeh_pane(fig, margin=UNDER_TITLE), *([view.parts["legend"]] if legend else []), view.summary]
    return pn.Column(*panes, sizing_mode="stretch_width", margin=0)


def bokeh_pane(fig, **kw) -> pn.pane.Bokeh:
    return pn.pane.Bokeh(fig, sizing_mode="stretch_width", **kw)


def drag_handle(fig, dark: bool, **line) -> Span:
    """A vertical line on `fig` that a student drags to set a setting (`viewlayer.drag`: its part sets
    the line's place and, in its tags, the setting). The page script app/templates/drag.js lays a
    keyboard-operable handle over it once the chart is laid out, and moves it with the line."""
    span = Span(location=None, dimension="height", **{"line_color": ink(dark), "line_width": 2, **line})
    fig.add_layout(span)
    attach = CustomJS(args={"fig": fig}, code="if (window.kvlabDrag) { window.kvlabDrag.attach(fig); }")
    fig.js_on_change("inner_width", attach)
    span.js_on_change("location", attach)
    return span
