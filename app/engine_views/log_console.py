"""What the engine would have printed: vLLM's periodic stats lines, SGLang's batch lines, or the
Prometheus /metrics page at the end of the run (what is shown is `viewlayer.lab_log`)."""

from __future__ import annotations

import panel as pn

from ..shell.a11y import labelled
from ..viewlayer.lab_log import CONSOLE_CSS
from ..viewlayer.lab_settings import LOG_SOURCES
from ..views.base import html_pane
from .base import LabView

SOURCES = LOG_SOURCES


class LogConsole(LabView):
    view_name = "lab_log"

    def build(self):
        self.source = pn.widgets.RadioButtonGroup(options=list(SOURCES), value=SOURCES[0], color="primary",
                                                  variant="outline", margin=(5, 10), css_classes=["kv-w-lab-log-source"])
        self.source.param.watch(lambda *_: self.refresh(), "value")
        self.pane = html_pane(margin=(5, 10))
        self.pane.stylesheets = [*self.pane.stylesheets, CONSOLE_CSS]
        self.parts.update({"w.lab-log-source": self.source, "pane": self.pane})
        return pn.Column(labelled(self.source, "Log shown"), self.pane, sizing_mode="stretch_width", margin=0)

    def values(self) -> dict:
        return {**super().values(), "log_source": self.source.value}
