"""The lines an engine would print for this configuration, as sim wrote them."""

from __future__ import annotations

from .. import html
from .base import StoreView, html_pane


class EngineLog(StoreView):
    def build(self):
        self.pane = html_pane(margin=(5, 10))
        return self.pane

    def refresh(self) -> None:
        r = self.store.result
        lines = r.log if r is not None else ["ERROR no configuration to evaluate: see the message above."]
        self.pane.object = html.console(lines)
