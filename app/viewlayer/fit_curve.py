"""Sequences that fit against prompt length, with the current prompt marked.

Both axes are logarithmic: the curve is close to pool / (bytes per token x length), a straight
line of slope -1 in log-log, which is the point of the picture. The dashed line is the number of
requests offered; where the curve drops below it, requests start to wait.
"""

from __future__ import annotations

import math

from . import format as fmt
from . import readouts
from .drag import handle

POINT_COLUMNS = ("x", "y", "text", "dx", "align")
NOTHING_FITS = "Not one sequence fits at any prompt length."
# The current prompt is a handle too: drag it along the curve (or Tab to it and use the arrow keys, an
# eighth of a doubling a step, as the prompt slider) to set the prompt length.
PROMPT_LABEL = "Prompt length on the curve"


def view_fit_curve(result, fit=None) -> dict:
    s = readouts.scenario(result)
    out = _view_fit_curve(result, s, fit)
    out["summary"] = readouts.summary("summary-fit", readouts.fit_curve_summary(fit, result, s.get("prompt_tokens", 0),
                                                                                s.get("concurrency", 0)))
    return out


def _view_fit_curve(result, settings, fit=None) -> dict:
    r, s = result, settings
    offered = s.get("concurrency")
    offered = offered if isinstance(offered, int) else None  # no line while there is no result to read it from
    # A Label's y cannot be None (bokeh refuses it), so with no result the empty label sits at 1.
    requests = {"requests": {"location": offered},
                "requests_label": {"y": offered or 1, "y_units": "data",
                                   "text": f"{offered:,} requests offered" if offered else ""}}
    if fit is None or r is None or not r.ok:
        return {"curve": {"data": {"x": [], "y": []}}, "point": {"data": {k: [] for k in POINT_COLUMNS}},
                "empty": {"text": ""}, "handle": prompt_handle(None), **requests}
    # A log axis cannot show zero: where nothing fits the line simply ends.
    ys = [y if y > 0 else math.nan for y in fit.max_sequences]
    shown = r.max_sequences if r.max_sequences > 0 else math.nan
    # The label goes on the side of the point with more room, so it never runs off the plot.
    right_half = math.log(s["prompt_tokens"]) > (math.log(fit.prompt_tokens[0]) + math.log(fit.prompt_tokens[-1])) / 2
    return {
        "curve": {"data": {"x": list(fit.prompt_tokens), "y": ys}},
        "point": {"data": {"x": [s["prompt_tokens"]], "y": [shown],
                           "text": [f"{fmt.count(r.max_sequences)} fit at {fmt.tokens(s['prompt_tokens'])}"],
                           "dx": [-12 if right_half else 12], "align": ["right" if right_half else "left"]}},
        "empty": {"text": "" if any(fit.max_sequences) else NOTHING_FITS},
        "handle": prompt_handle(s["prompt_tokens"]),
        **requests,
    }


def prompt_handle(prompt_tokens: int | None) -> dict:
    """The prompt marker's handle: at the prompt (none without a curve), editing the log2 prompt slider."""
    return handle("prompt_tokens", prompt_tokens, PROMPT_LABEL, scale="log2", value_format="tokens", grip="bottom")
