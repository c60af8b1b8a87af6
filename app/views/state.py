"""Every setting of the panels, declared once.

`Settings` is the single source of the app's state: widgets are derived from its parameters,
the URL query string is read into and written from it, and `Settings.scenario()` turns it into
the `sim.Scenario` the store evaluates. Bounds and help text come from `sim.FIELDS` and choices
from sim's own tuples, so a range changed in sim changes the widget, the URL check and the error
message together.
"""

from __future__ import annotations

import param
from kvlab.sim.scenario import ALLOCATIONS, ENGINES, FIELDS, TP_SIZES, Scenario
from kvlab.sim.spec_heads import SPEC_METHODS
from kvlab.sim.units import KV_DTYPES, WEIGHT_DTYPES

from kvlab import sim

# Names, labels, defaults and choices live in the view layer (standard library), shared with the browser.
from ..viewlayer.settings import (
    ADVANCED_FIELDS,
    CUSTOM_MODEL,
    DEFAULTS,
    LABELS,
    MAIN_FIELDS,
    NO_DRAFT,
    SCENARIO_FIELDS,
    draft_choices,
    gpu_choices,
    model_choices,
    profile_choices,
)
from ..viewlayer.settings import scenario as _scenario

__all__ = ["ADVANCED_FIELDS", "CUSTOM_MODEL", "DEFAULTS", "LABELS", "MAIN_FIELDS", "SCENARIO_FIELDS", "Settings",
           "gpu_choices", "model_choices"]


def _numeric(name: str) -> param.Parameter:
    """A param for one of sim.FIELDS, with sim's bounds, default and help text."""
    bound = FIELDS[name]
    kind = param.Integer if bound.integer else param.Number
    low, high = (int(bound.low), int(bound.high)) if bound.integer else (bound.low, bound.high)
    return kind(default=getattr(DEFAULTS, name), bounds=(low, high), allow_None=bound.optional,
                doc=bound.help, label=LABELS[name])


class Settings(param.Parameterized):
    """The state of one panel: what the student has chosen."""

    model = param.Selector(default=DEFAULTS.model, objects=model_choices(), label=LABELS["model"],
                           doc="catalog model, or 'custom' to use the pasted config.json")
    config_text = param.String(default="", label="config.json",
                               doc="a Hugging Face config.json, pasted as text (used when model is 'custom')")
    gpu = param.Selector(default=DEFAULTS.gpu, objects=gpu_choices(), label=LABELS["gpu"], doc="catalog GPU")
    prompt_tokens = _numeric("prompt_tokens")
    output_tokens = _numeric("output_tokens")
    concurrency = _numeric("concurrency")
    kv_dtype = param.Selector(default=DEFAULTS.kv_dtype, objects=list(KV_DTYPES), label=LABELS["kv_dtype"],
                              doc="storage precision of the cached keys and values")
    weight_dtype = param.Selector(default=DEFAULTS.weight_dtype, objects=list(WEIGHT_DTYPES), label=LABELS["weight_dtype"],
                                  doc="storage precision of the weights")
    gpu_memory_utilization = _numeric("gpu_memory_utilization")
    force_mha = param.Boolean(default=DEFAULTS.force_mha, label=LABELS["force_mha"],
                              doc="give every query head its own K and V head (kv_heads := q_heads)")
    tp = param.Selector(default=DEFAULTS.tp, objects=list(TP_SIZES), label=LABELS["tp"],
                        doc="GPUs the weights and the cache are sharded across")
    pp = param.Selector(default=DEFAULTS.pp, objects=list(TP_SIZES), label=LABELS["pp"],
                        doc="pipeline stages of tp GPUs each, every stage a run of the layers (vLLM --pipeline-parallel-size)")
    attention_dp = param.Selector(default=DEFAULTS.attention_dp, objects=list(TP_SIZES), label=LABELS["attention_dp"],
                                  doc="the tp GPUs run attention as this many groups, each with its own requests and their "
                                      "cache (SGLang --enable-dp-attention --dp; vLLM --data-parallel-size); must divide tp")
    expert_parallel = param.Boolean(default=DEFAULTS.expert_parallel, label=LABELS["expert_parallel"],
                                    doc="MoE models: each GPU holds whole experts instead of a 1/tp slice of every expert "
                                        "(vLLM --enable-expert-parallel, SGLang --ep-size)")
    allocation = param.Selector(default=DEFAULTS.allocation, objects=list(ALLOCATIONS), label=LABELS["allocation"],
                                doc="contiguous: a sequence reserves its final length at admission; paged: blocks as it grows")
    engine = param.Selector(default=DEFAULTS.engine, objects=list(ENGINES), label=LABELS["engine"],
                            doc="how the HBM budget is accounted: the textbook rule, vLLM's, SGLang's or TensorRT-LLM's")
    profile = param.Selector(default=DEFAULTS.profile, objects=profile_choices(), label=LABELS["profile"],
                             doc="achieved fractions of the datasheet peaks")
    block_size_tokens = _numeric("block_size_tokens")
    max_num_batched_tokens = _numeric("max_num_batched_tokens")
    max_num_seqs = _numeric("max_num_seqs")
    mem_fraction_static = _numeric("mem_fraction_static")
    kv_cache_free_gpu_mem_fraction = _numeric("kv_cache_free_gpu_mem_fraction")
    kv_cache_max_tokens = _numeric("kv_cache_max_tokens")
    max_model_len = _numeric("max_model_len")
    gpu_memory_gib = _numeric("gpu_memory_gib")
    dollars_per_gpu_hour = _numeric("dollars_per_gpu_hour")
    spec_method = param.Selector(default=DEFAULTS.spec_method, objects=list(SPEC_METHODS), label=LABELS["spec_method"],
                                 doc="speculative decoding: draft (the draft model below; none: off), eagle (an EAGLE head "
                                     "built from the target), mtp (the target's own MTP layers)")
    spec_draft_model = param.Selector(default=NO_DRAFT, objects=draft_choices(), label=LABELS["spec_draft_model"],
                                      doc="speculative decoding: a catalog model that proposes tokens for the target to check")
    spec_tokens = _numeric("spec_tokens")
    spec_acceptance = _numeric("spec_acceptance")

    def __init__(self, **params):
        # Each new session (and each URL check) lists the profiles afresh, so one written by
        # `kvlab calibrate` while the server runs is offered without a restart. profile_names()
        # costs a directory listing and a stat per file (sim caches each file's schema check).
        names = sim.profile_names()
        if names != list(type(self).param.profile.objects):  # assigned only when it changed
            type(self).param.profile.objects = profile_choices()
        super().__init__(**params)

    def values(self) -> dict:
        """Every setting as a plain dict (what the view layer reads)."""
        return {name: getattr(self, name) for name in ("config_text", *SCENARIO_FIELDS)}

    def scenario(self, config: dict | None = None) -> Scenario:
        """The sim.Scenario for this state; `config` is the parsed config.json when model is custom."""
        return _scenario(self.values(), config)

    def non_default(self) -> dict:
        """Settings that differ from their defaults, in declaration order (what a link must carry)."""
        out = {}
        for name in ("model", "config_text", *SCENARIO_FIELDS[1:]):
            value = getattr(self, name)
            if value != self.param[name].default:
                out[name] = value
        return out
