"""Aggregate decode throughput against batch size, beside perfect amortisation.

The dashed line is batch x the one-sequence rate: what batching would give if the weight read
were the whole step. The real curve bends away from it as each added sequence brings its own
cache to every step, and stops where the KV pool is full.
"""

from __future__ import annotations

from bokeh.models import ColumnDataSource, HoverTool, NumeralTickFormatter, Range1d, Span

from ..viewlayer.batch_chart import TITLE, view_batch_chart
from ..viewlayer.palette import COLORS, ink, muted, paper
from .base import StoreView, base_figure, chart_with_summary


class BatchChart(StoreView):
    watched = ("result", "batch")
    view_name = "batch_chart"

    def build(self):
        fig = base_figure(self.dark, height=318, x_range=Range1d(0, 1), y_range=Range1d(0, 1))
        fig.xaxis.axis_label = "sequences in the decode batch"
        fig.yaxis.axis_label = "decode tokens/s, all streams"
        fig.yaxis.formatter = NumeralTickFormatter(format="0,0")
        self.curve = ColumnDataSource(dict(x=[], y=[], per=[], itl=[]))
        self.ideal = ColumnDataSource(dict(x=[], y=[]))
        self.point = ColumnDataSource(dict(x=[], y=[], text=[]))
        fig.line(x="x", y="y", source=self.ideal, line_dash="dashed", line_width=2, color=muted(self.dark),
                 legend_label="perfect amortisation")
        line = fig.line(x="x", y="y", source=self.curve, line_width=3, color=COLORS["decode"], legend_label="simulated")
        fig.scatter(x="x", y="y", source=self.point, size=14, color=COLORS["decode"], line_color=ink(self.dark), line_width=2)
        fig.text(x="x", y="y", text="text", source=self.point, x_offset=-10, y_offset=-12, text_align="right",
                 text_font_size="13px", text_font_style="bold", text_color=ink(self.dark))
        self.pool = Span(location=1, dimension="height", line_dash="dotted", line_color=COLORS["kv"], line_width=2)
        fig.add_layout(self.pool)
        fig.legend.location = "top_left"
        # The page's own colour behind the words: where the y axis is short (a long prompt's few
        # sequences), the dashed line ran through "perfect amortisation".
        fig.legend.background_fill_color = paper(self.dark)
        fig.legend.background_fill_alpha = 0.9
        fig.legend.border_line_alpha = 0
        fig.legend.label_text_color = ink(self.dark)
        fig.add_tools(HoverTool(renderers=[line], mode="vline", tooltips=[
            ("batch", "@x"), ("aggregate", "@y{0,0} tok/s"), ("per stream", "@per{0,0.0} tok/s"), ("ITL", "@itl{0.00} ms")]))
        self.fig = fig
        self.parts.update(curve=self.curve, ideal=self.ideal, point=self.point, pool=self.pool, x_range=fig.x_range,
                          y_range=fig.y_range)
        return chart_with_summary(self, fig, TITLE)

    def data(self) -> dict:
        return view_batch_chart(self.store.result, self.store.batch)
