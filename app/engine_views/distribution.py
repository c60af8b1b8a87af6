"""Plot the distribution, not the mean (seed 000): a histogram and a CDF of one latency, with
p50, p90, p99 and the mean marked, and the comparison policy drawn over it in a second colour
(what is drawn is computed by `viewlayer.lab_distribution`, standard library only)."""

from __future__ import annotations

import panel as pn
from bokeh.models import ColumnDataSource, HoverTool, Label, NumeralTickFormatter, Span

from ..shell.a11y import labelled
from ..viewlayer.lab_distribution import MARKS
from ..viewlayer.lab_settings import METRICS
from ..viewlayer.palette import ink, paper
from ..views.base import TextPane, base_figure
from .base import COMPARE_COLOR, MAIN_COLOR, MARK_LABEL_COLORS, MARK_LINE_COLORS, LabView, below_plot, side_by_side


class LatencyDistribution(LabView):
    view_name = "lab_distribution"

    def build(self):
        self.metric = pn.widgets.RadioButtonGroup(options=list(METRICS), value="TTFT", color="primary",
                                                  variant="outline", margin=(5, 10), css_classes=["kv-w-lab-metric"])
        self.metric.param.watch(lambda *_: self.refresh(), "value")
        text = ink(self.dark)
        self.hist = base_figure(self.dark, height=308, x_axis_type="log")
        self.hist.xaxis.axis_label = "latency (s)"
        self.hist.yaxis.axis_label = "share"
        self.hist.yaxis.formatter = NumeralTickFormatter(format="0%")
        self.cdf_fig = base_figure(self.dark, height=308, x_axis_type="log", x_range=self.hist.x_range)
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
        figs = {"h": self.hist, "c": self.cdf_fig}
        for i, mark in enumerate(MARKS):
            dash = "dashed" if mark == "mean" else "solid"
            for tag, fig in figs.items():
                span = Span(location=1, dimension="height", line_color=MARK_LINE_COLORS[self.dark][mark], line_width=2, line_dash=dash)
                # Stacked near the top of the frame (screen units from the bottom); the view layer
                # writes a label leftwards of its line when the line is in the right part of the axis.
                # The top row sits inside the frame even when the legend below wraps to two lines on a
                # phone (higher, it ran into the title).
                # On the page's own background, so a label stays legible where it crosses bars, the
                # curve or another mark's line (p90's and p99's meet in a long tail).
                label = Label(x=1, y=170 - 17 * i, y_units="screen", text="", text_font_size="12px",
                              text_color=MARK_LABEL_COLORS[self.dark][mark],
                              x_offset=4, text_align="left", text_font_style="bold",
                              background_fill_color=paper(self.dark), background_fill_alpha=0.85, padding=1)
                fig.add_layout(span)
                self.spans[(mark, tag)] = span
                self.labels[(mark, tag)] = label
        for (_, tag), label in self.labels.items():  # after every line, so no line crosses a label
            figs[tag].add_layout(label)
        self.caption = TextPane("", margin=(0, 10), sizing_mode="stretch_width")
        self.parts.update({"w.lab-metric": self.metric, "caption": self.caption})
        for who in ("main", "compare"):
            self.parts[f"hist_{who}"] = self.src[who]
            self.parts[f"cdf_{who}"] = self.cdf_src[who]
        for (mark, tag), span in self.spans.items():
            self.parts[f"{mark}_{tag}_span"] = span
            self.parts[f"{mark}_{tag}_label"] = self.labels[(mark, tag)]
        row = side_by_side((self.hist, "Histogram"), (self.cdf_fig, "Cumulative distribution"))
        return pn.Column(labelled(self.metric, "Latency shown"), row, self.caption, sizing_mode="stretch_width", margin=(0, 0, 10, 0))

    def values(self) -> dict:
        return {**super().values(), "metric": self.metric.value}
