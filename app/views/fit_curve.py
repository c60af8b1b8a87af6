"""Sequences that fit against prompt length, with the current prompt marked.

Both axes are logarithmic: the curve is close to pool / (bytes per token x length), a straight
line of slope -1 in log-log, which is the point of the picture. The dashed line is the number of
requests offered; where the curve drops below it, requests start to wait.
"""

from __future__ import annotations

from bokeh.models import ColumnDataSource, HoverTool, Label, NumeralTickFormatter, Span

from ..viewlayer.fit_curve import POINT_COLUMNS, view_fit_curve
from ..viewlayer.palette import COLORS, ink, muted
from .base import StoreView, base_figure, chart_with_summary, drag_handle


class FitCurveChart(StoreView):
    watched = ("result", "fit")
    view_name = "fit_curve"

    def build(self):
        fig = base_figure(self.dark, height=278, x_axis_type="log", y_axis_type="log")
        fig.xaxis.axis_label = "prompt tokens"
        fig.yaxis.axis_label = "sequences that fit"
        fig.xaxis.formatter = NumeralTickFormatter(format="0,0")
        fig.yaxis.formatter = NumeralTickFormatter(format="0,0")
        self.curve = ColumnDataSource(dict(x=[], y=[]))
        self.point = ColumnDataSource({k: [] for k in POINT_COLUMNS})
        line = fig.step(x="x", y="y", mode="after", source=self.curve, line_width=3, color=COLORS["kv"])
        fig.scatter(x="x", y="y", source=self.point, size=14, color=COLORS["kv"], line_color=ink(self.dark), line_width=2)
        fig.text(x="x", y="y", text="text", source=self.point, x_offset="dx", y_offset=-10, text_align="align",
                 text_font_size="13px", text_font_style="bold", text_color=ink(self.dark))
        self.requests = Span(location=1, dimension="width", line_color=COLORS["decode"], line_dash="dashed", line_width=2)
        fig.add_layout(self.requests)
        self.requests_label = Label(x=0, y=1, x_units="screen", x_offset=48, y_offset=4, text="",
                                    text_font_size="12px", text_color=muted(self.dark))
        fig.add_layout(self.requests_label)
        self.empty = Label(x=70, y=120, x_units="screen", y_units="screen", text="", text_font_size="15px",
                           text_color=muted(self.dark))
        fig.add_layout(self.empty)
        # The prompt: a faint line through the marker, and a handle on it (app/templates/drag.js) that sets the prompt.
        self.handle = drag_handle(fig, self.dark, line_color=muted(self.dark), line_dash="dotted", line_width=1)
        fig.add_tools(HoverTool(renderers=[line], tooltips=[("prompt", "@x{0,0} tokens"), ("fit", "@y{0,0}")], mode="vline"))
        self.fig = fig
        self.parts.update(curve=self.curve, point=self.point, requests=self.requests, requests_label=self.requests_label,
                          empty=self.empty, handle=self.handle)
        return chart_with_summary(self, fig, "Sequences that fit, as the prompt grows")

    def data(self) -> dict:
        return view_fit_curve(self.store.result, self.store.fit)
