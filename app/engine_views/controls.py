"""The serving lab's sidebar: one widget per LabSettings parameter (label, bounds and help from the
parameter, hence from the engine), of the kind and in the section the settings table names
(`viewlayer.lab_settings.LAB_FIELDS`, `SIDEBAR`): workload, scheduler, KV memory, hardware, cluster,
targets. Fields that do not apply (the rate of a closed loop, SGLang's ratio
under watermark admission) are hidden, not removed, so their values survive a round trip."""

from __future__ import annotations

import panel as pn
from kvlab.sim.engine.trace import MAX_TRACE_BYTES

from ..shell.a11y import labelled
from ..viewlayer.lab_controls import SIDEBAR_FIELDS, hidden_fields
from ..viewlayer.lab_settings import FIELDS_BY_NAME, PRESET_LABELS, SIDEBAR, section_fields, widget_kind
from ..views.controls import (
    VISUALLY_HIDDEN_LABEL,
    heading,  # the panels' section heading: the same look
)
from .store import LabStore

WIDE = dict(sizing_mode="stretch_width")
# The rate's slider spans the rates a student tries; its exact box (and a link) take the engine's whole range.
RATE_SLIDER = dict(start=0.1, end=40.0)


def _widget(p, name: str) -> pn.widgets.Widget:
    """The widget of setting `name` (its parameter `p`), of the kind the settings table names."""
    kind, step = widget_kind(name), FIELDS_BY_NAME[name].step
    extra = {"step": step} if step is not None else {}
    if kind == "radio":
        return pn.widgets.RadioButtonGroup.from_param(p, color="primary", variant="outline", **WIDE)
    if kind == "checkbox":
        return pn.widgets.Checkbox.from_param(p)
    if kind == "select":
        options = {"options": {PRESET_LABELS[k]: k for k in PRESET_LABELS}} if name == "preset" else {}
        return pn.widgets.Select.from_param(p, **options, **WIDE)
    if kind == "slider":
        return pn.widgets.FloatSlider.from_param(p, **(RATE_SLIDER if name == "rate_per_s" else {}), **extra, **WIDE)
    box = pn.widgets.IntInput if kind == "int" else pn.widgets.FloatInput
    return box.from_param(p, **extra, **WIDE)


class LabControls(pn.viewable.Viewer):
    def __init__(self, store: LabStore):
        super().__init__()
        self.store = store
        p = store.settings.param
        w = {name: _widget(p[name], name) for name in SIDEBAR_FIELDS}
        # A slider and an exact box (EditableFloatSlider draws its title outside the slider, which
        # leaves the handle and the box without a name for screen readers).
        w["rate_per_s_exact"] = pn.widgets.FloatInput.from_param(p.rate_per_s, label=f"{p.rate_per_s.label}, exact value",
                                                                 step=0.1, width=110, stylesheets=[VISUALLY_HIDDEN_LABEL])
        for name, widget in w.items():
            widget.css_classes = [*widget.css_classes, f"kv-w-lab-{name.replace('_', '-')}"]
        self.widgets = w
        # A visible name: axe (critical "label") flags the file box's empty label once the card is open.
        # kv-upload-max-<bytes>: the page script (app/templates/a11y.js) refuses a larger or an empty
        # file before the browser sends it (the websocket would drop a larger message without a word).
        self.trace = pn.widgets.FileInput(label="Trace file (CSV or JSON lines)", accept=".csv,.jsonl,.json,.txt", multiple=False, **WIDE,
                                          css_classes=["kv-w-lab-trace", f"kv-upload-max-{MAX_TRACE_BYTES}"])
        self.trace.param.watch(self._on_trace, ["value", "filename"])
        p.watch(lambda *_: self._visibility(), ["arrival", "admission", "engine", "disaggregated", "prompt_dist",
                                                       "output_dist"])
        self._visibility()

    def _on_trace(self, *events) -> None:
        # Panel turns an empty file's "" into None: a new file name with no content is an empty file,
        # which the store's reader says is empty (the page script refuses one first).
        value = self.trace.value
        if value is not None or (any(e.name == "filename" for e in events) and self.trace.filename):
            self.store.load_trace(value or b"", self.trace.filename or "trace")

    def _visibility(self) -> None:
        """Which fields apply is the view layer's decision (viewlayer.lab_controls), shared with the site."""
        w = self.widgets
        for name, visible in hidden_fields(self.store.settings.values()).items():
            w[name].visible = visible
        w["rate_per_s_exact"].visible = w["rate_per_s"].visible

    def __panel__(self):
        # Button groups draw no title of their own: give each its parameter's label, which also names
        # the group for screen readers (app/templates/a11y.js).
        w = {k: labelled(v, self.store.settings.param[k].label) if isinstance(v, pn.widgets.RadioButtonGroup) else v
             for k, v in self.widgets.items()}

        def card(title, *names, collapsed=True, extra=()):
            return pn.Card(*(w[n] for n in names), *extra, title=title, collapsed=collapsed, sizing_mode="stretch_width",
                           margin=(6, 10))
        trace_help = pn.pane.HTML("<p class='kv-caption'>CSV or JSON lines: arrival_s, prompt_tokens, output_tokens, and "
                                  "optionally prefix_id, prefix_tokens.</p>", margin=(0, 10))
        w["rate_per_s"] = pn.Column(w["rate_per_s"], w["rate_per_s_exact"], margin=0, **WIDE)  # the slider and its box
        items = []
        for title, kind in SIDEBAR:  # the sections and their settings: the settings table's (viewlayer.lab_settings)
            names = section_fields(title)
            if kind == "card":
                items.append(card(title, *names, extra=(self.trace, trace_help) if title == "Import a trace" else ()))
            else:
                items.extend([heading(title)] if kind == "heading" else [])
                items.extend(w[n] for n in names)
        return pn.Column(*items, sizing_mode="stretch_width", margin=0)
