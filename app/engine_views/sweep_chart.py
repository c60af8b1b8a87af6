"""p50 and p99 latency against request rate: where the curve leaves its floor is the cliff. Each
point is a full run of the current settings at that Poisson rate; the shaded band is p99 TTFT's
range over three random seeds of the workload, and the caption gives the knee's range."""

from __future__ import annotations

import panel as pn
from bokeh.models import ColumnDataSource, HoverTool, Label, Span

from ..viewlayer.lab_sweep import FIRST_CAPTION
from ..viewlayer.palette import COLORS, OKABE_ITO, ink, muted
from ..views.base import UNDER_TITLE, TextPane, base_figure, bokeh_pane, chart_title_pane
from .base import LabView, below_plot


class RateSweep(LabView):
    view_name = "lab_sweep"
    watched = ("sweep", "sweep_running")

    def build(self):
        s = self.store.settings
        self.button = pn.widgets.Button(label="Run the sweep", color="primary", width=150, margin=(18, 10, 5, 10),
                                        css_classes=["kv-w-lab-sweep"])
        self.button.on_click(lambda *_: self.store.run_sweep())
        low = pn.widgets.FloatInput.from_param(s.param.sweep_low_per_s, width=130, css_classes=["kv-w-lab-sweep-low-per-s"])
        high = pn.widgets.FloatInput.from_param(s.param.sweep_high_per_s, width=130, css_classes=["kv-w-lab-sweep-high-per-s"])
        points = pn.widgets.IntInput.from_param(s.param.sweep_points, width=110, css_classes=["kv-w-lab-sweep-points"])
        fig = base_figure(self.dark, height=298, y_axis_type="log")
        fig.xaxis.axis_label = "request rate (requests/s)"
        fig.yaxis.axis_label = "latency (s)"
        self.src = ColumnDataSource(dict(rate=[], ttft50=[], ttft99=[], e2e99=[], kv=[], tput=[]))
        self.band = ColumnDataSource(dict(rate=[], low=[], high=[]))
        fig.varea(x="rate", y1="low", y2="high", source=self.band, fill_color=COLORS["kv"], fill_alpha=0.2,
                  legend_label="TTFT p99, range over seeds")
        r99 = fig.line(x="rate", y="ttft99", source=self.src, color=COLORS["kv"], line_width=3, legend_label="TTFT p99")
        fig.scatter(x="rate", y="ttft99", source=self.src, color=COLORS["kv"], size=8)
        fig.line(x="rate", y="ttft50", source=self.src, color=COLORS["prefill"], line_width=2, legend_label="TTFT p50")
        fig.scatter(x="rate", y="ttft50", source=self.src, color=COLORS["prefill"], size=6)
        fig.line(x="rate", y="e2e99", source=self.src, color=OKABE_ITO["blue"], line_width=2, line_dash="dashed", legend_label="E2E p99")
        fig.add_tools(HoverTool(renderers=[r99], mode="vline", tooltips=[
            ("rate", "@rate{0.00}/s"), ("TTFT p50", "@ttft50{0.000} s"), ("TTFT p99", "@ttft99{0.000} s"), ("E2E p99", "@e2e99{0.0} s"),
            ("KV in use", "@kv{0%}"), ("completed", "@tput{0.00} req/s")]))
        self.knee = Span(location=0, dimension="height", line_color=muted(self.dark), line_dash="dotted", line_width=2, visible=False)
        self.knee_label = Label(x=0, y=10, y_units="screen", text="", text_color=ink(self.dark), text_font_size="12px", x_offset=4,
                                visible=False)
        fig.add_layout(self.knee)
        fig.add_layout(self.knee_label)
        below_plot(fig, ink(self.dark))
        self.caption = TextPane(FIRST_CAPTION, margin=(0, 10), sizing_mode="stretch_width")
        # Shown once there is a sweep to draw. The Column is shown, not the Bokeh pane: a change to a
        # Bokeh pane's own layout parameters makes Panel (1.9) copy the rendered figure's stylesheets
        # back into the pane, which raises a TypeError (ImportedStyleSheet is not a str) on the server.
        self.chart = pn.Column(chart_title_pane("Latency against request rate"), bokeh_pane(fig, margin=UNDER_TITLE), visible=False,
                               sizing_mode="stretch_width", margin=0,
                               css_classes=["kv-w-lab-sweep-chart"])
        self.parts.update({"w.lab-sweep": self.button, "w.lab-sweep-low-per-s": low, "w.lab-sweep-high-per-s": high,
                           "w.lab-sweep-points": points, "src": self.src, "band": self.band, "knee": self.knee,
                           "knee_label": self.knee_label, "caption": self.caption, "w.lab-sweep-chart": self.chart})
        # The range boxes and the button wrap on a phone instead of running off its edge.
        controls = pn.FlexBox(low, high, points, self.button, flex_wrap="wrap", align_items="end", margin=0,
                              sizing_mode="stretch_width")
        return pn.Column(controls, self.caption, self.chart, sizing_mode="stretch_width", margin=0)
