"""Two policies on the same seeded workload, side by side (what the table shows is
`viewlayer.lab_comparison`)."""

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
