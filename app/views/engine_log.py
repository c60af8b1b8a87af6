"""The lines an engine would print for this configuration, as sim wrote them."""

from __future__ import annotations

from .. import html
from .base import StoreView


class EngineLog(StoreView):

    def refresh(self) -> None:
        r = self.store.result
        lines = r.log if r is not None else ["ERROR no configuration to evaluate: see the message above."]
        self.pane.object = html.console(lines)
