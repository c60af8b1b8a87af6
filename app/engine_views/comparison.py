"""The lab's two tables: two policies on the same seeded workload side by side
(`viewlayer.lab_comparison`), and a benchmark result file's measured figures beside the
prediction (`viewlayer.lab_bench`)."""

from __future__ import annotations

from ..viewlayer.lab_comparison import TABLE_CSS
from ..views.base import html_pane
from .base import LabView


class PolicyComparison(LabView):
    view_name = "lab_comparison"

    def build(self):
        self.pane = self.parts["pane"] = html_pane(margin=(5, 10))
        self.pane.stylesheets = [*self.pane.stylesheets, TABLE_CSS]
        return self.pane


class BenchComparison(PolicyComparison):
    view_name = "lab_bench"
