"""A benchmark result file replayed: measured beside predicted (what the table shows is
`viewlayer.lab_bench`)."""

from __future__ import annotations

from ..viewlayer.lab_comparison import TABLE_CSS
from ..views.base import html_pane
from .base import LabView


class BenchComparison(LabView):
    view_name = "lab_bench"

    def build(self):
        self.pane = self.parts["pane"] = html_pane(margin=(5, 10))
        self.pane.stylesheets = [*self.pane.stylesheets, TABLE_CSS]
        return self.pane
