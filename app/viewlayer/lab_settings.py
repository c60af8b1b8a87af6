"""Every setting of the serving lab, in one table (standard library only): its name, the part of the
engine's `EngineConfig` it fills, its label and help, its choices or bounds. Everything else is derived
from `LAB_FIELDS`: the field lists, the defaults and presets, the `EngineConfig` a state runs, the link
codec (`lab_url`), the browser's widgets (`lab_controls`) and the Panel server's param class
(`engine_views.settings.LabSettings`, generated from this table).

Adding a setting: one `LabField` row here (plus the engine field it sets, which gives a number its
bounds and help: `sim.engine.ENGINE_FIELDS`, or `sim.FIELDS` for the hardware side).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvlab.sim import Scenario
from kvlab.sim.engine import (
    ADMISSIONS,
    ARRIVALS,
    BLOCK_TABLES,
    ENGINE_FIELDS,
    LENGTH_DISTS,
    POLICIES,
    POLICY_LABELS,
    PREEMPTIONS,
    TOKENIZERS,
    Cluster,
    EngineConfig,
    KVManagement,
    Scheduling,
    Workload,
    preset,
)
from kvlab.sim.scenario import FIELDS as SCENARIO_BOUNDS
from kvlab.sim.spec_heads import SPEC_METHODS
from kvlab.sim.units import KV_DTYPES, WEIGHT_DTYPES

from .settings import LABELS, NO_DRAFT, draft_choices, gpu_choices, model_choices

NO_COMPARISON = "none"
LAB_PRESETS = ("default", "seed000-shared-queue", "seed000-chunked", "seed000-lanes", "long-prompts-light", "seed001-saturation",
               "preemption-demo", "seed004-cliff", "seed004-cliff-fp8", "cliff-2x-hbm", "prefix-rag", "prefix-eviction",
               "disagg-1p1d")
# Labels say what the scenario is; the ids keep the source documents' numbers for old links.
PRESET_LABELS = {
    "default": "Default: Qwen3-8B, one H100, moderate load",
    "seed000-shared-queue": "Long prompts on 8 GPUs: one shared queue (+ CPU costs)",
    "seed000-chunked": "Long prompts on 8 GPUs: chunked prefill, decode first",
    "seed000-lanes": "Long prompts on 8 GPUs: separate lanes, decode priority",
    "long-prompts-light": "Long prompts on 8 GPUs at light load (0.5 req/s)",
    "seed001-saturation": "SGLang at KV saturation (150 slots, long answers)",
    "preemption-demo": "Saturation with watermark admission: preemptions",
    "seed004-cliff": "The batching cliff (BF16 cache)",
    "seed004-cliff-fp8": "The batching cliff (FP8 cache)",
    "cliff-2x-hbm": "The batching cliff with 2x HBM, same bandwidth",
    "prefix-rag": "RAG: a shared 2,000-token prefix on 90% of requests",
    "prefix-eviction": "400 shared prefixes under eviction pressure",
    "disagg-1p1d": "Disaggregated: 1 prefill + 1 decode instance",
}
# The display choices of two views (not settings of the run; not in links).
METRICS = {"TTFT": "ttft_s", "ITL": "itl_s", "TPOT (mean ITL per request)": "tpot_s", "End to end": "e2e_s"}
LOG_SOURCES = ("vLLM log", "SGLang log", "Prometheus /metrics")


def lab_models() -> dict[str, str]:
    """Label -> model id of the catalog models (the lab runs no pasted config)."""
    return {label: mid for label, mid in model_choices().items() if mid != "custom"}


@dataclass(frozen=True)
class LabField:
    """One setting. `group` is the part of the EngineConfig it fills ("scenario", "workload",
    "scheduling", "kv", "cluster", "targets") or the lab's own ("preset", "compare", "sweep").
    `options`: a chosen-from-a-list setting's values (a tuple, or a function giving a tuple or a
    {label: value} dict). A number without `options` takes its bounds and help from the engine's
    `ENGINE_FIELDS` (sim's `FIELDS` for a "scenario" one), or from `bounds` (low, high, integer).
    `section`: the sidebar section that shows it (`SIDEBAR`; "" for the sweep's range, which its view
    shows); `widget`: its kind there (`widget_kind`), `step` a number box's or slider's step."""

    name: str
    group: str
    label: str
    doc: str | None = None
    options: object = None
    boolean: bool = False
    bounds: tuple | None = None
    section: str = ""
    widget: str = ""
    step: float | None = None


# The sidebar's sections in order: a heading, or a card (collapsed) of its settings. The lab's last
# setting, the seed, stands alone at the end.
SIDEBAR = (("Start from", "heading"), ("Workload", "heading"), ("Prompt and output lengths", "card"),
           ("Shared prefixes", "card"), ("Import a trace", "card"), ("Scheduler", "heading"),
           ("Admission and CPU costs", "card"), ("KV memory", "card"), ("Hardware and model", "card"),
           ("Speculative decoding", "card"), ("Cluster", "card"),
           ("Goodput targets", "card"), ("", "end"))
WIDGETS = ("radio", "select", "slider", "checkbox", "int", "float")

F = LabField
SPEC = "Speculative decoding"
HW, LEN, PRE, ADM, KVM, CL, GT = ("Hardware and model", "Prompt and output lengths", "Shared prefixes", "Admission and CPU costs",
                                  "KV memory", "Cluster", "Goodput targets")
# The link lists the settings in this order; the sidebar, each section's settings in it.
LAB_FIELDS = (
    F("preset", "preset", "Start from", "a named situation; loading one sets every field below", options=LAB_PRESETS,
      section="Start from", widget="select"),
    # ---- hardware and model (sim.Scenario)
    F("model", "scenario", "Model", options=lab_models, section=HW, widget="select"),
    F("gpu", "scenario", "GPU", options=gpu_choices, section=HW, widget="select"),
    F("tp", "scenario", "Tensor parallel size", "GPUs per engine instance", options=(1, 2, 4, 8), section=HW),
    F("attention_dp", "scenario", "Attention data-parallel groups",
      "the instance's GPUs run attention as this many groups, each with its own requests and their cache; must divide tp",
      options=(1, 2, 4, 8), section=HW),
    F("expert_parallel", "scenario", "Expert parallelism (whole experts on each GPU)", boolean=True, section=HW),
    F("kv_dtype", "scenario", "KV cache precision", options=tuple(KV_DTYPES), section=HW),
    F("weight_dtype", "scenario", "Weight precision", options=tuple(WEIGHT_DTYPES), section=HW, widget="select"),
    F("engine", "scenario", LABELS["engine"], options=("vllm", "sglang", "tensorrt-llm", "textbook"), section=HW),
    F("gpu_memory_utilization", "scenario", LABELS["gpu_memory_utilization"], section=HW, widget="slider", step=0.01),
    F("gpu_memory_gib", "scenario", "GPU memory override (GiB)", section=HW),
    F("mem_fraction_static", "scenario", LABELS["mem_fraction_static"], section=HW),
    F("kv_cache_free_gpu_mem_fraction", "scenario", LABELS["kv_cache_free_gpu_mem_fraction"], section=HW),
    F("max_num_seqs", "scenario", LABELS["max_num_seqs"], section=HW),
    F("max_num_batched_tokens", "scenario", LABELS["max_num_batched_tokens"], section=HW),
    # ---- speculative decoding (sim.Scenario's spec_* fields, the panels' card)
    F("spec_method", "scenario", LABELS["spec_method"], options=SPEC_METHODS, section=SPEC),
    F("spec_draft_model", "scenario", LABELS["spec_draft_model"], "with method draft: a catalog model that proposes "
      "tokens for the target to check (none: no speculative decoding)", options=draft_choices, section=SPEC, widget="select"),
    F("spec_tokens", "scenario", LABELS["spec_tokens"], section=SPEC),
    F("spec_acceptance", "scenario", LABELS["spec_acceptance"], section=SPEC, widget="slider", step=0.05),
    # ---- workload
    F("arrival", "workload", "Arrivals", options=tuple(ARRIVALS), section="Workload"),
    F("rate_per_s", "workload", "Request rate (per s)", section="Workload", widget="slider", step=0.1),
    F("burst_cv", "workload", "Burstiness (gamma CV)", section="Workload", step=0.5),
    F("clients", "workload", "Closed-loop clients", section="Workload"),
    F("think_time_s", "workload", "Think time (s)", section="Workload", step=0.5),
    F("num_requests", "workload", "Requests", section="Workload", step=100),
    F("prompt_dist", "workload", "Prompt lengths", options=tuple(LENGTH_DISTS), section=LEN),
    F("prompt_tokens", "workload", "Prompt median (tokens)", section=LEN),
    F("prompt_min_tokens", "workload", "Shortest prompt", section=LEN),
    F("prompt_max_tokens", "workload", "Longest prompt", section=LEN),
    F("prompt_sigma", "workload", "Prompt spread (sigma)", section=LEN),
    F("output_dist", "workload", "Output lengths", options=tuple(LENGTH_DISTS), section=LEN),
    F("output_tokens", "workload", "Output median (tokens)", section=LEN),
    F("output_min_tokens", "workload", "Shortest output", section=LEN),
    F("output_max_tokens", "workload", "Longest output", section=LEN),
    F("output_sigma", "workload", "Output spread (sigma)", section=LEN),
    F("prefix_tokens", "workload", "Shared prefix (tokens)", section=PRE),
    F("prefix_fraction", "workload", "Share of requests with it", section=PRE),
    F("prefix_groups", "workload", "Distinct prefixes", section=PRE),
    F("seed", "workload", "Random seed", section=""),
    # ---- scheduler
    F("policy", "scheduling", "Scheduling policy", options=tuple(POLICIES), section="Scheduler"),
    F("admission", "scheduling", "Admission", options=tuple(ADMISSIONS), section=ADM),
    F("watermark_fraction", "scheduling", "Free-block watermark", section=ADM),
    F("new_token_ratio", "scheduling", "Output held back per request (new_token_ratio)", section=ADM),
    F("tokenizer", "scheduling", "Tokenizer runs on", options=tuple(TOKENIZERS), section=ADM),
    F("tokenize_s_per_token", "scheduling", "Tokenizer s per token", section=ADM),
    F("block_table", "scheduling", "Block tables", options=tuple(BLOCK_TABLES), section=ADM),
    F("block_table_s_per_block", "scheduling", "Block-table s per block", section=ADM),
    # ---- KV memory
    F("preemption", "kv", "Preemption", options=tuple(PREEMPTIONS), section=KVM),
    F("swap_space_gib", "kv", "Host swap space, GiB (swap_space)", section=KVM),
    F("prefix_caching", "kv", "Prefix caching", boolean=True, section=KVM),
    F("host_cache_gib", "kv", "Host prefix tier (GiB)", section=KVM),
    # ---- cluster
    F("disaggregated", "cluster", "Disaggregate prefill and decode", boolean=True, section=CL),
    F("replicas", "cluster", "Colocated replicas", section=CL),
    F("prefill_instances", "cluster", "Prefill instances", section=CL),
    F("decode_instances", "cluster", "Decode instances", section=CL),
    # ---- goodput targets
    F("ttft_target_s", "targets", "TTFT target (s)", section=GT),
    F("itl_target_s", "targets", "ITL target (s)", section=GT),
    # ---- the comparison run
    F("compare_policy", "compare", "Compare with", "a second policy run on the same seeded workload",
      options=(NO_COMPARISON, *POLICIES), section="Scheduler", widget="select"),
    # ---- the rate sweep's own range (no engine field: a rate per second and a number of points); its view shows it
    F("sweep_low_per_s", "sweep", "Sweep from (req/s)", bounds=(0.001, 100_000.0, False)),
    F("sweep_high_per_s", "sweep", "Sweep to (req/s)", bounds=(0.001, 100_000.0, False)),
    F("sweep_points", "sweep", "Sweep points", bounds=(2, 24, True)),
)
del F, HW, LEN, PRE, ADM, KVM, CL, GT, SPEC
FIELDS_BY_NAME = {f.name: f for f in LAB_FIELDS}
# The engine's dataclass each group fills (the targets are EngineConfig's own fields).
ENGINE_GROUPS = {"scenario": Scenario, "workload": Workload, "scheduling": Scheduling, "kv": KVManagement, "cluster": Cluster}


def group_fields(*groups: str) -> tuple[str, ...]:
    return tuple(f.name for f in LAB_FIELDS if f.group in groups)


SCENARIO_KEYS = group_fields("scenario")
# Everything that changes a run (the preset only through the values it loads; the sweep range and the
# display choices not at all).
RUN_FIELDS = group_fields(*ENGINE_GROUPS, "targets", "compare")
SWEEP_FIELDS = group_fields("sweep")
URL_FIELDS = tuple(f.name for f in LAB_FIELDS)  # every setting: what a link carries
BOOLEAN_FIELDS = tuple(f.name for f in LAB_FIELDS if f.boolean)
SWEEP_DEFAULTS = {"sweep_low_per_s": 0.5, "sweep_high_per_s": 10.0, "sweep_points": 8}


def widget_kind(name: str) -> str:
    """The sidebar widget of a setting (one of WIDGETS): its row's, else a button group for a choice,
    a checkbox for a flag, a whole-number or a number box."""
    f = FIELDS_BY_NAME[name]
    if f.widget:
        return f.widget
    if f.options is not None:
        return "radio"
    if f.boolean:
        return "checkbox"
    return "int" if bound(name)[2] else "float"


def section_fields(section: str) -> tuple[str, ...]:
    """The settings the sidebar shows in `section` (a SIDEBAR title; "" the ones at its end), in table order."""
    return tuple(f.name for f in LAB_FIELDS if f.section == section and f.group != "sweep")


def lab_options(name: str):
    """A chosen-from-a-list setting's options as its widget lists them (a tuple, or {label: value}); None otherwise."""
    if name == "metric":
        return tuple(METRICS)
    if name == "log_source":
        return LOG_SOURCES
    f = FIELDS_BY_NAME.get(name)
    if f is None or f.options is None:
        return None
    return f.options() if callable(f.options) else f.options


def lab_choices(name: str) -> tuple | None:
    """The values a chosen-from-a-list setting may take, in the order its widget lists them; None otherwise."""
    options = lab_options(name)
    return tuple(options.values()) if isinstance(options, dict) else options


def bound(name: str):
    """(low, high, integer, optional) of a numeric setting, or None."""
    f = FIELDS_BY_NAME.get(name)
    if f is None or f.options is not None or f.boolean:
        return None
    if f.bounds is not None:
        return (*f.bounds, False)
    if f.group == "scenario":
        b = SCENARIO_BOUNDS[name]
        return b.low, b.high, b.integer, b.optional
    b = ENGINE_FIELDS[name]
    return b.low, b.high, b.integer, b.optional


def field_help(name: str) -> str | None:
    """The help text of a setting: its own, else its engine (or sim) field's."""
    f = FIELDS_BY_NAME[name]
    if f.doc is not None or bound(name) is None or f.bounds is not None:
        return f.doc
    return (SCENARIO_BOUNDS[name] if f.group == "scenario" else ENGINE_FIELDS[name]).help


def preset_values(name: str) -> dict:
    """Every run setting as preset `name` sets it (what loading it in "Start from" does)."""
    cfg = preset(name)
    parts = {"scenario": cfg.scenario, "workload": cfg.workload, "scheduling": cfg.scheduling, "kv": cfg.kv,
             "cluster": cfg.cluster, "targets": cfg}
    values = {f.name: getattr(parts[f.group], f.name) for f in LAB_FIELDS if f.group in parts}
    if values["spec_draft_model"] is None:  # a list's value is text in both runtimes (settings.NO_DRAFT)
        values["spec_draft_model"] = NO_DRAFT
    values["compare_policy"] = "fcfs" if cfg.scheduling.policy != "fcfs" else "chunked"
    values["sweep_high_per_s"] = max(2 * values["rate_per_s"], 1.0)
    values["sweep_low_per_s"] = values["sweep_high_per_s"] / 16
    return values


def lab_defaults() -> dict:
    """The lab as it opens: the default preset, the sweep's own default range, TTFT and the vLLM log shown."""
    return {"preset": "default", **preset_values("default"), **SWEEP_DEFAULTS, "metric": "TTFT", "log_source": LOG_SOURCES[0]}


def merge_values(values: dict, changes: dict) -> dict:
    """`values` with `changes` applied as the lab applies them: a new preset first (it loads every
    run setting), then the other changes on top. Loading the preset already chosen changes nothing."""
    out = dict(values)
    new = changes.get("preset", out["preset"])
    if new != out["preset"]:
        out.update(preset_values(new))
        out["preset"] = new
    out.update({k: v for k, v in changes.items() if k != "preset"})
    return out


def lab_config(values: dict, policy: str | None = None, trace=None) -> EngineConfig:
    """The EngineConfig for this state (with `policy` instead of the chosen one if given)."""
    parts = {group: {f: values[f] for f in group_fields(group)} for group in ENGINE_GROUPS}
    parts["workload"]["trace"] = trace
    if policy is not None:
        parts["scheduling"]["policy"] = policy
    built = {group: cls(**parts[group]) for group, cls in ENGINE_GROUPS.items() if group != "scenario"}
    built["scenario"] = lab_scenario(values)
    return EngineConfig(scenario=built["scenario"], workload=built["workload"], scheduling=built["scheduling"],
                        kv=built["kv"], cluster=built["cluster"], **{k: values[k] for k in group_fields("targets")})


def lab_scenario(values: dict) -> Scenario:
    """The sim.Scenario of these settings (the draft list's "none" is sim's None)."""
    fields = {k: values[k] for k in SCENARIO_KEYS}
    if fields["spec_draft_model"] == NO_DRAFT:
        fields["spec_draft_model"] = None
    return Scenario(**fields)


def policy_label(policy: str) -> str:
    return POLICY_LABELS.get(policy, policy)
