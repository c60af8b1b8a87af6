"""Plot the distribution, not the mean (seed 000): a histogram and a CDF of one latency, with
p50, p90, p99 and the mean marked, and the comparison policy drawn over it in a second colour.

TTFT, TPOT and E2E are one value per request; ITL is one value per generated token, read from the
run's 1%-wide histogram. Both axes of time are logarithmic because the interesting part of a
serving latency distribution is its tail, orders of magnitude above the median.
"""

from __future__ import annotations

import numpy as np
import panel as pn
from bokeh.models import ColumnDataSource, HoverTool, Label, NumeralTickFormatter, Span

from .. import html
from ..a11y import labelled
from ..palette import ink
from ..views.base import base_figure, bokeh_pane
from .base import COMPARE_COLOR, MAIN_COLOR, MARK_COLORS, LabView, below_plot, seconds

METRICS = {"TTFT": "ttft_s", "ITL": "itl_s", "TPOT (mean ITL per request)": "tpot_s", "End to end": "e2e_s"}
BINS = 48
CDF_POINTS = 400
MARKS = ("p50", "p90", "p99", "mean")


def samples(result, key: str) -> tuple[np.ndarray, np.ndarray]:
    """(values, weights) of one latency: per request, or per token for ITL (histogram bins)."""
    if key == "itl_s":
        edges = np.asarray(result.itl_density.get("edges_s", []), dtype=float)
        weights = np.asarray(result.itl_density.get("weights", []), dtype=float)
        if len(edges) < 2:
            return np.array([]), np.array([])
        return np.sqrt(edges[:-1] * edges[1:]), weights
    values = np.asarray(result.requests.get(key, []), dtype=float)
    values = values[values > 0]  # TPOT is 0 for one-token outputs: nothing to show on a log axis
    return values, np.ones_like(values)


def histogram(values, weights, edges):
    counts, _ = np.histogram(values, bins=edges, weights=weights)
    total = weights.sum()
    return counts / total if total else counts


def cdf(values, weights) -> tuple[list, list]:
    if not len(values):
        return [], []
    order = np.argsort(values)
    v, w = values[order], weights[order]
    c = np.cumsum(w) / w.sum()
    idx = np.unique(np.linspace(0, len(v) - 1, min(CDF_POINTS, len(v))).astype(int))
    return v[idx].tolist(), c[idx].tolist()


class LatencyDistribution(LabView):
    def build(self):
        self.metric = pn.widgets.RadioButtonGroup(options=list(METRICS), value="TTFT", color="primary",
                                                  variant="outline", margin=(5, 10), css_classes=["kv-w-lab-metric"])
        self.metric.param.watch(lambda *_: self.refresh(), "value")
        text = ink(self.dark)
        self.hist = base_figure(self.dark, height=330, x_axis_type="log", title="Histogram")
        self.hist.xaxis.axis_label = "latency (s)"
        self.hist.yaxis.axis_label = "share"
        self.hist.yaxis.formatter = NumeralTickFormatter(format="0%")
        self.cdf_fig = base_figure(self.dark, height=330, x_axis_type="log", title="Cumulative distribution", x_range=self.hist.x_range)
        self.cdf_fig.xaxis.axis_label = "latency (s)"
        self.cdf_fig.yaxis.axis_label = "share at or below"
        self.cdf_fig.yaxis.formatter = NumeralTickFormatter(format="0%")
        self.src = {who: ColumnDataSource(dict(left=[], right=[], top=[])) for who in ("main", "compare")}
        self.cdf_src = {who: ColumnDataSource(dict(x=[], y=[])) for who in ("main", "compare")}
        self.hist.quad(left="left", right="right", top="top", bottom=0, source=self.src["main"], fill_color=MAIN_COLOR,
                       fill_alpha=0.55, line_color=MAIN_COLOR, legend_label="this policy")
        self.hist.quad(left="left", right="right", top="top", bottom=0, source=self.src["compare"], fill_alpha=0,
                       line_color=COMPARE_COLOR, line_width=2, legend_label="comparison")
        main_line = self.cdf_fig.line(x="x", y="y", source=self.cdf_src["main"], line_width=3, color=MAIN_COLOR, legend_label="this policy")
        self.cdf_fig.line(x="x", y="y", source=self.cdf_src["compare"], line_width=2, color=COMPARE_COLOR, line_dash="dashed",
                          legend_label="comparison")
        self.cdf_fig.add_tools(HoverTool(renderers=[main_line], mode="vline", tooltips=[("latency", "@x{0.000} s"), ("share", "@y{0.0%}")]))
        for fig in (self.hist, self.cdf_fig):
            below_plot(fig, text)
        self.spans, self.labels = {}, {}
        for i, mark in enumerate(MARKS):
            dash = "dashed" if mark == "mean" else "solid"
            for fig, tag in ((self.hist, "h"), (self.cdf_fig, "c")):
                span = Span(location=1, dimension="height", line_color=MARK_COLORS[mark], line_width=2, line_dash=dash)
                # Stacked near the top of the frame (screen units from the bottom), p99 written leftwards
                # of its line so the tail's label stays inside the plot.
                right = mark == "p99"
                # The top row sits inside the frame even when the legend below wraps to two lines on a
                # phone (higher, it ran into the title).
                label = Label(x=1, y=170 - 17 * i, y_units="screen", text="", text_font_size="12px", text_color=MARK_COLORS[mark],
                              x_offset=-4 if right else 4, text_align="right" if right else "left", text_font_style="bold")
                fig.add_layout(span)
                fig.add_layout(label)
                self.spans[(mark, tag)] = span
                self.labels[(mark, tag)] = label
        self.caption = pn.pane.HTML("", margin=(0, 10), sizing_mode="stretch_width")
        row = pn.FlexBox(*(pn.Column(bokeh_pane(f), styles={"flex": "1 1 420px", "min-width": "0"}, margin=0)
                           for f in (self.hist, self.cdf_fig)), flex_wrap="wrap", sizing_mode="stretch_width", margin=0)
        return pn.Column(labelled(self.metric, "Latency shown"), row, self.caption, sizing_mode="stretch_width", margin=(0, 0, 10, 0))

    def refresh(self) -> None:
        key = METRICS[self.metric.value]
        runs = {"main": self.store.result, "compare": self.store.compare}
        data = {who: samples(r, key) if r is not None else (np.array([]), np.array([])) for who, r in runs.items()}
        everything = np.concatenate([v for v, _ in data.values()]) if any(len(v) for v, _ in data.values()) else np.array([])
        if not len(everything):
            for who in runs:
                self.src[who].data = dict(left=[], right=[], top=[])
                self.cdf_src[who].data = dict(x=[], y=[])
            self.caption.object = ""
            return
        lo, hi = everything.min(), everything.max()
        hi = max(hi, lo * 1.05)
        edges = np.geomspace(lo / 1.02, hi * 1.02, BINS + 1)
        for who, (values, weights) in data.items():
            if len(values):
                self.src[who].data = dict(left=edges[:-1].tolist(), right=edges[1:].tolist(),
                                          top=histogram(values, weights, edges).tolist())
                x, y = cdf(values, weights)
                self.cdf_src[who].data = dict(x=x, y=y)
            else:
                self.src[who].data = dict(left=[], right=[], top=[])
                self.cdf_src[who].data = dict(x=[], y=[])
        main = runs["main"]
        if main is None:
            return
        p = getattr(main, key)
        values = {"p50": p.p50, "p90": p.p90, "p99": p.p99, "mean": p.mean}
        for mark, v in values.items():
            for tag in ("h", "c"):
                self.spans[(mark, tag)].location = max(v, lo)
                self.labels[(mark, tag)].x = max(v, lo)
                self.labels[(mark, tag)].text = f"{mark} {seconds(v)}"
        ratio = p.p99 / p.p50 if p.p50 else 0
        note = (f"{self.metric.value}: p50 {seconds(p.p50)}, p90 {seconds(p.p90)}, p99 {seconds(p.p99)}, max {seconds(p.max)}; "
                f"the mean ({seconds(p.mean)}) hides a p99 {ratio:.1f}x the median.")
        other = runs["compare"]
        if other is not None:
            q = getattr(other, key)
            note += f" Comparison ({other.policy}): p50 {seconds(q.p50)}, p99 {seconds(q.p99)}."
        self.caption.object = f'<p class="kv-caption" data-kv="lab-distribution">{html.esc(note)}</p>'
