"""One GPU's HBM as a single bar, filled left to right in the order an engine fills it:
reserve it never touches, weights, activation reserve, then the KV pool (used by the batch,
and free). A vertical line marks the card's capacity, so weights that do not fit visibly cross it.
"""

from __future__ import annotations

import panel as pn
from bokeh.models import ColumnDataSource, HoverTool, LabelSet, Span
from kvlab.sim import catalog

from .. import format as fmt
from .. import html
from ..palette import COLORS, ink
from ..store import Store
from .base import StoreView, base_figure, bokeh_pane, html_pane

MIN_LABEL_SHARE = 0.07  # a segment narrower than 7% of the card gets no in-bar label (the legend still names it)
SEGMENTS = (
    ("context_reserve", "Driver & context reserve"),
    ("non_torch", "Non-torch memory"),
    ("weights", "Weights"),
    ("activation", "Activation reserve"),
    ("kv_used", "KV pool: used by the batch"),
    ("kv_free", "KV pool: free"),
)
DARK_TEXT_ON = {"activation", "kv_free", "context_reserve"}  # light fills need dark text


def segment_bytes(store: Store) -> dict[str, float]:
    r = store.result
    if r is None or not r.ok:
        return {key: 0.0 for key, _ in SEGMENTS}
    return {
        "context_reserve": r.context_reserve_bytes,
        "non_torch": r.non_torch_bytes,
        "weights": r.weight_bytes,
        "activation": r.activation_reserve_bytes,
        "kv_used": r.kv_pool_used_bytes,
        "kv_free": max(r.kv_pool_bytes - r.kv_pool_used_bytes, 0.0),
    }


class HbmBar(StoreView):
    def build(self):
        fig = base_figure(self.dark, height=150, y_range=(-0.6, 0.6), title="HBM, in the order the engine fills it")
        fig.yaxis.visible = False
        fig.ygrid.visible = False
        fig.xaxis.axis_label = "GiB"
        fig.x_range.start = 0
        self.source = ColumnDataSource(dict(left=[], right=[], color=[], name=[], gib=[], share=[], label=[], label_x=[],
                                            label_color=[], key=[]))
        bars = fig.hbar(y=0, height=0.8, left="left", right="right", fill_color="color", line_color=ink(self.dark),
                        line_alpha=0.35, source=self.source)
        fig.add_layout(LabelSet(x="label_x", y=0, text="label", text_align="center", text_baseline="middle",
                                text_font_size="13px", text_font_style="bold", text_color="label_color", source=self.source))
        self.capacity = Span(location=0, dimension="height", line_color=ink(self.dark), line_width=2, line_dash="dashed")
        fig.add_layout(self.capacity)
        fig.add_tools(HoverTool(renderers=[bars], tooltips=[("", "@name"), ("size", "@gib{0,0.00} GiB"),
                                                             ("share of card", "@share{0.0%}")]))
        self.fig = fig
        # The legend is HTML, not a Bokeh Legend: it wraps on a phone, reads the live GiB, and is
        # text a screen reader and the browser tests can find.
        self.legend = html_pane(margin=(0, 10, 5, 10))
        return pn.Column(bokeh_pane(fig, margin=(5, 10, 0, 10)), self.legend, sizing_mode="stretch_width", margin=0)

    def refresh(self) -> None:
        r = self.store.result
        sizes = segment_bytes(self.store)
        capacity = r.capacity_bytes if r is not None and r.ok else 1.0
        cols = {k: [] for k in self.source.data}
        left = 0.0
        for key, name in SEGMENTS:
            size = sizes[key]
            right = left + size
            share = size / capacity
            cols["key"].append(key)
            cols["left"].append(left / 2**30)
            cols["right"].append(right / 2**30)
            cols["color"].append(COLORS[key])
            cols["name"].append(name)
            cols["gib"].append(size / 2**30)
            cols["share"].append(share)
            cols["label"].append(fmt.gib(size) if share >= MIN_LABEL_SHARE else "")
            cols["label_x"].append((left + right) / 2 / 2**30)
            cols["label_color"].append("#1F2328" if key in DARK_TEXT_ON else "#FFFFFF")
            left = right
        self.source.data = cols
        self.legend.object = html.legend([(COLORS[key], name, fmt.gib(sizes[key]), key) for key, name in SEGMENTS
                                          if sizes[key] > 0 or key in ("weights", "kv_used", "kv_free")])
        self.capacity.location = capacity / 2**30
        self.fig.x_range.end = max(capacity, left) / 2**30 * 1.01
        gpu = catalog.gpu(self.store.settings.gpu).name
        rank = f" (one of {self.store.settings.tp} ranks)" if self.store.settings.tp > 1 else ""
        self.fig.title.text = f"HBM of one {gpu}{rank}, {capacity / 2**30:,.1f} GiB"
