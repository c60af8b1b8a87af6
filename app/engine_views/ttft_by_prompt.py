"""The serving lab's table of time to first token by prompt length (app/viewlayer/ttft_by_prompt.py)."""

from __future__ import annotations

from ..viewlayer.html import BASE_CSS
from ..viewlayer.ttft_by_prompt import TABLE_CSS
from ..views.base import TextPane
from .base import LabView


class TtftByPrompt(LabView):
    view_name = "lab_ttft_by_prompt"

    def build(self):
        self.pane = self.parts["pane"] = TextPane("", stylesheets=[BASE_CSS, TABLE_CSS], sizing_mode="stretch_width", margin=(5, 10))
        return self.pane
