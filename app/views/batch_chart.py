"""Aggregate decode throughput against batch size, beside perfect amortisation.

The dashed line is batch x the one-sequence rate: what batching would give if the weight read
were the whole step. The real curve bends away from it as each added sequence brings its own
cache to every step, and stops where the KV pool is full.
"""

from __future__ import annotations

from bokeh.models import ColumnDataSource, HoverTool, NumeralTickFormatter, Range1d, Span

from .. import format as fmt
from ..palette import COLORS, ink, muted
from .base import StoreView, base_figure, bokeh_pane


class BatchChart(StoreView):
    watched = ("result", "batch")

    def build(self):
        fig = base_figure(self.dark, height=340, title="Throughput against batch: amortisation flattens",
                          y_range=Range1d(0, 1))
        fig.xaxis.axis_label = "sequences in the decode batch"
        fig.yaxis.axis_label = "tokens/s, all streams"
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
        fig.legend.background_fill_alpha = 0
        fig.legend.border_line_alpha = 0
        fig.legend.label_text_color = ink(self.dark)
        fig.add_tools(HoverTool(renderers=[line], mode="vline", tooltips=[
            ("batch", "@x"), ("aggregate", "@y{0,0} tok/s"), ("per stream", "@per{0,0.0} tok/s"), ("ITL", "@itl{0.00} ms")]))
        self.fig = fig
        return bokeh_pane(fig, margin=(5, 10))

    def refresh(self) -> None:
        c, r = self.store.batch, self.store.result
        if c is None or not c.batch or r is None or r.itl_s is None:
            self.curve.data = dict(x=[], y=[], per=[], itl=[])
            self.ideal.data = dict(x=[], y=[])
            self.point.data = dict(x=[], y=[], text=[])
            return
        self.curve.data = dict(x=list(c.batch), y=list(c.tokens_per_s), per=list(c.per_stream_tokens_per_s),
                               itl=[t * 1e3 for t in c.itl_s])
        one = c.tokens_per_s[0] / c.batch[0]
        top = c.batch[-1]
        self.ideal.data = dict(x=[0, top], y=[0, one * top])
        self.point.data = dict(x=[r.batch], y=[r.decode_tokens_per_s], text=[f"{fmt.rate(r.decode_tokens_per_s)} tok/s"])
        self.pool.location = r.max_sequences
        self.fig.x_range.start = 0
        self.fig.x_range.end = max(top, 1) * 1.04
        self.fig.y_range.end = max(c.tokens_per_s) * 1.6
        self.fig.title.text = f"Throughput against batch (the KV pool stops it at {r.max_sequences:,})"
