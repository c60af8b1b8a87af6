"""What the sidebar's widgets show for a state: values, slider ranges, what is disabled or hidden.

Widgets are named `w.<setting>` (the exact-number box beside a log slider `w.<setting>-exact`),
the names the page build gives their Bokeh models from the widgets' `kv-w-*` CSS classes. The
Panel server's Controls and the browser bridge both set these properties; `widget_value` is the
reverse: a widget's new property value as the setting it edits.
"""

from __future__ import annotations

import math

from kvlab.sim.engine_rules import memory_knobs, reads_setting

from .settings import CUSTOM_MODEL, FLAG_FIELDS, SCENARIO_FIELDS, choices

# 8 steps per doubling: fine enough to feel continuous, and every power of two is a stop, so the
# seed's 128, 4k and 32k are reachable exactly by dragging or with the arrow keys.
STEPS_PER_OCTAVE = 8
LOG_SLIDERS = ("prompt_tokens", "output_tokens", "concurrency")
CONCURRENCY_END = 4096  # the concurrency slider's top; larger values go in the box
RADIO_FIELDS = ("kv_dtype", "tp", "pp", "attention_dp", "allocation", "engine", "spec_method")
# Weight precision is a list, not a button group: its seven formats do not fit a 320 px sidebar.
SELECT_FIELDS = ("model", "gpu", "profile", "weight_dtype", "spec_draft_model")
CHECKBOX_FIELDS = FLAG_FIELDS
SLIDER_FIELDS = ("gpu_memory_utilization",)


def log2(tokens: int) -> float:
    return math.log2(max(tokens, 1))


def slider_end(name: str, context_tokens: int) -> int:
    return CONCURRENCY_END if name == "concurrency" else context_tokens


def slider_value(tokens: int, end: float, position: float | None = None) -> float:
    """Where a log slider's handle sits for `tokens`: left where it is when it already shows that
    value (a drag is never fought by its own echo), else at log2(tokens), clamped to the end."""
    if position is not None and round(2**position) == tokens:
        return position
    return min(log2(tokens), end)


def view_controls(settings: dict, context_tokens: int, positions: dict | None = None) -> dict:
    """{widget name: {Bokeh property: value}} for every widget of the panels' sidebar."""
    s = settings
    positions = positions or {}
    out: dict[str, dict] = {}
    for name in LOG_SLIDERS:
        end = log2(slider_end(name, context_tokens))
        out[f"w.{name}"] = {"value": slider_value(s[name], end, positions.get(name)), "end": end}
        out[f"w.{name}-exact"] = {"value": s[name]}
    for name in RADIO_FIELDS:
        out[f"w.{name}"] = {"active": list(choices(name).values()).index(s[name])}
    for name in SELECT_FIELDS:
        out[f"w.{name}"] = {"value": s[name]}
    for name in CHECKBOX_FIELDS:
        out[f"w.{name}"] = {"active": bool(s[name])}
    for name in SCENARIO_FIELDS:
        if f"w.{name}" not in out:
            out[f"w.{name}"] = {"value": s[name]}
    # Each engine's memory knobs (vLLM's gpu_memory_utilization, SGLang's mem_fraction_static, ...)
    # are disabled under the engines that do not read them.
    for name in memory_knobs():
        out[f"w.{name}"]["disabled"] = not reads_setting(s["engine"], name)
    out["w.config_text"] = {"value": s["config_text"], "visible": s["model"] == CUSTOM_MODEL}
    return out


def widget_value(widget: str, value) -> tuple[str, object, float | None]:
    """(setting, its new value, slider position or None) for a widget's new property value.

    Raises ValueError for a widget this layer does not know or a value of the wrong kind."""
    if not widget.startswith("w."):
        raise ValueError(f"not a widget name: {widget!r}")
    name = widget[2:]
    if name.endswith("-exact") and name[:-6] in LOG_SLIDERS:
        return name[:-6], _integer(value), None
    if name in LOG_SLIDERS:
        position = float(value)
        return name, round(2**position), position
    if name in RADIO_FIELDS:
        return name, list(choices(name).values())[int(value)], None
    if name in CHECKBOX_FIELDS:
        return name, bool(value), None
    if name == "config_text":
        return name, str(value), None
    if name in SCENARIO_FIELDS:
        return name, value, None
    raise ValueError(f"no setting behind widget {widget!r}")


def _integer(value) -> int:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ValueError(f"expected an integer, got {value!r}")
