"""What the engine would have printed: vLLM's periodic stats lines (Preemptions appear once there
are any), SGLang's batch lines, or the Prometheus /metrics page at the end of the run."""

from __future__ import annotations

import panel as pn

from .. import html
from ..a11y import labelled
from ..views.base import html_pane
from .base import LabView

SOURCES = ("vLLM log", "SGLang log", "Prometheus /metrics")
SHOWN_LINES = 400  # more would make the page heavy; the middle of a long log is elided

CONSOLE_CSS = """
.kv-console .raw { white-space: pre-wrap; overflow-wrap: anywhere; }
.kv-console .raw.warn { color: #f2cc60; }
.kv-console .raw.comment { color: #8b949e; }
.kv-console { max-height: 420px; overflow-y: auto; }
"""


def _lines(result, source: str) -> list[str]:
    if source == SOURCES[0]:
        return result.vllm_log
    if source == SOURCES[1]:
        return result.sglang_log
    return result.prometheus.splitlines()


def render(lines: list[str]) -> str:
    if len(lines) > SHOWN_LINES:
        half = SHOWN_LINES // 2
        lines = [*lines[:half], f"... {len(lines) - 2 * half:,} lines not shown ...", *lines[-half:]]
    rows = []
    for line in lines:
        cls = "raw warn" if line.startswith("WARNING") else ("raw comment" if line.startswith("#") else "raw")
        rows.append(f'<div class="{cls}">{html.esc(line)}</div>')
    return f'<div class="kv-console" role="log" aria-label="engine log" tabindex="0" data-kv="lab-log">{"".join(rows)}</div>'


class LogConsole(LabView):
    def build(self):
        self.source = pn.widgets.RadioButtonGroup(options=list(SOURCES), value=SOURCES[0], color="primary",
                                                  variant="outline", margin=(5, 10), css_classes=["kv-w-lab-log-source"])
        self.source.param.watch(lambda *_: self.refresh(), "value")
        self.pane = html_pane(margin=(5, 10))
        self.pane.stylesheets = [*self.pane.stylesheets, CONSOLE_CSS]
        return pn.Column(labelled(self.source, "Log shown"), self.pane, sizing_mode="stretch_width", margin=0)

    def refresh(self) -> None:
        r = self.store.result
        if r is None:
            self.pane.object = render(["no run to show"])
            return
        lines = _lines(r, self.source.value)
        self.pane.object = render(lines or ["(nothing logged: the run was shorter than one log interval)"])
