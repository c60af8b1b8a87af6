"""The run over time: KV cache usage (with preemptions marked) and running against waiting
requests, the picture of seed 001's saturation: the cache pinned near full while the running
batch stays far below max_num_seqs and the queue grows (what is drawn is `viewlayer.lab_timeline`)."""

from __future__ import annotations

import panel as pn
from bokeh.models import ColumnDataSource, HoverTool, LegendItem, NumeralTickFormatter, Range1d, Span

from ..viewlayer.palette import COLORS, OKABE_ITO, ink, muted
from ..views.base import TextPane, base_figure, legend_key
from .base import COMPARE_COLOR, LabView, below_plot, side_by_side


class Timeline(LabView):
    view_name = "lab_timeline"

    def build(self):
        self.kv = base_figure(self.dark, height=268, y_range=Range1d(0, 1.05))
        self.kv.yaxis.formatter = NumeralTickFormatter(format="0%")
        self.kv.xaxis.axis_label = "simulated time (s)"
        self.queue = base_figure(self.dark, height=268, x_range=self.kv.x_range)
        self.queue.xaxis.axis_label = "simulated time (s)"
        self.queue.yaxis.axis_label = "requests"
        self.main = ColumnDataSource(dict(t=[], kv=[], running=[], waiting=[]))
        self.other = ColumnDataSource(dict(t=[], kv=[], running=[], waiting=[]))
        self.preempt = ColumnDataSource(dict(t=[], kv=[], n=[]))
        area = self.kv.varea(x="t", y1=0, y2="kv", source=self.main, fill_color=COLORS["kv"], fill_alpha=0.35, legend_label="this policy")
        self.kv.line(x="t", y="kv", source=self.main, color=COLORS["kv"], line_width=2)
        self.kv.line(x="t", y="kv", source=self.other, color=COMPARE_COLOR, line_width=2, line_dash="dashed", legend_label="comparison")
        mark = dict(marker="inverted_triangle", size=9, color=OKABE_ITO["black"] if not self.dark else "#FFFFFF")
        # The key comes from legend_key: a run without preemptions leaves their source empty.
        preemptions = [self.kv.scatter(x="t", y="kv", source=self.preempt, **mark), legend_key(self.kv, **mark)]
        self.kv.legend[0].items.append(LegendItem(label="preemptions", renderers=preemptions))
        self.kv.add_tools(HoverTool(renderers=[area], mode="vline", tooltips=[("t", "@t{0.0} s"), ("KV in use", "@kv{0.0%}")]))
        run = self.queue.step(x="t", y="running", source=self.main, color=COLORS["decode"], line_width=2, mode="after",
                              legend_label="running")
        self.queue.step(x="t", y="waiting", source=self.main, color=COLORS["prefill"], line_width=2, mode="after", legend_label="waiting")
        compared = [self.queue.step(x="t", y=y, source=self.other, color=COLORS[c], line_width=1.5, line_dash="dashed", mode="after")
                    for y, c in (("running", "decode"), ("waiting", "prefill"))]
        # One entry for both dashed lines, so the legend fits a 390 px phone (four did not).
        self.queue.legend[0].items.append(LegendItem(label="comparison", renderers=compared))
        self.limit = Span(location=0, dimension="width", line_color=muted(self.dark), line_dash="dotted", line_width=2)
        self.queue.add_layout(self.limit)
        self.queue.add_tools(HoverTool(renderers=[run], mode="vline", tooltips=[("t", "@t{0.0} s"), ("running", "@running"),
                                                                               ("waiting", "@waiting")]))
        below_plot(self.kv, ink(self.dark))
        below_plot(self.queue, ink(self.dark))
        self.caption = TextPane("", margin=(0, 10), sizing_mode="stretch_width")
        self.parts.update(main=self.main, other=self.other, preempt=self.preempt, limit=self.limit, caption=self.caption)
        row = side_by_side((self.kv, "KV cache in use"), (self.queue, "Running and waiting requests"))
        return pn.Column(row, self.caption, sizing_mode="stretch_width", margin=0)
