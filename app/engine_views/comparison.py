"""The lab's two tables: two policies on the same seeded workload side by side
(`viewlayer.lab_comparison`), and a benchmark result file's measured figures beside the
prediction (`viewlayer.lab_bench`)."""

from __future__ import annotations

import panel as pn

from ..viewlayer.lab_bench import CHOOSER
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
    # The view's run chooser: its options and the run shown come from the view layer (`lab_bench.chooser`);
    # the student's pick goes to the store. The page build names its model from the kv-w-* class.

    def build(self):
        table = super().build()
        self.chooser = pn.widgets.Select(label="Run of the result file to replay", options=[], visible=False,
                                         css_classes=["kv-w-lab-bench-run"], margin=(5, 10),
                                         sizing_mode="stretch_width", max_width=420)
        self.chooser.param.watch(lambda e: self.store.choose_bench_run(e.new), "value")
        self.parts[CHOOSER] = self.chooser
        return pn.Column(self.chooser, table, margin=0, sizing_mode="stretch_width")

    def apply(self, data: dict) -> None:
        choice = dict(data.get(CHOOSER, {}))
        # The widget holds the student's pick; the view says which run is replayed (a new file starts at
        # its first): set the options first, so the value is one of them, then the value if it differs.
        if "options" in choice and choice["options"] != self.chooser.options:
            self.chooser.options = choice["options"]
        if choice.get("value") and choice["value"] != self.chooser.value:
            self.chooser.value = choice["value"]  # the store finds that run replayed already: nothing reruns
        super().apply({k: v for k, v in data.items() if k != CHOOSER})
        if "visible" in choice:
            self.chooser.visible = choice["visible"]
