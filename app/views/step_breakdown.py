"""Where one step's time goes: memory traffic (weight read + KV read) against arithmetic.

Memory transfers and tensor-core work overlap, so a step takes the longer of the two rows, and
that row is drawn solid and marked as binding; the other is faded. All-reduce and launch overhead
do not overlap and add on after (their row appears only when they are non-zero).
"""

from __future__ import annotations

from bokeh.models import ColumnDataSource, FactorRange, HoverTool, LabelSet

from .. import format as fmt
from ..palette import COLORS, ink
from .base import StoreView, base_figure, bokeh_pane

MEMORY, COMPUTE, SERIAL = "memory", "compute", "not overlapped"
FADED = 0.4


def phase_terms(r, phase: str) -> dict[str, float] | None:
    """Seconds of each term of one step, from sim's result (None when the phase does not run)."""
    if r is None or not r.ok:
        return None
    if phase == "prefill":
        weight, kv, compute, allreduce, total = (r.prefill_weight_read_s, 0.0, r.prefill_compute_s,
                                                 r.prefill_allreduce_s or 0.0, r.ttft_s)
    else:
        if r.decode_step_s is None:
            return None
        weight, kv, compute, allreduce, total = (r.decode_weight_read_s, r.decode_kv_read_s, r.decode_compute_s,
                                                 r.decode_allreduce_s or 0.0, r.decode_step_s)
    overhead = max(total - max(weight + kv, compute) - allreduce, 0.0)
    return dict(weight=weight, kv=kv, compute=compute, allreduce=allreduce, overhead=overhead, total=total)


class StepBreakdown(StoreView):
    phase = "decode"

    def __init__(self, phase: str = "decode", **params):
        self.phase = phase
        super().__init__(**params)

    def build(self):
        fig = base_figure(self.dark, height=210, y_range=FactorRange(factors=[COMPUTE, MEMORY]))
        fig.xaxis.axis_label = "milliseconds"
        fig.x_range.start = 0
        fig.ygrid.visible = False
        self.bars = ColumnDataSource(dict(row=[], left=[], right=[], color=[], alpha=[], width=[], term=[], ms=[]))
        self.labels = ColumnDataSource(dict(row=[], x=[], text=[]))
        r = fig.hbar(y="row", left="left", right="right", height=0.62, fill_color="color", fill_alpha="alpha",
                     line_color=ink(self.dark), line_width="width", line_alpha="alpha", source=self.bars)
        fig.add_layout(LabelSet(x="x", y="row", text="text", source=self.labels, x_offset=6, text_baseline="middle",
                                text_font_size="13px", text_font_style="bold", text_color=ink(self.dark)))
        fig.add_tools(HoverTool(renderers=[r], tooltips=[("", "@term"), ("time", "@ms{0,0.00} ms")]))
        self.fig = fig
        return bokeh_pane(fig, margin=(5, 10))

    def refresh(self) -> None:
        r = self.store.result
        t = phase_terms(r, self.phase)
        s = self.store.settings
        if t is None:
            self.bars.data = {k: [] for k in self.bars.data}
            self.labels.data = dict(row=[], x=[], text=[])
            self.fig.title.text = f"{self.phase.capitalize()}: no step to show"
            return
        memory_s = t["weight"] + t["kv"]
        binding = COMPUTE if t["compute"] > memory_s else MEMORY
        serial_s = t["allreduce"] + t["overhead"]

        def alpha(row):
            return 1.0 if row in (binding, SERIAL) else FADED

        def width(row):
            return 3 if row == binding else 1

        segments = [
            (MEMORY, 0.0, t["weight"], "weights", "weight read"),
            (MEMORY, t["weight"], memory_s, "kv", "KV read"),
            (COMPUTE, 0.0, t["compute"], "compute", "tensor-core compute"),
        ]
        rows = [COMPUTE, MEMORY]
        if serial_s > 0:
            segments += [(SERIAL, 0.0, t["allreduce"], "allreduce", "all-reduce"),
                         (SERIAL, t["allreduce"], serial_s, "overhead", "launch overhead")]
            rows = [SERIAL, *rows]
        data = {k: [] for k in self.bars.data}
        for row, left, right, color, term in segments:
            data["row"].append(row)
            data["left"].append(left * 1e3)
            data["right"].append(right * 1e3)
            data["color"].append(COLORS[color])
            data["alpha"].append(alpha(row))
            data["width"].append(width(row))
            data["term"].append(term)
            data["ms"].append((right - left) * 1e3)
        self.fig.y_range.factors = rows
        self.bars.data = data
        ends = {MEMORY: memory_s, COMPUTE: t["compute"], SERIAL: serial_s}
        self.labels.data = dict(
            row=rows, x=[ends[row] * 1e3 for row in rows],
            text=[fmt.ms(ends[row]) + ("  \u25c0 binds" if row == binding else "") for row in rows])
        self.fig.x_range.end = max(ends.values()) * 1e3 * 1.35
        if self.phase == "prefill":
            self.fig.title.text = f"Prefill: one {s.prompt_tokens:,}-token prompt, {fmt.ms(t['total'])} ({r.prefill_bound}-bound)"
        else:
            self.fig.title.text = f"Decode: one step for {r.batch:,} sequences, {fmt.ms(t['total'])} ({r.decode_bound}-bound)"
