"""What the engine would have printed: vLLM's periodic stats lines (Preemptions appear once there
are any), SGLang's batch lines, or the Prometheus /metrics page at the end of the run."""

from __future__ import annotations

from . import html
from .lab_settings import LOG_SOURCES, lab_choices

SHOWN_LINES = 400  # more would make the page heavy; the middle of a long log is elided

CONSOLE_CSS = """
.kv-console .raw { white-space: pre-wrap; overflow-wrap: anywhere; }
.kv-console .raw.warn { color: #f2cc60; }
.kv-console .raw.comment { color: #8b949e; }
.kv-console { max-height: 420px; overflow-y: auto; }
"""


def log_lines(result, source: str) -> list[str]:
    if source == LOG_SOURCES[0]:
        return result.vllm_log
    if source == LOG_SOURCES[1]:
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


def view_lab_log(run, values: dict) -> dict:
    source = values["log_source"]
    chooser = {"w.lab-log-source": {"active": lab_choices("log_source").index(source)}}
    r = run.result
    if r is None:
        return {**chooser, "pane": {"html": render(["no run to show"])}}
    lines = log_lines(r, source)
    return {**chooser, "pane": {"html": render(lines or ["(nothing logged: the run was shorter than one log interval)"])}}
