"""What the serving lab's views share: a LabStore to read, a layout built once, data replaced on
every new result (the same rule as app/views/base.py: never rebuild a figure, only its columns)."""

from __future__ import annotations

import param

from ..palette import OKABE_ITO
from ..views.base import StoreView
from .store import LabStore

MAIN_COLOR = OKABE_ITO["blue"]
COMPARE_COLOR = OKABE_ITO["orange"]
MARK_COLORS = {"p50": OKABE_ITO["bluish_green"], "p90": OKABE_ITO["reddish_purple"], "p99": OKABE_ITO["vermillion"],
               "mean": "#6B6B6B"}


class LabView(StoreView):
    """A view of the lab store: StoreView's life cycle, refreshed on the result and the comparison."""

    store = param.ClassSelector(class_=LabStore, doc="the lab store this view displays")
    watched = ("result", "compare")


def seconds(x: float) -> str:
    """A latency for labels: 84 ms, 1.23 s, 12.3 s, 123 s."""
    if x < 1:
        return f"{x * 1e3:.3g} ms"
    return f"{x:.3g} s"


def below_plot(fig, text_color: str) -> None:
    """Move the legend under the plot, in one row, so it never covers the data."""
    legend = fig.legend[0]
    legend.orientation = "horizontal"
    legend.background_fill_alpha = 0
    legend.border_line_alpha = 0
    legend.label_text_color = text_color
    legend.click_policy = "hide"
    legend.spacing = 12
    fig.add_layout(legend, "below")
