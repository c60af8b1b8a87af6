"""Every setting of the serving lab as plain data (standard library only): names, choices, bounds,
defaults, the presets, the `EngineConfig` a state runs, and the link that reopens it.

The Panel server's `engine_views.settings.LabSettings` declares its param widgets from these
tables, and the static site's `lab_page.LabPage` keeps the same settings as a dict, so both
runtimes run the same configuration for the same state. Bounds and help come from the engine's
`ENGINE_FIELDS` and sim's `FIELDS`; choices from the engine's own tuples.
"""

from __future__ import annotations

from urllib.parse import urlencode

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
from kvlab.sim.fields import Bound, check_number
from kvlab.sim.scenario import FIELDS as SCENARIO_BOUNDS
from kvlab.sim.units import KV_DTYPES, WEIGHT_DTYPES

from .query_limits import query_pairs
from .settings import gpu_choices, model_choices

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

WORKLOAD_FIELDS = ("arrival", "rate_per_s", "burst_cv", "clients", "think_time_s", "num_requests", "prompt_dist",
                   "prompt_tokens", "prompt_min_tokens", "prompt_max_tokens", "prompt_sigma", "output_dist", "output_tokens",
                   "output_min_tokens", "output_max_tokens", "output_sigma", "prefix_tokens", "prefix_fraction",
                   "prefix_groups", "seed")
SCHEDULING_FIELDS = ("policy", "admission", "watermark_fraction", "new_token_ratio", "tokenize_s_per_token", "tokenizer",
                     "block_table", "block_table_s_per_block")
KV_FIELDS = ("preemption", "swap_space_gib", "prefix_caching", "host_cache_gib")
CLUSTER_FIELDS = ("disaggregated", "replicas", "prefill_instances", "decode_instances")
SCENARIO_KEYS = ("model", "gpu", "tp", "kv_dtype", "weight_dtype", "engine", "gpu_memory_utilization", "mem_fraction_static",
                 "max_num_seqs", "max_num_batched_tokens", "gpu_memory_gib")
TARGET_FIELDS = ("ttft_target_s", "itl_target_s")
# Everything that changes a run (the sweep range and the display choices do not).
RUN_FIELDS = SCENARIO_KEYS + WORKLOAD_FIELDS + SCHEDULING_FIELDS + KV_FIELDS + CLUSTER_FIELDS + TARGET_FIELDS + ("compare_policy",)
SWEEP_FIELDS = ("sweep_low_per_s", "sweep_high_per_s", "sweep_points")
URL_FIELDS = ("preset", *RUN_FIELDS, *SWEEP_FIELDS)
BOOLEAN_FIELDS = ("prefix_caching", "disaggregated")
# The sweep's own range (not an engine field): a rate per second and a number of points.
SWEEP_BOUNDS = {"sweep_low_per_s": (0.001, 100_000.0, False), "sweep_high_per_s": (0.001, 100_000.0, False),
                "sweep_points": (2, 24, True)}
SWEEP_DEFAULTS = {"sweep_low_per_s": 0.5, "sweep_high_per_s": 10.0, "sweep_points": 8}
# The display choices of two views (not settings of the run; not in links).
METRICS = {"TTFT": "ttft_s", "ITL": "itl_s", "TPOT (mean ITL per request)": "tpot_s", "End to end": "e2e_s"}
LOG_SOURCES = ("vLLM log", "SGLang log", "Prometheus /metrics")


def lab_models() -> dict[str, str]:
    """Label -> model id of the catalog models (the lab runs no pasted config)."""
    return {label: mid for label, mid in model_choices().items() if mid != "custom"}


def lab_choices(name: str) -> tuple | None:
    """The values a chosen-from-a-list setting may take, in the order its widget lists them; None otherwise."""
    table = {
        "preset": LAB_PRESETS, "model": lambda: tuple(lab_models().values()), "gpu": lambda: tuple(gpu_choices().values()),
        "tp": (1, 2, 4, 8), "kv_dtype": tuple(KV_DTYPES), "weight_dtype": tuple(WEIGHT_DTYPES),
        "engine": ("vllm", "sglang", "textbook"), "arrival": tuple(ARRIVALS), "prompt_dist": tuple(LENGTH_DISTS),
        "output_dist": tuple(LENGTH_DISTS), "policy": tuple(POLICIES), "compare_policy": (NO_COMPARISON, *POLICIES),
        "admission": tuple(ADMISSIONS), "tokenizer": tuple(TOKENIZERS), "block_table": tuple(BLOCK_TABLES),
        "preemption": tuple(PREEMPTIONS), "metric": tuple(METRICS), "log_source": LOG_SOURCES,
    }
    found = table.get(name)
    return found() if callable(found) else found


def bound(name: str):
    """(low, high, integer, optional) of a numeric setting, or None."""
    if name in ENGINE_FIELDS:
        b = ENGINE_FIELDS[name]
        return b.low, b.high, b.integer, False
    if name in SCENARIO_KEYS and name in SCENARIO_BOUNDS:
        b = SCENARIO_BOUNDS[name]
        return b.low, b.high, b.integer, b.optional
    if name in SWEEP_BOUNDS:
        return (*SWEEP_BOUNDS[name], False)
    return None


def preset_values(name: str) -> dict:
    """Every run setting as preset `name` sets it (what loading it in "Start from" does)."""
    cfg = preset(name)
    values = {}
    for group, keys in ((cfg.workload, WORKLOAD_FIELDS), (cfg.scheduling, SCHEDULING_FIELDS), (cfg.kv, KV_FIELDS),
                        (cfg.cluster, CLUSTER_FIELDS), (cfg.scenario, SCENARIO_KEYS)):
        values.update({k: getattr(group, k) for k in keys})
    values.update(ttft_target_s=cfg.ttft_target_s, itl_target_s=cfg.itl_target_s)
    values["compare_policy"] = "fcfs" if cfg.scheduling.policy != "fcfs" else "chunked"
    values["sweep_high_per_s"] = max(2 * values["rate_per_s"], 1.0)
    values["sweep_low_per_s"] = values["sweep_high_per_s"] / 16
    return values


def lab_defaults() -> dict:
    """The lab as it opens: the default preset, the sweep's own default range, TTFT and the vLLM log shown."""
    return {"preset": "default", **preset_values("default"), **SWEEP_DEFAULTS, "metric": "TTFT", "log_source": LOG_SOURCES[0]}


def lab_config(values: dict, policy: str | None = None, trace=None) -> EngineConfig:
    """The EngineConfig for this state (with `policy` instead of the chosen one if given)."""
    workload = Workload(**{k: values[k] for k in WORKLOAD_FIELDS}, trace=trace)
    sched = Scheduling(**{k: values[k] for k in SCHEDULING_FIELDS})
    if policy is not None:
        sched = sched.with_(policy=policy)
    kv = KVManagement(**{k: values[k] for k in KV_FIELDS})
    cluster = Cluster(**{k: values[k] for k in CLUSTER_FIELDS})
    return EngineConfig(scenario=Scenario(**{k: values[k] for k in SCENARIO_KEYS}), workload=workload, scheduling=sched,
                        kv=kv, cluster=cluster, ttft_target_s=values["ttft_target_s"], itl_target_s=values["itl_target_s"])


def policy_label(policy: str) -> str:
    return POLICY_LABELS.get(policy, policy)


def check_value(name: str, value):
    """(the value as the setting holds it, None) or (None, why it is refused)."""
    options = lab_choices(name)
    if options is not None:
        try:
            ok = value in options and not isinstance(value, bool)
        except TypeError:
            ok = False
        return (value, None) if ok else (None, f"must be one of {', '.join(map(str, options))}")
    if name in BOOLEAN_FIELDS:
        return (value, None) if isinstance(value, bool) else (None, "must be true or false")
    b = bound(name)
    if b is None:
        return None, "is not a setting of the lab"
    low, high, integer, optional = b
    if value is None:
        return (None, None) if optional else (None, f"is required: a number between {low:g} and {high:g}")
    if isinstance(value, float) and integer and value.is_integer():
        value = int(value)
    elif isinstance(value, int) and not isinstance(value, bool) and not integer:
        value = float(value)
    issue = check_number(name, value, Bound(low, high, integer, "", optional))
    return (value, None) if issue is None else (None, issue.message)


def _from_text(name: str, text: str):
    """A link's text as the setting's value (then check_value decides); raise ValueError."""
    options = lab_choices(name)
    if options is not None:
        for option in options:
            if str(option) == text:
                return option
        raise ValueError(f"must be one of {', '.join(map(str, options))}, got {text[:30]!r}")
    if name in BOOLEAN_FIELDS:
        if text.lower() in ("true", "1", "yes", "on"):
            return True
        if text.lower() in ("false", "0", "no", "off"):
            return False
        raise ValueError(f"expected true or false, got {text[:30]!r}")
    b = bound(name)
    if b is not None and b[3] and text == "":
        return None
    return int(text) if b is not None and b[2] else float(text)


def parse_lab_query(search: str) -> tuple[dict, list[str]]:
    """A link -> (the lab's settings, a notice per value ignored). The preset is applied first, then
    the other values on top of it, as `engine_views.urlstate.apply_query` does on the server."""
    read, notices = query_pairs(search)
    pairs = dict(read)
    values = lab_defaults()
    order = (["preset"] if "preset" in pairs else []) + [k for k in pairs if k != "preset"]
    for key in order:
        if key not in URL_FIELDS:
            continue
        try:
            value = _from_text(key, pairs[key])
            value, why = check_value(key, value)
            if why:
                raise ValueError(why)
        except (ValueError, TypeError) as e:
            notices.append(f"{key}: {e} (ignored)")
            continue
        if key == "preset" and value != values["preset"]:  # as on the server: loading the same preset again changes nothing
            values.update(preset_values(value))
        values[key] = value
    return values, notices


_BASELINES: dict[str, dict] = {}


def _baseline(name: str) -> dict:
    if name not in _BASELINES:
        base = lab_defaults()
        if name != "default":
            base.update(preset_values(name))
        _BASELINES[name] = base
    return _BASELINES[name]


def encode_lab_query(values: dict) -> str:
    """The preset, then only what differs from it: a short link that reopens the same state."""
    base = _baseline(values["preset"])
    out = {"preset": values["preset"]} if values["preset"] != "default" else {}
    for key in URL_FIELDS:
        value = values[key]
        if key != "preset" and value != base[key]:
            out[key] = "" if value is None else (str(value).lower() if isinstance(value, bool) else str(value))
    return urlencode(out)
