"""The roofline: attainable FLOP/s against arithmetic intensity (FLOPs per byte moved), with
this configuration's prefill and decode steps plotted where they land.

The solid roof uses the efficiency profile's achieved fractions (what the step times in this
panel are computed with); the faint dashed roof is the datasheet. Left of the ridge a step is
limited by bandwidth, right of it by the tensor cores. Points sit at the step's FLOPs divided by
its time, so a step that also waits on an all-reduce or launch overhead sits below the roof.
"""

from __future__ import annotations

from bokeh.models import ColumnDataSource, CustomJSTickFormatter, HoverTool, NumeralTickFormatter, Span
from kvlab.sim import load_profile

from .. import format as fmt
from ..palette import COLORS, ink, muted
from .base import StoreView, base_figure, bokeh_pane

FLOPS_TICKS = """
const units = [[1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M']];
for (const [scale, name] of units) { if (tick >= scale) { return (tick / scale).toLocaleString('en-US') + ' ' + name; } }
return tick.toLocaleString('en-US');
"""


class RooflineChart(StoreView):
    def build(self):
        fig = base_figure(self.dark, height=340, x_axis_type="log", y_axis_type="log",
                          title="Roofline: where prefill and decode land")
        fig.xaxis.axis_label = "arithmetic intensity (FLOP per byte of HBM traffic)"
        fig.yaxis.axis_label = "FLOP/s (one GPU)"
        fig.xaxis.formatter = NumeralTickFormatter(format="0,0.[0]")
        fig.yaxis.formatter = CustomJSTickFormatter(code=FLOPS_TICKS)
        self.roof = ColumnDataSource(dict(x=[], y=[]))
        self.datasheet = ColumnDataSource(dict(x=[], y=[]))
        self.points = ColumnDataSource(dict(x=[], y=[], color=[], marker=[], name=[], text=[], flops=[], dx=[], align=[]))
        fig.line(x="x", y="y", source=self.datasheet, line_dash="dashed", line_width=1.5, color=muted(self.dark),
                 legend_label="datasheet peak")
        fig.line(x="x", y="y", source=self.roof, line_width=3, color=COLORS["roof"] if not self.dark else "#C8C8C8",
                 legend_label="achievable (profile)")
        pts = fig.scatter(x="x", y="y", source=self.points, size=16, color="color", marker="marker",
                          line_color=ink(self.dark), line_width=2)
        fig.text(x="x", y="y", text="text", source=self.points, x_offset="dx", y_offset=-10, text_align="align",
                 text_font_size="13px", text_font_style="bold", text_color=ink(self.dark))
        self.ridge = Span(location=1, dimension="height", line_dash="dotted", line_color=muted(self.dark))
        fig.add_layout(self.ridge)
        fig.legend.location = "bottom_right"
        fig.legend.background_fill_alpha = 0
        fig.legend.border_line_alpha = 0
        fig.legend.label_text_color = ink(self.dark)
        fig.add_tools(HoverTool(renderers=[pts], tooltips=[("", "@name"), ("intensity", "@x{0,0.0} FLOP/B"),
                                                           ("achieved", "@flops")]))
        self.fig = fig
        return bokeh_pane(fig, margin=(5, 10))

    def refresh(self) -> None:
        r = self.store.result
        if r is None or not r.ok:
            for src in (self.roof, self.datasheet):
                src.data = dict(x=[], y=[])
            self.points.data = {k: [] for k in self.points.data}
            return
        profile = load_profile(r.profile)
        bw_achieved = r.hbm_bandwidth_bytes_per_s * profile.bandwidth_efficiency
        peak_achieved = r.ridge_intensity * bw_achieved  # sim's ridge = achieved peak / achieved bandwidth
        pts = []
        if r.ttft_s:
            pts.append(("prefill", r.prefill_arithmetic_intensity, r.prefill_flops / r.ttft_s, "triangle",
                        f"prefill ({fmt.tokens(self.store.settings.prompt_tokens)} tokens)"))
        if r.decode_step_s:
            pts.append(("decode", r.decode_arithmetic_intensity, r.decode_flops / r.decode_step_s, "circle",
                        f"decode (batch {r.batch:,})"))
        xs = [p[1] for p in pts if p[1] > 0] or [1.0]
        x0 = min(0.3, min(xs) / 4)
        x1 = max(3e4, max(xs) * 4)
        self.roof.data = dict(x=[x0, r.ridge_intensity, x1], y=[x0 * bw_achieved, peak_achieved, peak_achieved])
        datasheet_ridge = r.peak_flops / r.hbm_bandwidth_bytes_per_s
        self.datasheet.data = dict(x=[x0, datasheet_ridge, x1],
                                   y=[x0 * r.hbm_bandwidth_bytes_per_s, r.peak_flops, r.peak_flops])
        self.points.data = dict(
            x=[p[1] for p in pts], y=[p[2] for p in pts], color=[COLORS[p[0]] for p in pts],
            marker=[p[3] for p in pts], name=[p[4] for p in pts], text=[p[0] for p in pts],
            flops=[fmt.flops(p[2]) for p in pts],
            # prefill sits right of the ridge, decode left of it: label each on its open side
            dx=[-14 if p[1] > r.ridge_intensity else 14 for p in pts],
            align=["right" if p[1] > r.ridge_intensity else "left" for p in pts])
        self.ridge.location = r.ridge_intensity
        self.fig.x_range.start, self.fig.x_range.end = x0, x1
        self.fig.y_range.start = x0 * bw_achieved / 1.5
        self.fig.y_range.end = r.peak_flops * 2.5
        self.fig.title.text = f"Roofline: the ridge is at {r.ridge_intensity:,.0f} FLOP per byte"
