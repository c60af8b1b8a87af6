"""Panel 1's headline: how many sequences fit, and the batch the engine actually runs."""

from __future__ import annotations

from ..viewlayer.admission_numbers import view_admission_numbers
from .base import StoreView


class AdmissionNumbers(StoreView):
    view_name = "admission_numbers"

    def data(self) -> dict:
        return view_admission_numbers(self.store.result)
