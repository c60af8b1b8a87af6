"""Sequences that fit against prompt length, with the current prompt marked.

Both axes are logarithmic: the curve is close to pool / (bytes per token x length), a straight
line of slope -1 in log-log, which is the point of the picture. The dashed line is the number of
requests offered; where the curve drops below it, requests start to wait.
"""

from __future__ import annotations

import math

from bokeh.models import ColumnDataSource, HoverTool, Label, NumeralTickFormatter, Span

from .. import format as fmt
from ..palette import COLORS, ink, muted
from .base import StoreView, base_figure, bokeh_pane


class FitCurveChart(StoreView):
    watched = ("result", "fit")
    _shown_fit = None

    def build(self):
        fig = base_figure(self.dark, height=300, x_axis_type="log", y_axis_type="log",
                          title="Sequences that fit, as the prompt grows")
        fig.xaxis.axis_label = "prompt tokens"
        fig.yaxis.axis_label = "sequences that fit"
        fig.xaxis.formatter = NumeralTickFormatter(format="0,0")
        fig.yaxis.formatter = NumeralTickFormatter(format="0,0")
        self.curve = ColumnDataSource(dict(x=[], y=[]))
        self.point = ColumnDataSource(dict(x=[], y=[], text=[], dx=[], align=[]))
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
        fig.add_tools(HoverTool(renderers=[line], tooltips=[("prompt", "@x{0,0} tokens"), ("fit", "@y{0,0}")], mode="vline"))
        self.fig = fig
        return bokeh_pane(fig, margin=(5, 10))

    def refresh(self) -> None:
        fit, r = self.store.fit, self.store.result
        s = self.store.settings
        if fit is None or r is None or not r.ok:
            self._shown_fit = None
            self.empty.text = ""
            self.curve.data = dict(x=[], y=[])
            self.point.data = {k: [] for k in self.point.data}
            return
        self.empty.text = "" if any(fit.max_sequences) else "Not one sequence fits at any prompt length."
        if fit is not self._shown_fit:  # the curve only changes when something other than the prompt does
            # A log axis cannot show zero: where nothing fits the line simply ends.
            ys = [y if y > 0 else math.nan for y in fit.max_sequences]
            self.curve.data = dict(x=list(fit.prompt_tokens), y=ys)
            self._shown_fit = fit
        shown = r.max_sequences if r.max_sequences > 0 else math.nan
        # The label goes on the side of the point with more room, so it never runs off the plot.
        right_half = math.log(s.prompt_tokens) > (math.log(fit.prompt_tokens[0]) + math.log(fit.prompt_tokens[-1])) / 2
        self.point.data = dict(x=[s.prompt_tokens], y=[shown],
                               text=[f"{fmt.count(r.max_sequences)} fit at {fmt.tokens(s.prompt_tokens)}"],
                               dx=[-12 if right_half else 12], align=["right" if right_half else "left"])
        self.requests.location = s.concurrency
        self.requests_label.y = s.concurrency
        self.requests_label.y_units = "data"
        self.requests_label.text = f"{s.concurrency:,} requests offered"
