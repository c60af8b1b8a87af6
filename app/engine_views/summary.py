"""The run at a glance: progress with a Cancel button, input problems, and the headline numbers
as distributions (p50 and p99 side by side, never a lone mean)."""

from __future__ import annotations

import panel as pn

from .. import html
from ..palette import COLORS
from ..views.base import html_pane
from .base import LabView, seconds
from .settings import policy_label


class RunStatus(LabView):
    """Progress of the run (and of a sweep), with one button that cancels whatever is running."""

    watched = ("running", "progress", "done_requests", "status", "sweep_running", "sweep_progress")

    def build(self):
        self.bar = pn.indicators.Progress(value=0, max=1000, sizing_mode="stretch_width", margin=(12, 10, 0, 10), height=14,
                                          css_classes=["kv-w-lab-progress"])
        self.text = html_pane(margin=(0, 10))
        self.cancel = pn.widgets.Button(label="Cancel", color="warning", width=100, margin=(5, 10),
                                        css_classes=["kv-w-lab-cancel"])
        self.cancel.on_click(lambda *_: self.store.cancel())
        return pn.Row(pn.Column(self.bar, self.text, sizing_mode="stretch_width", margin=0), self.cancel,
                      sizing_mode="stretch_width", margin=0)

    def refresh(self) -> None:
        st = self.store
        busy = st.running or st.sweep_running
        fraction = st.progress if st.running else (st.sweep_progress if st.sweep_running else 1.0)
        self.bar.value = int(round(fraction * 1000))
        self.bar.active = busy
        self.cancel.disabled = not busy
        label = st.status if st.running or not st.sweep_running else f"sweeping request rates\u2026 {st.sweep_progress:.0%}"
        if st.running:
            label = f"{st.status} {st.progress:.0%}"
            if st.total_requests:
                label += f" ({st.done_requests:,} of {st.total_requests:,} requests in this run)"
        self.text.object = f'<p class="kv-caption" data-kv="lab-status">{html.esc(label)}</p>'


class LabNotices(LabView):
    watched = ("issues", "trace_note", "result")


    def refresh(self) -> None:
        st = self.store
        parts = []
        if st.issues:
            parts.append(html.notice("error", "This configuration cannot run:",
                                     [f"{i['field']}: {i['message']}" for i in st.issues], "lab-errors"))
        if st.trace_note:
            kind = "error" if st.trace_note.startswith("Trace refused") else "info"
            parts.append(html.notice(kind, "Trace", [st.trace_note], "lab-trace"))
        r = st.result
        if r is not None and r.warnings:
            parts.append(html.notice("warn", "The memory budget says:", r.warnings, "lab-warnings"))
        self.pane.object = "".join(parts)
        self.pane.visible = bool(parts)


class SummaryTiles(LabView):

    def refresh(self) -> None:
        r = self.store.result
        if r is None:
            self.pane.object = ""
            return
        pre_caption = "no sequence lost its blocks" if not r.preemptions else f"{r.swaps:,} by swap, the rest recomputed"
        self.pane.object = html.tiles(
            html.tile("lab-ttft-p50", "TTFT p50", seconds(r.ttft_s.p50), f"p99 {seconds(r.ttft_s.p99)}", COLORS["prefill"], hero=True),
            html.tile("lab-ttft-p99", "TTFT p99", seconds(r.ttft_s.p99), f"max {seconds(r.ttft_s.max)}", COLORS["prefill"]),
            html.tile("lab-itl-p50", "ITL p50", seconds(r.itl_s.p50), f"p99 {seconds(r.itl_s.p99)}", COLORS["decode"], hero=True),
            html.tile("lab-itl-p99", "ITL p99", seconds(r.itl_s.p99), f"max {seconds(r.itl_s.max)}", COLORS["decode"]),
            html.tile("lab-goodput", "Goodput", f"{r.goodput_per_s:.2f} req/s",
                      f"{r.goodput_fraction:.0%} meet TTFT \u2264 {r.ttft_target_s:g} s, ITL \u2264 {r.itl_target_s * 1e3:g} ms",
                      COLORS["compute"]),
            html.tile("lab-throughput", "Throughput", f"{r.output_tokens_per_s:,.0f} tok/s", f"{r.throughput_per_s:.2f} requests/s",
                      COLORS["weights"]),
            html.tile("lab-kv", "KV cache in use", f"{r.mean_kv_usage:.0%}", f"mean; peak {r.peak_kv_blocks / r.kv_pool_blocks:.0%} "
                      f"of {r.kv_pool_tokens:,} tokens", COLORS["kv"]),
            html.tile("lab-preemptions", "Preemptions", f"{r.preemptions:,}", pre_caption, COLORS["kv"]),
        ) + (f'<p class="kv-caption" data-kv="lab-policy">{html.esc(policy_label(r.policy))}; {r.completed:,} requests on '
             f'{r.instances} instance(s), {r.gpus} GPU(s); mean running {r.mean_running:.1f}, waiting {r.mean_waiting:.1f}; '
             f'prefix hit rate {r.prefix_hit_rate:.0%}. The KV pool holds {r.kv_pool_tokens:,} tokens by '
             f'{html.esc(self.store.settings.engine)}\'s accounting (whole blocks, after its memory profiling); the admission '
             f'panel counts by the engine chosen there (its default, "textbook", has no blocks or profiling), so pick the '
             f'same engine there to compare pools.</p>')
