"""What every view shares: a store to read, a layout built once, a refresh on every change.

Views build their Bokeh figures and panes once and afterwards only replace data (a
ColumnDataSource's columns, a pane's text). Rebuilding a figure per slider move would resend the
whole plot model to the browser; replacing columns sends a few hundred bytes.
"""

from __future__ import annotations

import panel as pn
import param
from bokeh.plotting import figure

from ..html import BASE_CSS
from ..palette import ink, muted
from ..store import Store


def is_dark() -> bool:
    return pn.config.theme == "dark"


class StoreView(pn.viewable.Viewer):
    store = param.ClassSelector(class_=Store, doc="the store this view displays")
    watched = ("result",)  # store params whose change calls refresh()

    def __init__(self, **params):
        super().__init__(**params)
        self.dark = is_dark()
        self._layout = self.build()
        self.store.param.watch(lambda *_: self.refresh(), list(self.watched))
        self.refresh()

    def build(self) -> pn.viewable.Viewable:
        """Most views are one HTML pane that refresh() rewrites; chart views override this."""
        self.pane = html_pane(margin=(5, 10))
        return self.pane

    def refresh(self) -> None:
        raise NotImplementedError

    def __panel__(self):
        return self._layout


class TextPane(pn.pane.HTML):
    """An HTML pane whose updates resend only the text.

    Panel's HTML pane recomputes every property of its model on each update, design and
    stylesheets included: about 2 ms of server time per pane per slider move, which five panes
    turn into a third of the latency budget. Only `object` ever changes here, so only `text` is sent.
    """

    def _update(self, ref, model) -> None:
        model.text = self._transform_object(self.object)["object"]


def html_pane(**kw) -> TextPane:
    """An HTML pane for text this package builds (every interpolated string escaped in app.html)."""
    return TextPane("", stylesheets=[BASE_CSS], sizing_mode="stretch_width", **kw)


def base_figure(dark: bool, height: int, **kw):
    """A figure styled for the panels: no toolbar clutter, transparent so the page's theme shows."""
    fig = figure(height=height, sizing_mode="stretch_width", toolbar_location=None, tools="",
                 background_fill_alpha=0, border_fill_alpha=0, outline_line_color=None, **kw)
    text, faint = ink(dark), muted(dark)
    fig.title.text_color = text
    fig.title.text_font_size = "15px"
    fig.title.text_font_style = "bold"
    for axis in (*fig.xaxis, *fig.yaxis):
        axis.axis_label_text_color = faint
        axis.major_label_text_color = text
        axis.axis_line_color = faint
        axis.major_tick_line_color = faint
        axis.minor_tick_line_color = None
        axis.axis_label_text_font_style = "normal"
        axis.major_label_text_font_size = "12px"
    for grid in (*fig.xgrid, *fig.ygrid):
        grid.grid_line_color = faint
        grid.grid_line_alpha = 0.25
    return fig


def bokeh_pane(fig, **kw) -> pn.pane.Bokeh:
    return pn.pane.Bokeh(fig, sizing_mode="stretch_width", **kw)
