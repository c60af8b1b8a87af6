"""One GPU's HBM as a single bar, filled left to right in the order an engine fills it (what the
bar shows is `viewlayer.hbm_bar`)."""

from __future__ import annotations

import panel as pn
from bokeh.core.properties import value
from bokeh.models import ColumnDataSource, CustomJS, CustomJSTransform, HoverTool, LabelSet, Range1d, Span
from bokeh.transform import transform

from ..viewlayer.hbm_bar import COLUMNS, view_hbm_bar
from ..viewlayer.palette import ink
from .base import StoreView, base_figure, bokeh_pane, chart_title_pane, drag_handle, html_pane

# A segment's size is written inside it only where the words fit, with LABEL_PAD_PX to spare on
# each side: how wide a segment is in pixels depends on the window, which the view layer does not
# know (on a 320 px window a 10% segment is 28 px wide, and "8.0 GiB" 33 px). The legend under
# the bar gives every size as text. BokehJS computes a label's text when the data is set, so the
# plot asks for it again when its width or the axis's end changes.
# The page's own font (Bootstrap's system-ui stack): a plain string would be read as a column's name
# (tests/app/test_bokeh_fields.py), hence value().
LABEL_FAMILY = "system-ui, sans-serif"
LABEL_TEXT = {"text_font": value(LABEL_FAMILY), "text_font_size": "13px", "text_font_style": "bold"}
LABEL_FONT = f"bold 13px {LABEL_FAMILY}"  # the same, as the canvas measures it
LABEL_PAD_PX = 3
FITTING_LABELS_JS = """
const d = source.data, w = fig.inner_width, span = fig.x_range.end - fig.x_range.start;
const ctx = document.createElement('canvas').getContext('2d');
ctx.font = font;
return xs.map((text, i) => {
  if (!text || !(w > 0) || !(span > 0)) { return ''; }
  const px = (d.right[i] - d.left[i]) / span * w;
  return ctx.measureText(text).width + 2 * pad <= px ? text : '';
});
"""


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
        fitting = CustomJSTransform(args={"source": self.source, "fig": fig, "font": LABEL_FONT, "pad": LABEL_PAD_PX},
                                    v_func=FITTING_LABELS_JS)
        labels = LabelSet(x="label_x", y=0, text=transform("label", fitting), text_align="center", text_baseline="middle",
                          text_color="label_color", source=self.source, **LABEL_TEXT)
        fig.add_layout(labels)
        again = CustomJS(args={"labels": labels}, code="labels.change.emit();")
        fig.js_on_change("inner_width", again)
        fig.x_range.js_on_change("end", again)
        self.capacity = Span(location=0, dimension="height", line_color=ink(self.dark), line_width=2, line_dash="dashed")
        fig.add_layout(self.capacity)
        # The utilisation edge: drag it (or Tab to it and use the arrow keys) to set gpu_memory_utilization.
        self.edge = drag_handle(fig, self.dark, line_width=3)
        fig.add_tools(HoverTool(renderers=[bars], tooltips=[("", "@name"), ("size", "@gib{0,0.00} GiB"),
                                                             ("share of card", "@share{0.0%}")]))
        self.fig = fig
        self.legend = html_pane(margin=(0, 10, 5, 10))
        self.parts.update(bars=self.source, legend=self.legend, capacity=self.capacity, edge=self.edge, x_range=fig.x_range,
                          title=chart_title_pane())
        return pn.Column(self.parts["title"], bokeh_pane(fig, margin=(0, 10, 0, 10)), self.legend, sizing_mode="stretch_width", margin=0)

    def data(self) -> dict:
        return view_hbm_bar(self.store.result)
