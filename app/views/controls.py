"""The sidebar: one widget per setting, derived from the Settings params.

Widgets come from `Widget.from_param`, so labels, bounds and help text are sim's. The one
exception is the token-count slider: param has no logarithmic slider, and prompt lengths span
16 to 131,072 tokens, so `LogTokenSlider` drives a slider over log2(tokens) next to an exact
number box bound to the same param.
"""

from __future__ import annotations

import panel as pn
from bokeh.models import CustomJSTickFormatter

from ..shell.a11y import labelled
from ..viewlayer.config_paste import MAX_CONFIG_CHARS
from ..viewlayer.controls import CONCURRENCY_END, RADIO_FIELDS, STEPS_PER_OCTAVE, log2, slider_value, view_controls
from .state import CUSTOM_MODEL, Settings
from .store import Store

TOKEN_FORMAT_JS = "return Math.round(2 ** tick).toLocaleString('en-US')"
ENGINE_DEFAULT = "the engine's default"
VISUALLY_HIDDEN_LABEL = (
    "label { position: absolute !important; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }")
CONFIG_PLACEHOLDER = '{\n  "num_hidden_layers": 36,\n  "hidden_size": 4096,\n  "num_attention_heads": 32,\n  ...\n}'


class LogTokenSlider(pn.viewable.Viewer):
    """A log2 slider and an exact integer box, both editing one Integer param of Settings."""

    def __init__(self, settings: Settings, name: str, end_tokens: int, slider_name: str, unit: str = "tokens"):
        super().__init__()
        self.settings = settings
        self.name_ = name
        value = getattr(settings, name)
        self.slider = pn.widgets.FloatSlider(
            label=slider_name, start=0, end=self._log(end_tokens), step=1 / STEPS_PER_OCTAVE,
            # A formatter per slider: a Bokeh model belongs to one document, so a shared one breaks
            # every session after the first.
            value=min(self._log(value), self._log(end_tokens)), format=CustomJSTickFormatter(code=TOKEN_FORMAT_JS),
            sizing_mode="stretch_width",
            margin=(5, 10, 0, 10))
        # The box's label is for screen readers only: sighted users read the slider's title just above.
        self.box = pn.widgets.IntInput.from_param(settings.param[name], label=f"{slider_name.split(' (')[0]}, exact value",
                                                  width=110, margin=(0, 10, 5, 10), css_classes=[f"kv-w-{name}-exact"],
                                                  stylesheets=[VISUALLY_HIDDEN_LABEL])
        # kv-log2-<unit>: the page script (app/templates/a11y.js) announces the handle in <unit>, not log2.
        self.slider.css_classes = [f"kv-w-{name}", f"kv-log2-{unit}"]
        self.slider.param.watch(self._from_slider, "value")
        settings.param.watch(self._from_settings, name)

    @staticmethod
    def _log(tokens: int) -> float:
        return log2(tokens)

    def set_end(self, end_tokens: int) -> None:
        """A new context length: the handle moves to the end if it was beyond it, and the setting
        keeps its value (the exact box still shows it; sim says whether it fits the context)."""
        end = self._log(end_tokens)
        value = slider_value(getattr(self.settings, self.name_), end, self.slider.value)
        self._quiet = True
        try:
            self.slider.param.update(end=end, value=value)
        finally:
            self._quiet = False

    _quiet = False

    def _from_slider(self, event) -> None:
        if self._quiet:
            return
        tokens = round(2 ** event.new)
        if getattr(self.settings, self.name_) != tokens:
            setattr(self.settings, self.name_, tokens)

    def _from_settings(self, event) -> None:
        # Only move the handle when it does not already show this value, so a drag is never
        # fought by its own echo.
        value = slider_value(event.new, self.slider.end, self.slider.value)
        if value != self.slider.value:
            self.slider.value = value

    def __panel__(self):
        return pn.Column(self.slider, self.box, sizing_mode="stretch_width", margin=0)


def heading(text: str) -> pn.pane.HTML:
    return pn.pane.HTML(f"<h2 style='margin:14px 0 0;font-size:0.95rem;letter-spacing:0.04em;"
                        f"text-transform:uppercase;opacity:0.85'>{text}</h2>", margin=(0, 10))


class Controls(pn.viewable.Viewer):
    """Every setting of one panel, grouped as a student meets them."""

    def __init__(self, store: Store):
        super().__init__()
        self.store = store
        s = store.settings
        p = s.param
        wide = dict(sizing_mode="stretch_width")
        self.model = pn.widgets.Select.from_param(p.model, **wide)
        self.config = pn.widgets.TextAreaInput.from_param(
            p.config_text, placeholder=CONFIG_PLACEHOLDER, height=220, max_length=MAX_CONFIG_CHARS + 1,
            visible=s.model == CUSTOM_MODEL, **wide)
        self.prompt = LogTokenSlider(s, "prompt_tokens", store.context_tokens, "Prompt tokens (log scale)")
        self.output = LogTokenSlider(s, "output_tokens", store.context_tokens, "Output tokens (log scale)")
        self.concurrency = LogTokenSlider(s, "concurrency", CONCURRENCY_END, "Concurrent requests (log scale)", unit="requests")
        self.widgets = {
            "gpu": pn.widgets.Select.from_param(p.gpu, **wide),
            "kv_dtype": pn.widgets.RadioButtonGroup.from_param(p.kv_dtype, color="primary", variant="outline", **wide),
            "weight_dtype": pn.widgets.Select.from_param(p.weight_dtype, **wide),
            "gpu_memory_utilization": pn.widgets.FloatSlider.from_param(p.gpu_memory_utilization, step=0.01, **wide),
            "force_mha": pn.widgets.Checkbox.from_param(p.force_mha),
            "tp": pn.widgets.RadioButtonGroup.from_param(p.tp, color="primary", variant="outline", **wide),
            "pp": pn.widgets.RadioButtonGroup.from_param(p.pp, color="primary", variant="outline", **wide),
            "attention_dp": pn.widgets.RadioButtonGroup.from_param(p.attention_dp, color="primary", variant="outline", **wide),
            "expert_parallel": pn.widgets.Checkbox.from_param(p.expert_parallel),
            "allocation": pn.widgets.RadioButtonGroup.from_param(p.allocation, color="primary", variant="outline", **wide),
            "engine": pn.widgets.RadioButtonGroup.from_param(p.engine, color="primary", variant="outline", **wide),
            "profile": pn.widgets.Select.from_param(p.profile, **wide),
            "block_size_tokens": pn.widgets.IntInput.from_param(p.block_size_tokens, **wide),
            "max_num_batched_tokens": pn.widgets.IntInput.from_param(p.max_num_batched_tokens, placeholder=ENGINE_DEFAULT, **wide),
            "max_num_seqs": pn.widgets.IntInput.from_param(p.max_num_seqs, placeholder=ENGINE_DEFAULT, **wide),
            "mem_fraction_static": pn.widgets.FloatInput.from_param(p.mem_fraction_static, step=0.01, placeholder=ENGINE_DEFAULT,
                                                                   **wide),
            "kv_cache_free_gpu_mem_fraction": pn.widgets.FloatInput.from_param(
                p.kv_cache_free_gpu_mem_fraction, step=0.01, placeholder=ENGINE_DEFAULT, **wide),
            "kv_cache_max_tokens": pn.widgets.IntInput.from_param(p.kv_cache_max_tokens, placeholder="no cap", **wide),
            "max_model_len": pn.widgets.IntInput.from_param(p.max_model_len, placeholder="engine default", **wide),
            "gpu_memory_gib": pn.widgets.FloatInput.from_param(p.gpu_memory_gib, placeholder="catalog capacity", **wide),
            "dollars_per_gpu_hour": pn.widgets.FloatInput.from_param(p.dollars_per_gpu_hour, placeholder="not priced", **wide),
            "spec_method": pn.widgets.RadioButtonGroup.from_param(p.spec_method, color="primary", variant="outline", **wide),
            "spec_draft_model": pn.widgets.Select.from_param(p.spec_draft_model, **wide),
            "spec_tokens": pn.widgets.IntInput.from_param(p.spec_tokens, **wide),
            "spec_acceptance": pn.widgets.FloatSlider.from_param(p.spec_acceptance, step=0.05, **wide),
        }
        # A stable class per widget: the browser tests and the latency benchmark find widgets by it.
        for key, widget in (*self.widgets.items(), ("model", self.model), ("config_text", self.config)):
            widget.css_classes = [*widget.css_classes, f"kv-w-{key}"]
        s.param.watch(self._sync, ["model", "engine"])
        store.param.watch(self._on_context, "context_tokens")
        self._sync()

    def _sync(self, *_) -> None:
        """What is hidden or disabled is the view layer's decision (viewlayer.controls), shared with the site."""
        props = view_controls(self.store.settings.values(), self.store.context_tokens)
        self.config.visible = props["w.config_text"]["visible"]
        for name in ("gpu_memory_utilization", "mem_fraction_static", "kv_cache_free_gpu_mem_fraction", "kv_cache_max_tokens"):
            self.widgets[name].disabled = props[f"w.{name}"]["disabled"]

    def _on_context(self, event) -> None:
        self.prompt.set_end(event.new)
        self.output.set_end(event.new)

    def __panel__(self):
        w = dict(self.widgets)
        p = self.store.settings.param
        for key in RADIO_FIELDS:  # button groups; a select names itself
            w[key] = labelled(w[key], p[key].label)
        advanced = pn.Card(
            *(w[k] for k in ("block_size_tokens", "max_num_batched_tokens", "max_num_seqs", "mem_fraction_static",
                             "kv_cache_free_gpu_mem_fraction", "kv_cache_max_tokens", "max_model_len", "gpu_memory_gib",
                             "dollars_per_gpu_hour")),
            title="Engine limits and price", collapsed=True, sizing_mode="stretch_width", margin=(10, 10))
        speculative = pn.Card(
            *(w[k] for k in ("spec_method", "spec_draft_model", "spec_tokens", "spec_acceptance")),
            title="Speculative decoding", collapsed=True, sizing_mode="stretch_width", margin=(10, 10))
        return pn.Column(
            heading("Model"), self.model, self.config, w["force_mha"], w["weight_dtype"],
            heading("Hardware"), w["gpu"], w["tp"], w["pp"], w["attention_dp"], w["expert_parallel"],
            heading("Workload"), self.prompt, self.output, self.concurrency,
            heading("Engine"), w["kv_dtype"], w["gpu_memory_utilization"], w["allocation"], w["engine"], w["profile"],
            advanced, speculative,
            sizing_mode="stretch_width",
        )


WIDGET_CLASS_PREFIX = "kv-w-"


def name_widget_models(root) -> dict[str, object]:
    """Name each widget's Bokeh model `w.<setting>` from its `kv-w-<setting>` CSS class (the names
    `viewlayer.controls` uses); returns {name: model}. Two models with one class are an error:
    BokehJS cannot find a model by a name two models share."""
    named: dict[str, object] = {}
    for model in root.references():
        for cls in getattr(model, "css_classes", None) or ():
            if cls.startswith(WIDGET_CLASS_PREFIX):
                name = "w." + cls[len(WIDGET_CLASS_PREFIX):]
                if name in named and named[name] is not model:
                    raise ValueError(f"two widgets carry the class {cls!r}")
                model.name = name
                named[name] = model
    return named
