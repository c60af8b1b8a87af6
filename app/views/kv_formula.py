"""Bytes per token, with the formula written out in this model's own numbers."""

from __future__ import annotations

from ..viewlayer.kv_formula import view_kv_formula
from .base import StoreView


class KvFormula(StoreView):
    view_name = "kv_formula"

    def data(self) -> dict:
        return view_kv_formula(self.store.result)
