"""The serving lab's sidebar: one widget per LabSettings parameter (label, bounds and help from the
parameter, hence from the engine), grouped as the issue lists them: workload, scheduler, KV memory,
hardware, cluster, targets. Fields that do not apply (the rate of a closed loop, SGLang's ratio
under watermark admission) are hidden, not removed, so their values survive a round trip."""

from __future__ import annotations

import panel as pn
from kvlab.sim.engine.trace import MAX_TRACE_BYTES

from ..shell.a11y import labelled
from ..viewlayer.lab_controls import hidden_fields
from ..views.controls import VISUALLY_HIDDEN_LABEL
from .settings import LAB_PRESETS, PRESET_LABELS
from .store import LabStore

WIDE = dict(sizing_mode="stretch_width")


def _heading(text: str) -> pn.pane.HTML:
    return pn.pane.HTML(f"<h2 style='margin:14px 0 0;font-size:0.95rem;letter-spacing:0.04em;text-transform:uppercase;"
                        f"opacity:0.85'>{text}</h2>", margin=(0, 10))


class LabControls(pn.viewable.Viewer):
    def __init__(self, store: LabStore):
        super().__init__()
        self.store = store
        s = store.settings
        p = s.param
        choice = dict(color="primary", variant="outline", **WIDE)
        w = {
            "preset": pn.widgets.Select.from_param(p.preset, options={PRESET_LABELS[k]: k for k in LAB_PRESETS}, **WIDE),
            "arrival": pn.widgets.RadioButtonGroup.from_param(p.arrival, **choice),
            # A slider and an exact box (EditableFloatSlider draws its title outside the slider, which
            # leaves the handle and the box without a name for screen readers).
            "rate_per_s": pn.widgets.FloatSlider.from_param(p.rate_per_s, start=0.1, end=40.0, step=0.1, **WIDE),
            "rate_per_s_exact": pn.widgets.FloatInput.from_param(p.rate_per_s, label=f"{p.rate_per_s.label}, exact value",
                                                                 step=0.1, width=110, stylesheets=[VISUALLY_HIDDEN_LABEL]),
            "burst_cv": pn.widgets.FloatInput.from_param(p.burst_cv, step=0.5, **WIDE),
            "clients": pn.widgets.IntInput.from_param(p.clients, **WIDE),
            "think_time_s": pn.widgets.FloatInput.from_param(p.think_time_s, step=0.5, **WIDE),
            "num_requests": pn.widgets.IntInput.from_param(p.num_requests, step=100, **WIDE),
            "seed": pn.widgets.IntInput.from_param(p.seed, **WIDE),
            "policy": pn.widgets.RadioButtonGroup.from_param(p.policy, **choice),
            "compare_policy": pn.widgets.Select.from_param(p.compare_policy, **WIDE),
            "admission": pn.widgets.RadioButtonGroup.from_param(p.admission, **choice),
            "tokenizer": pn.widgets.RadioButtonGroup.from_param(p.tokenizer, **choice),
            "block_table": pn.widgets.RadioButtonGroup.from_param(p.block_table, **choice),
            "preemption": pn.widgets.RadioButtonGroup.from_param(p.preemption, **choice),
            "prefix_caching": pn.widgets.Checkbox.from_param(p.prefix_caching),
            "model": pn.widgets.Select.from_param(p.model, **WIDE),
            "gpu": pn.widgets.Select.from_param(p.gpu, **WIDE),
            "tp": pn.widgets.RadioButtonGroup.from_param(p.tp, **choice),
            "kv_dtype": pn.widgets.RadioButtonGroup.from_param(p.kv_dtype, **choice),
            "weight_dtype": pn.widgets.RadioButtonGroup.from_param(p.weight_dtype, **choice),
            "engine": pn.widgets.RadioButtonGroup.from_param(p.engine, **choice),
            "gpu_memory_utilization": pn.widgets.FloatSlider.from_param(p.gpu_memory_utilization, step=0.01, **WIDE),
            "disaggregated": pn.widgets.Checkbox.from_param(p.disaggregated),
        }
        for name in ("prompt_dist", "output_dist"):
            w[name] = pn.widgets.RadioButtonGroup.from_param(p[name], **choice)
        for name in ("prompt_tokens", "prompt_min_tokens", "prompt_max_tokens", "output_tokens", "output_min_tokens",
                     "output_max_tokens", "prefix_tokens", "prefix_groups", "max_num_seqs", "max_num_batched_tokens",
                     "replicas", "prefill_instances", "decode_instances"):
            w[name] = pn.widgets.IntInput.from_param(p[name], **WIDE)
        for name in ("prompt_sigma", "output_sigma", "prefix_fraction", "watermark_fraction", "new_token_ratio",
                     "tokenize_s_per_token", "block_table_s_per_block", "swap_space_gib", "host_cache_gib", "mem_fraction_static",
                     "ttft_target_s", "itl_target_s", "gpu_memory_gib"):
            w[name] = pn.widgets.FloatInput.from_param(p[name], **WIDE)
        for name, widget in w.items():
            widget.css_classes = [*widget.css_classes, f"kv-w-lab-{name.replace('_', '-')}"]
        self.widgets = w
        # A visible name: axe (critical "label") flags the file box's empty label once the card is open.
        # kv-upload-max-<bytes>: the page script (app/templates/a11y.js) refuses a larger or an empty
        # file before the browser sends it (the websocket would drop a larger message without a word).
        self.trace = pn.widgets.FileInput(label="Trace file (CSV or JSON lines)", accept=".csv,.jsonl,.json,.txt", multiple=False, **WIDE,
                                          css_classes=["kv-w-lab-trace", f"kv-upload-max-{MAX_TRACE_BYTES}"])
        self.trace.param.watch(self._on_trace, ["value", "filename"])
        s.param.watch(lambda *_: self._visibility(), ["arrival", "admission", "engine", "disaggregated", "prompt_dist",
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
        return pn.Column(
            _heading("Start from"), w["preset"],
            _heading("Workload"), w["arrival"], pn.Column(w["rate_per_s"], w["rate_per_s_exact"], margin=0, **WIDE), w["burst_cv"],
            w["clients"], w["think_time_s"], w["num_requests"],
            card("Prompt and output lengths", "prompt_dist", "prompt_tokens", "prompt_min_tokens", "prompt_max_tokens", "prompt_sigma",
                 "output_dist", "output_tokens", "output_min_tokens", "output_max_tokens", "output_sigma"),
            card("Shared prefixes", "prefix_tokens", "prefix_fraction", "prefix_groups"),
            card("Import a trace", extra=(self.trace, trace_help)),
            _heading("Scheduler"), w["policy"], w["compare_policy"],
            card("Admission and CPU costs", "admission", "watermark_fraction", "new_token_ratio", "tokenizer",
                 "tokenize_s_per_token", "block_table", "block_table_s_per_block"),
            card("KV memory", "preemption", "swap_space_gib", "prefix_caching", "host_cache_gib"),
            card("Hardware and model", "model", "gpu", "tp", "kv_dtype", "weight_dtype", "engine", "gpu_memory_utilization",
                 "gpu_memory_gib",
                 "mem_fraction_static", "max_num_seqs", "max_num_batched_tokens"),
            card("Cluster", "disaggregated", "replicas", "prefill_instances", "decode_instances"),
            card("Goodput targets", "ttft_target_s", "itl_target_s"),
            w["seed"],
            sizing_mode="stretch_width", margin=0,
        )
