"""The roofline: attainable FLOP/s against arithmetic intensity (FLOPs per byte moved), with
this configuration's prefill and decode steps plotted where they land.

The solid roof uses the efficiency profile's achieved fractions (what the step times in this
panel are computed with); the faint dashed roof is the datasheet. Left of the ridge a step is
limited by bandwidth, right of it by the tensor cores. Points sit at the step's FLOPs divided by
its time, so a step that also waits on an all-reduce or launch overhead sits below the roof.
"""

from __future__ import annotations

from bokeh.models import ColumnDataSource, CustomJSTickFormatter, HoverTool, NumeralTickFormatter, Range1d, Span

from ..viewlayer.palette import COLORS, ink, muted
from ..viewlayer.roofline import POINT_COLUMNS, TITLE, view_roofline
from .base import StoreView, base_figure, chart_with_summary

FLOPS_TICKS = """
const units = [[1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M']];
for (const [scale, name] of units) { if (tick >= scale) { return (tick / scale).toLocaleString('en-US') + ' ' + name; } }
return tick.toLocaleString('en-US');
"""


class RooflineChart(StoreView):
    view_name = "roofline"

    def build(self):
        fig = base_figure(self.dark, height=318, x_axis_type="log", y_axis_type="log",
                          x_range=Range1d(0.3, 3e4), y_range=Range1d(1e9, 1e16))  # explicit: the view sets both ends
        fig.xaxis.axis_label = "arithmetic intensity (FLOP per byte of HBM traffic)"
        fig.yaxis.axis_label = "FLOP/s (one GPU)"
        fig.xaxis.formatter = NumeralTickFormatter(format="0,0.[0]")
        fig.yaxis.formatter = CustomJSTickFormatter(code=FLOPS_TICKS)
        self.roof = ColumnDataSource(dict(x=[], y=[]))
        self.datasheet = ColumnDataSource(dict(x=[], y=[]))
        self.points = ColumnDataSource({k: [] for k in POINT_COLUMNS})
        fig.line(x="x", y="y", source=self.datasheet, line_dash="dashed", line_width=1.5, color=muted(self.dark),
                 legend_label="datasheet peak")
        fig.line(x="x", y="y", source=self.roof, line_width=3, color=COLORS["roof"] if not self.dark else "#C8C8C8",
                 legend_label="achievable (profile)")
        pts = fig.scatter(x="x", y="y", source=self.points, size=16, color="color", marker="marker",
                          line_color=ink(self.dark), line_width=2)
        # Each label goes below its point, on the side away from the ridge: above it, the roof's
        # slope ran through "decode" and the datasheet's dashed roof through "prefill".
        fig.text(x="x", y="y", text="text", source=self.points, x_offset="dx", y_offset=10, text_align="align",
                 text_baseline="top", text_font_size="13px", text_font_style="bold", text_color=ink(self.dark))
        self.ridge = Span(location=1, dimension="height", line_dash="dotted", line_color=muted(self.dark))
        fig.add_layout(self.ridge)
        fig.legend.location = "bottom_right"
        fig.legend.background_fill_alpha = 0
        fig.legend.border_line_alpha = 0
        fig.legend.label_text_color = ink(self.dark)
        fig.add_tools(HoverTool(renderers=[pts], tooltips=[("", "@name"), ("intensity", "@x{0,0.0} FLOP/B"),
                                                           ("achieved", "@flops")]))
        self.fig = fig
        self.parts.update(roof=self.roof, datasheet=self.datasheet, points=self.points, ridge=self.ridge, x_range=fig.x_range,
                          y_range=fig.y_range)
        return chart_with_summary(self, fig, TITLE)

    def data(self) -> dict:
        return view_roofline(self.store.result)
