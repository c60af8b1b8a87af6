"""What the serving lab's views share: a LabStore to read, a layout built once, data replaced on
every new result (the same rule as app/views/base.py: never rebuild a figure, only its columns).

What each view shows is its function in the view layer (`viewlayer.lab_session.LAB_VIEWS`, standard
library), the same function the static site's worker calls: `data()` asks the store's session for it,
and `apply()` sets each part on the model `build()` registered in `parts`.
"""

from __future__ import annotations

import panel as pn
import param

from ..viewlayer.lab_status import seconds  # noqa: F401  (re-exported for the lab's modules)
from ..viewlayer.palette import OKABE_ITO, muted
from ..views.base import UNDER_TITLE, StoreView, bokeh_pane, chart_title_pane
from .store import LabStore

MAIN_COLOR = OKABE_ITO["blue"]
COMPARE_COLOR = OKABE_ITO["orange"]
MARK_COLORS = {"p50": OKABE_ITO["bluish_green"], "p90": OKABE_ITO["reddish_purple"], "p99": OKABE_ITO["vermillion"],
               "mean": "#6B6B6B"}
# The marks' labels: 12 px text on the page's background, so each needs 4.5:1 against it (WCAG
# 2.1, 1.4.3); the lines' own colours reach 2.9-3.9:1. A shade of the line's hue in each theme:
# darker on white, lighter on the dark theme's #212529 (the ratios: tests/app/test_palette.py).
MARK_LABEL_COLORS = {
    False: {"p50": "#00795A", "p90": "#A8457F", "p99": "#B34700", "mean": muted(False)},
    True: {"p50": "#2FC096", "p90": OKABE_ITO["reddish_purple"], "p99": "#FF8A4C", "mean": muted(True)},
}
# The marks' lines: 3:1 against the page (WCAG 2.1, 1.4.11) in both themes. The mean's grey is
# 2.9:1 on the dark theme's #212529; there it takes its label's colour.
MARK_LINE_COLORS = {False: MARK_COLORS, True: {**MARK_COLORS, "mean": MARK_LABEL_COLORS[True]["mean"]}}


class LabView(StoreView):
    """A view of the lab store: StoreView's life cycle, refreshed on the result and the comparison."""

    store = param.ClassSelector(class_=LabStore, doc="the lab store this view displays")
    watched = ("result", "compare")

    def values(self) -> dict:
        """The settings as the view layer reads them (a view with its own chooser adds its choice)."""
        return self.store.session.values

    def data(self) -> dict:
        return self.store.session.view_data(self.view_name, self.values())


def below_plot(fig, text_color: str) -> None:
    """Move the legend under the plot, in one row, so it never covers the data."""
    legend = fig.legend[0]
    legend.orientation = "horizontal"
    legend.background_fill_alpha = 0
    legend.border_line_alpha = 0
    legend.label_text_color = text_color
    legend.click_policy = "hide"
    # Tighter than Bokeh's defaults (padding 10, keys 20 px wide), so three entries fit a 320 px window.
    legend.spacing = 10
    legend.padding = 4
    legend.glyph_width = 16
    fig.add_layout(legend, "below")


def side_by_side(*charts) -> pn.FlexBox:
    """(figure, title) pairs in one row that wraps into a column on a narrow window."""
    columns = (pn.Column(chart_title_pane(title), bokeh_pane(fig, margin=UNDER_TITLE), margin=0,
                         styles={"flex": "1 1 420px", "min-width": "0"}) for fig, title in charts)
    return pn.FlexBox(*columns, flex_wrap="wrap", sizing_mode="stretch_width", margin=0)
