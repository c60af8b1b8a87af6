"""Every setting of the serving lab, declared once.

Numeric parameters take their bounds, help text and defaults from `sim.engine.ENGINE_FIELDS` and
`sim.FIELDS` (the hardware side), choices from the engine's own tuples, so a range changed in the
engine changes the widget and the error message together. `LabSettings.config()` turns the state
into the `EngineConfig` the store runs; `apply_preset` loads a named starting point into it.
"""

from __future__ import annotations

import param
from kvlab.sim import Scenario
from kvlab.sim.engine import (
    ADMISSIONS,
    ARRIVALS,
    BLOCK_TABLES,
    ENGINE_FIELDS,
    LENGTH_DISTS,
    POLICIES,
    PREEMPTIONS,
    TOKENIZERS,
    EngineConfig,
    preset,
)
from kvlab.sim.scenario import FIELDS as SCENARIO_FIELDS
from kvlab.sim.units import KV_DTYPES, WEIGHT_DTYPES

from ..viewlayer.lab_settings import (  # noqa: F401  (re-exported: the lab's modules and tests import them from here)
    CLUSTER_FIELDS,
    KV_FIELDS,
    LAB_PRESETS,
    NO_COMPARISON,
    PRESET_LABELS,
    RUN_FIELDS,
    SCENARIO_KEYS,
    SCHEDULING_FIELDS,
    TARGET_FIELDS,
    URL_FIELDS,
    WORKLOAD_FIELDS,
    lab_config,
    lab_defaults,
    lab_models,
    policy_label,
    preset_values,
)
from ..views.state import gpu_choices

DEFAULT = preset("default")

LABELS = {
    "rate_per_s": "Request rate (per s)",
    "burst_cv": "Burstiness (gamma CV)",
    "clients": "Closed-loop clients",
    "think_time_s": "Think time (s)",
    "num_requests": "Requests",
    "prompt_tokens": "Prompt median (tokens)",
    "prompt_min_tokens": "Shortest prompt",
    "prompt_max_tokens": "Longest prompt",
    "prompt_sigma": "Prompt spread (sigma)",
    "output_tokens": "Output median (tokens)",
    "output_min_tokens": "Shortest output",
    "output_max_tokens": "Longest output",
    "output_sigma": "Output spread (sigma)",
    "prefix_tokens": "Shared prefix (tokens)",
    "prefix_fraction": "Share of requests with it",
    "prefix_groups": "Distinct prefixes",
    "seed": "Random seed",
    "watermark_fraction": "Free-block watermark",
    "new_token_ratio": "new_token_ratio (reserve)",
    "tokenize_s_per_token": "Tokenizer s per token",
    "block_table_s_per_block": "Block-table s per block",
    "swap_space_gib": "swap_space (GiB)",
    "host_cache_gib": "Host prefix tier (GiB)",
    "replicas": "Colocated replicas",
    "prefill_instances": "Prefill instances",
    "decode_instances": "Decode instances",
    "ttft_target_s": "TTFT target (s)",
    "itl_target_s": "ITL target (s)",
}


def _engine_number(name: str, default, label: str | None = None) -> param.Parameter:
    b = ENGINE_FIELDS[name]
    kind = param.Integer if b.integer else param.Number
    bounds = (int(b.low), int(b.high)) if b.integer else (b.low, b.high)
    return kind(default=default, bounds=bounds, doc=b.help, label=label or LABELS.get(name, name))


def _scenario_number(name: str, default, label: str) -> param.Parameter:
    b = SCENARIO_FIELDS[name]
    kind = param.Integer if b.integer else param.Number
    bounds = (int(b.low), int(b.high)) if b.integer else (b.low, b.high)
    return kind(default=default, bounds=bounds, allow_None=b.optional, doc=b.help, label=label)


W, S, K = DEFAULT.workload, DEFAULT.scheduling, DEFAULT.kv

class LabSettings(param.Parameterized):
    """What the student has chosen in the serving lab."""

    preset = param.Selector(default="default", objects=list(LAB_PRESETS), label="Start from",
                            doc="a named situation; loading one sets every field below")
    # ---- hardware and model (sim.Scenario)
    model = param.Selector(default=DEFAULT.scenario.model, objects=lab_models(), label="Model")
    gpu = param.Selector(default=DEFAULT.scenario.gpu, objects=gpu_choices(), label="GPU")
    tp = param.Selector(default=1, objects=[1, 2, 4, 8], label="Tensor parallel size", doc="GPUs per engine instance")
    kv_dtype = param.Selector(default="bf16", objects=list(KV_DTYPES), label="KV cache precision")
    weight_dtype = param.Selector(default="bf16", objects=list(WEIGHT_DTYPES), label="Weight precision")
    engine = param.Selector(default=DEFAULT.scenario.engine, objects=["vllm", "sglang", "textbook"], label="Memory accounting")
    gpu_memory_utilization = _scenario_number("gpu_memory_utilization", 0.9, "gpu_memory_utilization")
    gpu_memory_gib = _scenario_number("gpu_memory_gib", None, "GPU memory override (GiB)")
    mem_fraction_static = _scenario_number("mem_fraction_static", None, "mem_fraction_static (SGLang)")
    max_num_seqs = _scenario_number("max_num_seqs", DEFAULT.scenario.max_num_seqs, "max_num_seqs")
    max_num_batched_tokens = _scenario_number("max_num_batched_tokens", DEFAULT.scenario.max_num_batched_tokens,
                                              "max_num_batched_tokens (chunk budget)")
    # ---- workload
    arrival = param.Selector(default=W.arrival, objects=[a for a in ARRIVALS], label="Arrivals")
    rate_per_s = _engine_number("rate_per_s", W.rate_per_s)
    burst_cv = _engine_number("burst_cv", W.burst_cv)
    clients = _engine_number("clients", W.clients)
    think_time_s = _engine_number("think_time_s", W.think_time_s)
    num_requests = _engine_number("num_requests", W.num_requests)
    prompt_dist = param.Selector(default=W.prompt_dist, objects=list(LENGTH_DISTS), label="Prompt lengths")
    prompt_tokens = _engine_number("prompt_tokens", W.prompt_tokens)
    prompt_min_tokens = _engine_number("prompt_min_tokens", W.prompt_min_tokens)
    prompt_max_tokens = _engine_number("prompt_max_tokens", W.prompt_max_tokens)
    prompt_sigma = _engine_number("prompt_sigma", W.prompt_sigma)
    output_dist = param.Selector(default=W.output_dist, objects=list(LENGTH_DISTS), label="Output lengths")
    output_tokens = _engine_number("output_tokens", W.output_tokens)
    output_min_tokens = _engine_number("output_min_tokens", W.output_min_tokens)
    output_max_tokens = _engine_number("output_max_tokens", W.output_max_tokens)
    output_sigma = _engine_number("output_sigma", W.output_sigma)
    prefix_tokens = _engine_number("prefix_tokens", W.prefix_tokens)
    prefix_fraction = _engine_number("prefix_fraction", W.prefix_fraction)
    prefix_groups = _engine_number("prefix_groups", W.prefix_groups)
    seed = _engine_number("seed", W.seed)
    # ---- scheduler
    policy = param.Selector(default=S.policy, objects=list(POLICIES), label="Scheduling policy")
    compare_policy = param.Selector(default="fcfs", objects=[NO_COMPARISON, *POLICIES], label="Compare with",
                                    doc="a second policy run on the same seeded workload")
    admission = param.Selector(default=S.admission, objects=list(ADMISSIONS), label="Admission")
    watermark_fraction = _engine_number("watermark_fraction", S.watermark_fraction)
    new_token_ratio = _engine_number("new_token_ratio", S.new_token_ratio)
    tokenize_s_per_token = _engine_number("tokenize_s_per_token", S.tokenize_s_per_token)
    tokenizer = param.Selector(default=S.tokenizer, objects=list(TOKENIZERS), label="Tokenizer runs on")
    block_table = param.Selector(default=S.block_table, objects=list(BLOCK_TABLES), label="Block tables")
    block_table_s_per_block = _engine_number("block_table_s_per_block", S.block_table_s_per_block)
    # ---- KV memory
    preemption = param.Selector(default=K.preemption, objects=list(PREEMPTIONS), label="Preemption")
    swap_space_gib = _engine_number("swap_space_gib", K.swap_space_gib)
    prefix_caching = param.Boolean(default=K.prefix_caching, label="Prefix caching")
    host_cache_gib = _engine_number("host_cache_gib", K.host_cache_gib)
    # ---- cluster
    disaggregated = param.Boolean(default=False, label="Disaggregate prefill and decode")
    replicas = _engine_number("replicas", 1)
    prefill_instances = _engine_number("prefill_instances", 1)
    decode_instances = _engine_number("decode_instances", 1)
    # ---- targets
    ttft_target_s = _engine_number("ttft_target_s", DEFAULT.ttft_target_s)
    itl_target_s = _engine_number("itl_target_s", DEFAULT.itl_target_s)
    # ---- sweep
    sweep_low_per_s = param.Number(default=0.5, bounds=(0.001, 100_000), label="Sweep from (req/s)")
    sweep_high_per_s = param.Number(default=10.0, bounds=(0.001, 100_000), label="Sweep to (req/s)")
    sweep_points = param.Integer(default=8, bounds=(2, 24), label="Sweep points")

    def __init__(self, **params):
        super().__init__(**params)
        self.param.watch(lambda e: self.apply_preset(e.new), "preset")

    def scenario(self) -> Scenario:
        return Scenario(**{k: getattr(self, k) for k in SCENARIO_KEYS})

    def values(self) -> dict:
        """Every setting as a plain dict (what the view layer's lab functions read), the views'
        display choices at their defaults."""
        return {**lab_defaults(), **{k: getattr(self, k) for k in URL_FIELDS}}

    def config(self, policy: str | None = None) -> EngineConfig:
        """The EngineConfig for this state (with `policy` instead of the chosen one if given)."""
        return lab_config(self.values(), policy, self.trace_rows)

    # A trace is data, not a setting: it is held here so config() can use it, but it has no widget.
    trace_rows = None

    def apply_preset(self, name: str) -> None:
        self.param.update(**preset_values(name))
