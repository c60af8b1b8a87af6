"""The panels' settings as plain data: field names, labels, defaults and choices (standard library only).

`app/views/state.py` builds its `param.Parameterized` Settings from these, and the browser bridge keeps
the same settings as a plain dict, so both runtimes agree on every name, default and choice.
"""

from __future__ import annotations

import re

from kvlab.sim import catalog, gpu_ids, load_profile, model_ids, profile_names
from kvlab.sim.scenario import ALLOCATIONS, ENGINES, FIELDS, TP_SIZES, Scenario
from kvlab.sim.spec_heads import SPEC_METHODS
from kvlab.sim.units import KV_DTYPES, WEIGHT_DTYPES

DEFAULTS = Scenario()
CUSTOM_MODEL = "custom"  # the model choice that means "use the pasted config.json"
CUSTOM_MODEL_LABEL = "Paste a config.json\u2026"

# Scenario fields the app exposes, in the order a student meets them. The rest of Scenario
# (the raw `config` dict) is carried by `config_text`.
MAIN_FIELDS = (
    "model", "gpu", "prompt_tokens", "output_tokens", "concurrency", "kv_dtype", "weight_dtype",
    "gpu_memory_utilization", "force_mha", "tp", "pp", "attention_dp", "expert_parallel", "allocation", "engine", "profile",
)
ADVANCED_FIELDS = (
    "block_size_tokens", "max_num_batched_tokens", "max_num_seqs", "mem_fraction_static",
    "kv_cache_free_gpu_mem_fraction", "kv_cache_max_tokens", "max_model_len", "gpu_memory_gib", "dollars_per_gpu_hour",
    "spec_method", "spec_draft_model", "spec_tokens", "spec_acceptance",
)
# The draft-model choice meaning "no speculative decoding" (sim's None): a list's value is text in
# both runtimes, so the settings hold "" and `scenario` turns it into None.
NO_DRAFT = ""
SCENARIO_FIELDS = MAIN_FIELDS + ADVANCED_FIELDS
FLAG_FIELDS = ("force_mha", "expert_parallel")  # true or false: a checkbox on the page, true/false in a link
# Settings whose every allowed value (a button, a flag) is valid on its own: whether one fits the
# others (attention_dp must divide tp, expert_parallel needs an MoE model, pp at most the layers,
# an nvfp4 KV cache an engine that stores one on an FP4 GPU) is sim's error on the page, naming it,
# as for any combination, so a link, a notebook argument or a click never drops them for a rule
# that involves another setting.
COMBINED_FIELDS = ("attention_dp", "expert_parallel", "pp", "kv_dtype")

LABELS = {
    "model": "Model",
    "gpu": "GPU",
    "prompt_tokens": "Prompt tokens",
    "output_tokens": "Output tokens",
    "concurrency": "Concurrent requests",
    "kv_dtype": "KV cache precision",
    "weight_dtype": "Weight precision",
    # Engine knobs say what they do in plain words, then the engine's own spelling in brackets: the
    # words for a student reading the page, the flag for the one who will type it later.
    "gpu_memory_utilization": "Memory the engine may use (gpu_memory_utilization)",
    "force_mha": "Force multi-head attention",
    "tp": "Tensor parallel size",
    "pp": "Pipeline stages",
    "attention_dp": "Attention data-parallel groups",
    "expert_parallel": "Expert parallelism (whole experts on each GPU)",
    "allocation": "Allocation",
    "engine": "Memory accounting",
    "profile": "Efficiency profile",
    "block_size_tokens": "Tokens per KV block (block_size)",
    "max_num_batched_tokens": "Tokens one step may carry (max_num_batched_tokens)",
    "max_num_seqs": "Most requests at once (max_num_seqs)",
    "mem_fraction_static": "SGLang's static memory share (mem_fraction_static)",
    "kv_cache_free_gpu_mem_fraction": "TensorRT-LLM's share of the free memory (kv_cache_free_gpu_mem_fraction)",
    "kv_cache_max_tokens": "TensorRT-LLM's KV token cap (max_tokens)",
    "max_model_len": "Longest request, tokens (max_model_len)",
    "gpu_memory_gib": "GPU memory override (GiB)",
    "dollars_per_gpu_hour": "Price per GPU-hour ($)",
    "spec_method": "Proposals from (speculative_config method)",
    "spec_draft_model": "Draft model",
    "spec_tokens": "Tokens the draft proposes a step (num_speculative_tokens)",
    "spec_acceptance": "Acceptance rate per proposed token",
}


def natural_key(text: str) -> list:
    """Digits compare as numbers: 'Qwen3-4B' < 'Qwen3-14B' < 'Qwen3-32B' (as text, 32B sorts before 4B)."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", text)]


def model_choices() -> dict[str, str]:
    """Label -> catalog id, by family then size (natural order), plus the pasted-config entry last."""
    names = {catalog.model_name(m): m for m in model_ids()}
    choices = {name: names[name] for name in sorted(names, key=natural_key)}
    choices[CUSTOM_MODEL_LABEL] = CUSTOM_MODEL
    return choices


def profile_label(name: str) -> str:
    """A profile as a person reads it, its id last (the id is what a link carries):
    'NVIDIA H200 SXM 141GB, measured 2026-11-30 (h200)'."""
    p = load_profile(name)
    if p.provenance_kind == "reference":
        return f"Textbook: constant fractions of the datasheet peaks ({name})"
    gpu = catalog.gpu(p.gpu).name if p.gpu in gpu_ids() else (p.gpu or "any GPU")
    how = f"measured {p.provenance_date}" if p.provenance_kind == "measured" and p.provenance_date else \
        {"published": "published figures"}.get(p.provenance_kind, p.provenance_kind)
    return f"{gpu}, {how} ({name})"


def profile_choices() -> dict[str, str]:
    """Label -> profile id, for every profile a user can choose now (user profiles included)."""
    return {profile_label(n): n for n in profile_names()}


def draft_choices() -> dict[str, str]:
    """Label -> catalog id of a speculative draft model, "none" first; sim says when a draft does not
    share the target's vocabulary."""
    return {"None (no speculative decoding)": NO_DRAFT, **{k: v for k, v in model_choices().items() if v != CUSTOM_MODEL}}


def gpu_choices() -> dict[str, str]:
    return {catalog.gpu(g).name: g for g in gpu_ids()}


def choices(name: str) -> dict[str, object] | None:
    """Label -> value for a field chosen from a list, None for a number or a flag."""
    table = {
        "model": model_choices, "gpu": gpu_choices,
        "kv_dtype": lambda: {v: v for v in KV_DTYPES}, "weight_dtype": lambda: {v: v for v in WEIGHT_DTYPES},
        "tp": lambda: {str(v): v for v in TP_SIZES}, "attention_dp": lambda: {str(v): v for v in TP_SIZES},
        "pp": lambda: {str(v): v for v in TP_SIZES},
        "allocation": lambda: {v: v for v in ALLOCATIONS},
        "engine": lambda: {v: v for v in ENGINES}, "profile": profile_choices, "spec_draft_model": draft_choices,
        "spec_method": lambda: {v: v for v in SPEC_METHODS},
    }
    return table[name]() if name in table else None


def defaults() -> dict:
    """Every setting at its default: the scenario fields and an empty pasted config."""
    return {"config_text": "", **{name: getattr(DEFAULTS, name) for name in SCENARIO_FIELDS}, "spec_draft_model": NO_DRAFT}


def bounds(name: str):
    """sim's bound for a numeric field (low, high, integer, optional, help)."""
    return FIELDS[name]


def scenario(values: dict, config: dict | None = None) -> Scenario:
    """The sim.Scenario for these settings; `config` is the parsed config.json when model is custom."""
    fields = {name: values[name] for name in SCENARIO_FIELDS}
    if fields["spec_draft_model"] == NO_DRAFT:
        fields["spec_draft_model"] = None
    if fields["model"] == CUSTOM_MODEL:
        fields["model"] = DEFAULTS.model  # ignored by sim once `config` is given
        fields["config"] = config
    return Scenario(**fields)
