"""What the serving lab's sidebar widgets show for a state: values, and the fields hidden because
they do not apply (the rate of a closed loop, SGLang's ratio under watermark admission); hidden,
not removed, so their values survive a round trip. `lab_widget_value` is the reverse: a widget's
new Bokeh property value as the setting it edits.

Widgets are named `w.lab-<setting with dashes>` (the rate's exact box `w.lab-rate-per-s-exact`),
the names the page build gives their Bokeh models from the widgets' `kv-w-lab-*` CSS classes.
"""

from __future__ import annotations

from kvlab.sim.engine_rules import memory_knobs, reads_setting

from .lab_settings import BOOLEAN_FIELDS, FIELDS_BY_NAME, RUN_FIELDS, SWEEP_FIELDS, bound, lab_choices, widget_kind

PREFIX = "w.lab-"
SIDEBAR_FIELDS = ("preset", *RUN_FIELDS)
# Button groups (their Bokeh property is `active`, an index): the settings the table gives one, and two
# views' display choices.
RADIO_FIELDS = (*(n for n in SIDEBAR_FIELDS if widget_kind(n) == "radio"), "metric", "log_source")
# Optional numbers in a float box: an emptied box reads NaN (Panel itself sends None or NaN for "not set").
OPTIONAL_FLOATS = tuple(n for n in SIDEBAR_FIELDS if (b := bound(n)) is not None and b[3] and not b[2])

def widget_name(setting: str) -> str:
    return PREFIX + setting.replace("_", "-")


def hidden_fields(values: dict) -> dict[str, bool]:
    """{setting: visible} for every sidebar field whose visibility depends on another."""
    v = values
    open_loop = v["arrival"] in ("poisson", "gamma")
    out = {"rate_per_s": open_loop, "burst_cv": v["arrival"] == "gamma", "clients": v["arrival"] == "closed",
           "think_time_s": v["arrival"] == "closed", "num_requests": v["arrival"] != "trace",
           "new_token_ratio": v["admission"] == "reserve", "replicas": not v["disaggregated"],
           "prefill_instances": bool(v["disaggregated"]), "decode_instances": bool(v["disaggregated"])}
    for knob in memory_knobs():  # sim's rule: the knobs the engine's accounting reads (those the lab has)
        if knob in FIELDS_BY_NAME:
            out[knob] = reads_setting(v["engine"], knob)
    for kind in ("prompt", "output"):
        dist = v[f"{kind}_dist"]
        out[f"{kind}_sigma"] = dist == "lognormal"
        out[f"{kind}_min_tokens"] = out[f"{kind}_max_tokens"] = dist != "fixed"
        out[f"{kind}_tokens"] = dist != "uniform"
    return out


def view_lab_controls(values: dict) -> dict:
    """{widget name: {Bokeh property: value}} for every widget of the lab's sidebar."""
    out: dict[str, dict] = {}
    for name in SIDEBAR_FIELDS:
        w = widget_name(name)
        if name in RADIO_FIELDS:
            out[w] = {"active": lab_choices(name).index(values[name])}
        elif name in BOOLEAN_FIELDS:
            out[w] = {"active": bool(values[name])}
        else:
            out[w] = {"value": values[name]}
    out[widget_name("rate_per_s") + "-exact"] = {"value": values["rate_per_s"]}
    for name, visible in hidden_fields(values).items():
        out[widget_name(name)]["visible"] = visible
    out[widget_name("rate_per_s") + "-exact"]["visible"] = out[widget_name("rate_per_s")]["visible"]
    return out


def lab_widget_value(widget: str, value) -> tuple[str, object]:
    """(setting, its new value) for a widget's new property value; ValueError for an unknown widget
    or a value of the wrong kind (the setting's own check comes after)."""
    if not widget.startswith(PREFIX):
        raise ValueError(f"not a lab widget: {widget!r}")
    name = widget[len(PREFIX):].replace("-", "_")
    if name == "rate_per_s_exact":
        name = "rate_per_s"
    if name not in (*SIDEBAR_FIELDS, *SWEEP_FIELDS, "metric", "log_source"):
        raise ValueError(f"no setting behind widget {widget!r}")
    if name in RADIO_FIELDS:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{widget}: expected a button index, got {value!r}")
        return name, lab_choices(name)[value]
    if name in BOOLEAN_FIELDS:
        return name, bool(value)
    if name in OPTIONAL_FLOATS and (value is None or (isinstance(value, float) and value != value)):
        return name, None  # an emptied box: the engine's default
    return name, value
