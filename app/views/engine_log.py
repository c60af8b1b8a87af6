"""The lines an engine would print for this configuration, as sim wrote them."""

from __future__ import annotations

from ..viewlayer.engine_log import view_engine_log
from .base import StoreView


class EngineLog(StoreView):
    view_name = "engine_log"

    def data(self) -> dict:
        return view_engine_log(self.store.result)
