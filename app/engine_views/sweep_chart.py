"""p50 and p99 latency against request rate: where the curve leaves its floor is the cliff. Each
point is a full run of the current settings at that Poisson rate; the shaded band is p99 TTFT's
range over three random seeds of the workload, and the caption gives the knee's range."""

from __future__ import annotations

import panel as pn
from bokeh.models import ColumnDataSource, HoverTool, Label, Span

from .. import html
from ..palette import COLORS, OKABE_ITO, ink, muted
from ..views.base import base_figure, bokeh_pane
from .base import LabView, below_plot, seconds


class RateSweep(LabView):
    watched = ("sweep", "sweep_running")

    def build(self):
        s = self.store.settings
        self.button = pn.widgets.Button(label="Run the sweep", color="primary", width=150, margin=(18, 10, 5, 10),
                                        css_classes=["kv-w-lab-sweep"])
        self.button.on_click(lambda *_: self.store.run_sweep())
        low = pn.widgets.FloatInput.from_param(s.param.sweep_low_per_s, width=130)
        high = pn.widgets.FloatInput.from_param(s.param.sweep_high_per_s, width=130)
        points = pn.widgets.IntInput.from_param(s.param.sweep_points, width=110)
        fig = base_figure(self.dark, height=320, y_axis_type="log", title="Latency against request rate")
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
        self.caption = pn.pane.HTML('<p class="kv-caption" data-kv="lab-sweep">Press "Run the sweep" to run the current settings '
                                    'at each rate (Poisson arrivals).</p>', margin=(0, 10), sizing_mode="stretch_width")
        # Shown once there is a sweep to draw. The Column is shown, not the Bokeh pane: a change to a
        # Bokeh pane's own layout parameters makes Panel (1.9) copy the rendered figure's stylesheets
        # back into the pane, which raises a TypeError (ImportedStyleSheet is not a str) on the server.
        self.chart = pn.Column(bokeh_pane(fig, margin=(5, 10)), visible=False, sizing_mode="stretch_width", margin=0)
        # The range boxes and the button wrap on a phone instead of running off its edge.
        controls = pn.FlexBox(low, high, points, self.button, flex_wrap="wrap", align_items="end", margin=0,
                              sizing_mode="stretch_width")
        return pn.Column(controls, self.caption, self.chart, sizing_mode="stretch_width", margin=0)

    def refresh(self) -> None:
        self.button.disabled = self.store.sweep_running
        sw = self.store.sweep
        if sw is None:
            return
        pts = sw.points
        self.chart.visible = bool(pts)
        self.src.data = dict(rate=[p.rate_per_s for p in pts], ttft50=[max(p.ttft_p50_s, 1e-4) for p in pts],
                             ttft99=[max(p.ttft_p99_s, 1e-4) for p in pts], e2e99=[max(p.e2e_p99_s, 1e-4) for p in pts],
                             kv=[p.mean_kv_usage for p in pts], tput=[p.throughput_per_s for p in pts])
        self.band.data = dict(rate=[b.rate_per_s for b in sw.band], low=[max(b.ttft_p99_low_s, 1e-4) for b in sw.band],
                              high=[max(b.ttft_p99_high_s, 1e-4) for b in sw.band])
        k = sw.knee_rate_per_s
        self.knee.visible = self.knee_label.visible = k is not None
        if k is not None:
            self.knee.location = k
            self.knee_label.x = k
            self.knee_label.text = f"knee at {k:g} req/s"
            at = next(p for p in pts if p.rate_per_s == k)
            times = at.ttft_p99_s / max(pts[0].ttft_p99_s, 1e-9)
            note = (f"The p99 TTFT leaves its floor at {k:g} requests/s ({seconds(at.ttft_p99_s)}, {times:.0f}x the lightest "
                    f"load), with the KV cache {at.mean_kv_usage:.0%} full.")
        else:
            low, high = pts[0].rate_per_s if pts else 0, pts[-1].rate_per_s if pts else 0
            peak_kv = max((p.mean_kv_usage for p in pts), default=0.0)
            note = (f"The cliff is beyond this sweep: from {low:g} to {high:g} requests/s the p99 TTFT stays within 3x its "
                    f"light-load value (the KV cache at most {peak_kv:.0%} full on average). Set \"Sweep to\" higher, "
                    f"e.g. {2 * high:g}, and run it again to find it.")
        found = sorted(x for x in sw.seed_knees if x is not None)
        if len(sw.seed_knees) > 1:
            spread = (f"{found[0]:g} req/s in every seed" if found and found[0] == found[-1] and len(found) == len(sw.seed_knees)
                      else f"{found[0]:g} to {found[-1]:g} req/s" if found else "none in range")
            note += (f" Over {len(sw.seed_knees)} random seeds of the workload (shaded: the p99 range) the knee is at "
                     f"{spread}" + ("" if len(found) == len(sw.seed_knees) or not found else
                                    f" ({len(sw.seed_knees) - len(found)} without a knee in range)") + ".")
        if sw.cancelled:
            note = "Sweep cancelled; the points shown finished. " + note
        if sw.errors:
            note = f"{sw.errors[0]['field']}: {sw.errors[0]['message']}"
        self.caption.object = f'<p class="kv-caption" data-kv="lab-sweep">{html.esc(note)}</p>'
