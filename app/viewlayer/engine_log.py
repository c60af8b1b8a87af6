"""The lines an engine would print for this configuration, as sim wrote them."""

from __future__ import annotations

from . import html

NO_RESULT = "ERROR no configuration to evaluate: see the message above."


def view_engine_log(result) -> dict:
    lines = result.log if result is not None else [NO_RESULT]
    return {"pane": {"html": html.console(lines)}}
