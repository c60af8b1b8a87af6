"""Where one step's time goes, as sim's step model computes it (kvlab.app.viewlayer.step_breakdown):
the two overlapped rows of the whole-step model, or one bar per kernel of a per-kernel profile
(the figure's height follows the number of rows)."""

from __future__ import annotations

from bokeh.models import ColumnDataSource, FactorRange, HoverTool, LabelSet, Range1d

from ..viewlayer.palette import ink
from ..viewlayer.step_breakdown import BAR_COLUMNS, COMPUTE, MEMORY, phase_terms, view_step_breakdown
from .base import StoreView, base_figure, chart_with_summary


class StepBreakdown(StoreView):
    phase = "decode"

    def __init__(self, phase: str = "decode", **params):
        self.phase = phase
        self.view_name = f"step_{phase}"
        super().__init__(**params)

    def build(self):
        fig = base_figure(self.dark, height=160, y_range=FactorRange(factors=[COMPUTE, MEMORY]), x_range=Range1d(0, 1))
        fig.xaxis.axis_label = "milliseconds"
        fig.ygrid.visible = False
        self.bars = ColumnDataSource({k: [] for k in BAR_COLUMNS})
        self.labels = ColumnDataSource(dict(row=[], x=[], text=[]))
        r = fig.hbar(y="row", left="left", right="right", height=0.62, fill_color="color", fill_alpha="alpha",
                     line_color=ink(self.dark), line_width="width", line_alpha="alpha", source=self.bars)
        fig.add_layout(LabelSet(x="x", y="row", text="text", source=self.labels, x_offset=6, text_baseline="middle",
                                text_font_size="13px", text_font_style="bold", text_color=ink(self.dark)))
        fig.add_tools(HoverTool(renderers=[r], tooltips=[("", "@term"), ("time", "@ms{0,0.00} ms")]))
        self.fig = fig
        self.parts.update(bars=self.bars, labels=self.labels, y_range=fig.y_range, x_range=fig.x_range, figure=fig)
        return chart_with_summary(self, fig, legend=True)

    def data(self) -> dict:
        return view_step_breakdown(self.store.result, self.phase)


__all__ = ["StepBreakdown", "phase_terms"]
