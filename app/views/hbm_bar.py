"""One GPU's HBM as a single bar, filled left to right in the order an engine fills it (what the
bar shows is `viewlayer.hbm_bar`)."""

from __future__ import annotations

import panel as pn
from bokeh.models import ColumnDataSource, HoverTool, LabelSet, Range1d, Span

from ..palette import ink
from ..viewlayer.hbm_bar import COLUMNS, view_hbm_bar
from .base import StoreView, base_figure, bokeh_pane, chart_title_pane, html_pane


class HbmBar(StoreView):
    view_name = "hbm_bar"

    def build(self):
        # Explicit ranges: BokehJS's DataRange1d keeps the bounds it started with, so ends the view
        # sets later would not show (in the served app or the static site).
        fig = base_figure(self.dark, height=128, y_range=(-0.6, 0.6), x_range=Range1d(0, 1))
        fig.yaxis.visible = False
        fig.ygrid.visible = False
        fig.xaxis.axis_label = "GiB"
        self.source = ColumnDataSource({k: [] for k in COLUMNS})
        bars = fig.hbar(y=0, height=0.8, left="left", right="right", fill_color="color", line_color=ink(self.dark),
                        line_alpha=0.35, source=self.source)
        fig.add_layout(LabelSet(x="label_x", y=0, text="label", text_align="center", text_baseline="middle",
                                text_font_size="13px", text_font_style="bold", text_color="label_color", source=self.source))
        self.capacity = Span(location=0, dimension="height", line_color=ink(self.dark), line_width=2, line_dash="dashed")
        fig.add_layout(self.capacity)
        fig.add_tools(HoverTool(renderers=[bars], tooltips=[("", "@name"), ("size", "@gib{0,0.00} GiB"),
                                                             ("share of card", "@share{0.0%}")]))
        self.fig = fig
        self.legend = html_pane(margin=(0, 10, 5, 10))
        self.parts.update(bars=self.source, legend=self.legend, capacity=self.capacity, x_range=fig.x_range, title=chart_title_pane())
        return pn.Column(self.parts["title"], bokeh_pane(fig, margin=(0, 10, 0, 10)), self.legend, sizing_mode="stretch_width", margin=0)

    def data(self) -> dict:
        return view_hbm_bar(self.store.result, self.store.settings.values())
