"""Panel 2's headline: the two latencies, the two throughputs, and how busy the tensor cores are."""

from __future__ import annotations

from ..viewlayer.phase_numbers import view_phase_numbers
from .base import StoreView


class PhaseNumbers(StoreView):
    view_name = "phase_numbers"

    def data(self) -> dict:
        return view_phase_numbers(self.store.result)
