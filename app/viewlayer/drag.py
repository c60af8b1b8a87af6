"""A chart's drag handle: where it sits and which setting it edits (app/templates/drag.js draws it).

A handle is a vertical line at a data x (a Bokeh Span's `location`; None hides it) whose tags say
the setting it edits and how a place on the x axis maps to that setting's value: `linear`, x = a +
b x value; `log2`, x = 2 ** value (a log2 token slider's value). The handle sets the slider's own
Bokeh model, so the setting has one source of truth in both runtimes: the panel's param (served) or
the bridge's settings (static site) follow the slider as they do a drag of its own handle, and the
chart, the numbers, the address bar and the other views follow the setting. The step, the bounds
and whether the handle takes a move at all (a disabled slider) are the slider's.
"""

from __future__ import annotations

SCALES = ("linear", "log2")
FORMATS = ("fraction", "tokens")  # how drag.js words the value it announces ("0.90", "4,096 tokens")
GRIPS = ("middle", "bottom")  # where the handle's visible grip sits: on a bar, or on the axis under a curve's marker


def handle(setting: str, x: float | None, label: str, *, scale: str = "linear", a: float = 0.0, b: float = 1.0,
           value_format: str = "fraction", grip: str = "middle") -> dict:
    """The properties of a handle's Span: at `x` (None: not drawn), editing `setting`, named `label`."""
    if scale not in SCALES or value_format not in FORMATS or grip not in GRIPS:
        raise ValueError(f"scale must be one of {SCALES}, value_format one of {FORMATS} and grip one of {GRIPS}")
    return {"location": x, "tags": [{"kv_drag": setting, "label": label, "scale": scale, "a": a, "b": b,
                                     "format": value_format, "grip": grip}]}
