"""The run at a glance: progress with a Cancel button, input problems, and the headline numbers
as distributions (what they show is `viewlayer.lab_status`)."""

from __future__ import annotations

import panel as pn

from ..viewlayer.lab_status import PROGRESS_MAX
from ..views.base import html_pane
from .base import LabView


class RunStatus(LabView):
    """Progress of the run (and of a sweep), with one button that cancels whatever is running."""

    view_name = "lab_status"
    watched = ("running", "progress", "done_requests", "status", "sweep_running", "sweep_progress")

    def build(self):
        self.bar = pn.indicators.Progress(value=0, max=PROGRESS_MAX, sizing_mode="stretch_width", margin=(12, 10, 0, 10), height=14,
                                          css_classes=["kv-w-lab-progress"])
        self.text = html_pane(margin=(0, 10))
        self.cancel = pn.widgets.Button(label="Cancel", color="warning", width=100, margin=(5, 10),
                                        css_classes=["kv-w-lab-cancel"])
        self.cancel.on_click(lambda *_: self.store.cancel())
        self.parts.update({"w.lab-progress": self.bar, "text": self.text, "w.lab-cancel": self.cancel})
        return pn.Row(pn.Column(self.bar, self.text, sizing_mode="stretch_width", margin=0), self.cancel,
                      sizing_mode="stretch_width", margin=0)


class LabNotices(LabView):
    view_name = "lab_notices"
    watched = ("issues", "trace_note", "result")


class SummaryTiles(LabView):
    view_name = "lab_summary"
