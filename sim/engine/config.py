"""Inputs of one time-domain run: the workload, the scheduler, KV memory management and the cluster.

Each group is a frozen dataclass; `ENGINE_FIELDS` holds every numeric field's bounds and help text
(the same `Bound` the steady-state `Scenario` uses), so the CLI, the serving-lab widgets and the
validation messages read one table. The hardware, the model and the HBM budget come from a
`sim.Scenario`: its `max_num_seqs`, `max_num_batched_tokens` and `block_size_tokens` are the
scheduler's limits too (left unset, the engine's own defaults), because the same numbers size the
activation reserve and hence the pool.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import NamedTuple

from ..errors import Issue
from ..fields import ENGINE_FIELDS, SCENARIO_FIELDS, check_choice, check_flag, check_number, check_numbers, coerce, shown
from ..scenario import Scenario

ARRIVALS = ("poisson", "gamma", "closed", "trace")
LENGTH_DISTS = ("fixed", "uniform", "lognormal")
POLICIES = ("fcfs", "chunked", "lanes")
ADMISSIONS = ("watermark", "reserve")
PREEMPTIONS = ("recompute", "swap")
TOKENIZERS = ("request_thread", "worker_pool")
BLOCK_TABLES = ("incremental", "full_recompute")
ROUTERS = ("least_loaded", "round_robin")

POLICY_LABELS = {
    "fcfs": "shared FCFS queue, whole prompts (prefill stalls decode)",
    "chunked": "chunked prefill mixed into decode steps (decode first)",
    "lanes": "separate prefill / decode lanes, decode priority, chunked prefill",
}

class TraceRequest(NamedTuple):
    """One row of an imported trace (see trace.py). A named tuple, as `workload.Request` is: a
    trace may hold two million rows, and a frozen dataclass sets each field through
    object.__setattr__ (10^6 rows built in 1.11 s of CPU against 0.78 s as named tuples)."""

    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    prefix_id: str | None = None
    prefix_tokens: int = 0


@dataclass(frozen=True)
class Workload:
    """Who sends what, and when.

    Arrivals: `poisson` (exponential gaps at `rate_per_s`), `gamma` (gaps with the same mean and a
    coefficient of variation `burst_cv`: bursts and lulls), `closed` (`clients` users, each waiting
    for its answer plus `think_time_s` before sending again) or `trace` (rows of `trace`). With
    open arrivals, `max_concurrency` caps the requests in flight as `vllm bench serve` does: one
    that comes due while that many are running waits at the client and is sent (its TTFT clock
    starting) when one of them finishes.
    Lengths: `fixed`, `uniform` between min and max, or `lognormal` with the given median and
    sigma, clipped to [min, max]. A fraction of requests starts with one of `prefix_groups` shared
    system prompts of `prefix_tokens` tokens, counted inside the prompt.
    """

    arrival: str = "poisson"
    rate_per_s: float = 2.0
    burst_cv: float = 3.0
    clients: int = 64
    think_time_s: float = 0.0
    max_concurrency: int | None = None
    num_requests: int = 1000
    prompt_dist: str = "lognormal"
    prompt_tokens: int = 2048
    prompt_min_tokens: int = 16
    prompt_max_tokens: int = 16384
    prompt_sigma: float = 0.8
    output_dist: str = "lognormal"
    output_tokens: int = 200
    output_min_tokens: int = 1
    output_max_tokens: int = 2048
    output_sigma: float = 0.7
    prefix_tokens: int = 0
    prefix_fraction: float = 0.0
    prefix_groups: int = 1
    seed: int = 0
    trace: tuple[TraceRequest, ...] | None = None

    def with_(self, **changes) -> Workload:
        return replace(self, **changes)


@dataclass(frozen=True)
class Scheduling:
    """How the scheduler builds each step and what its CPU side costs.

    `policy`: `fcfs` (one queue, whole prompts, decodes wait while a prefill step runs),
    `chunked` (every step carries all decodes first, then prefill chunks up to the token budget),
    `lanes` (seed 000's fix: decode and prefill steps alternate, prefill in chunks of the budget).
    `admission`: `watermark` admits while a fraction of blocks stays free (vLLM); `reserve` also
    holds back `new_token_ratio` x the remaining output of every running request (SGLang).
    Seed 000's CPU costs: tokenization of `tokenize_s_per_token` per prompt token, on one serial
    `request_thread` or a `worker_pool` in parallel; a scheduler that on each admission writes the
    block table of every running sequence (`full_recompute`) or only the new one (`incremental`).
    """

    policy: str = "chunked"
    admission: str = "watermark"
    watermark_fraction: float = 0.01
    new_token_ratio: float = 0.7
    tokenize_s_per_token: float = 0.0
    tokenizer: str = "request_thread"
    block_table: str = "incremental"
    block_table_s_per_block: float = 1e-7

    def with_(self, **changes) -> Scheduling:
        return replace(self, **changes)


@dataclass(frozen=True)
class KVManagement:
    """What happens when blocks run out, and how prefixes are kept.

    `preemption`: `recompute` drops the victim's blocks and prefills it again later; `swap` copies
    them to `swap_space_gib` of host memory over the host link and back (falls back to recompute
    when the swap space is full). `prefix_caching` keeps full blocks of shared prefixes in a radix
    tree, evicting unreferenced ones least-recently-used first; `host_cache_gib` > 0 adds a host
    tier that evicted prefix blocks move to, to be loaded back instead of recomputed.
    """

    preemption: str = "recompute"
    swap_space_gib: float = 4.0
    prefix_caching: bool = True
    host_cache_gib: float = 0.0
    host_link_gb_per_s: float | None = None

    def with_(self, **changes) -> KVManagement:
        return replace(self, **changes)


@dataclass(frozen=True)
class Cluster:
    """Colocated replicas, or disaggregated prefill and decode pools (each instance: tp GPUs)."""

    replicas: int = 1
    disaggregated: bool = False
    prefill_instances: int = 1
    decode_instances: int = 1
    kv_transfer_gb_per_s: float | None = None
    router: str = "least_loaded"

    def with_(self, **changes) -> Cluster:
        return replace(self, **changes)

    def num_instances(self) -> int:
        return self.prefill_instances + self.decode_instances if self.disaggregated else self.replicas


@dataclass(frozen=True)
class EngineConfig:
    """Everything one time-domain run needs. `scenario` fixes model, GPU, precision and the HBM
    budget; its prompt/output/concurrency fields are ignored (the workload replaces them)."""

    scenario: Scenario = field(default_factory=Scenario)
    workload: Workload = field(default_factory=Workload)
    scheduling: Scheduling = field(default_factory=Scheduling)
    kv: KVManagement = field(default_factory=KVManagement)
    cluster: Cluster = field(default_factory=Cluster)
    ttft_target_s: float = 2.0
    itl_target_s: float = 0.1
    sample_interval_s: float = 0.0
    log_interval_s: float = 10.0

    def with_(self, **changes) -> EngineConfig:
        """Replace top-level fields, or nested ones by name: `with_(policy="fcfs", rate_per_s=4)`.
        Names the workload shares with the Scenario (prompt_tokens, output_tokens) mean the
        workload's: the engine ignores the Scenario's."""
        groups = {"workload": self.workload, "scheduling": self.scheduling, "kv": self.kv, "cluster": self.cluster,
                  "scenario": self.scenario}
        top = {f.name for f in fields(self)}
        nested: dict[str, dict] = {g: {} for g in groups}
        direct = {}
        for name, value in changes.items():
            if name in top:
                direct[name] = value
                continue
            owner = next((g for g, obj in groups.items() if name in {f.name for f in fields(obj)}), None)
            if owner is None:
                raise TypeError(f"EngineConfig has no field {name!r}")
            nested[owner][name] = value
        for g, ch in nested.items():
            if ch:
                direct.setdefault(g, replace(groups[g], **ch))
        return replace(self, **direct)

    def to_dict(self) -> dict:
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if hasattr(v, "__dataclass_fields__"):
                d = {g.name: getattr(v, g.name) for g in fields(v)}
                if d.get("trace") is not None:
                    d["trace"] = f"({len(d['trace'])} rows)" if isinstance(d["trace"], tuple | list) else "(invalid)"
                if d.get("config") is not None:
                    d["config"] = "(pasted config.json)"
                out[f.name] = d
            else:
                out[f.name] = v
        return out


# ------------------------------------------------------------------------------------------
# Validation: every problem, each naming its field and the allowed range
# ------------------------------------------------------------------------------------------

__all__ = ["ENGINE_FIELDS", "check_choice", "check_number", "coerce_config", "validate_config"]


def validate_config(c: EngineConfig) -> list[Issue]:
    """All problems of the engine-specific inputs (the Scenario is checked by sim.evaluate)."""
    if not isinstance(c, EngineConfig):
        return [Issue("config", "must be an EngineConfig")]
    groups = {"scenario": (c.scenario, Scenario), "workload": (c.workload, Workload), "scheduling": (c.scheduling, Scheduling),
              "kv": (c.kv, KVManagement), "cluster": (c.cluster, Cluster)}
    wrong = [Issue(name, f"must be a {kind.__name__}, got {shown(obj)}") for name, (obj, kind) in groups.items()
             if not isinstance(obj, kind)]
    if wrong:
        return wrong
    w, s, k, cl = c.workload, c.scheduling, c.kv, c.cluster
    problems: list[Issue | None] = []
    for obj in (w, s, k, cl, c):
        problems += check_numbers(obj, ENGINE_FIELDS)
    problems += [
        check_choice("arrival", w.arrival, ARRIVALS),
        check_choice("prompt_dist", w.prompt_dist, LENGTH_DISTS),
        check_choice("output_dist", w.output_dist, LENGTH_DISTS),
        check_choice("policy", s.policy, POLICIES),
        check_choice("admission", s.admission, ADMISSIONS),
        check_choice("tokenizer", s.tokenizer, TOKENIZERS),
        check_choice("block_table", s.block_table, BLOCK_TABLES),
        check_choice("preemption", k.preemption, PREEMPTIONS),
        check_flag("prefix_caching", k.prefix_caching),
        check_flag("disaggregated", cl.disaggregated),
        check_choice("router", cl.router, ROUTERS),
    ]
    issues = [p for p in problems if p is not None]
    bad = {i.field for i in issues}
    for kind in ("prompt", "output"):
        lo, hi = f"{kind}_min_tokens", f"{kind}_max_tokens"
        if not {lo, hi} & bad and getattr(w, lo) > getattr(w, hi):
            issues.append(Issue(hi, f"must be at least {kind}_min_tokens ({getattr(w, lo):,}), got {getattr(w, hi):,}"))
    prefix_fields = {"prefix_tokens", "prefix_fraction", "prompt_min_tokens", "prompt_tokens", "prompt_dist", "arrival"}
    if not prefix_fields & bad and w.prefix_fraction > 0 and w.arrival != "trace":
        if w.prefix_tokens >= w.prompt_min_tokens and w.prompt_dist != "fixed":
            issues.append(Issue("prefix_tokens", f"must be shorter than the shortest prompt ({w.prompt_min_tokens:,} tokens): "
                                                 f"the shared prefix is part of each prompt; got {w.prefix_tokens:,}"))
        elif w.prompt_dist == "fixed" and w.prefix_tokens >= w.prompt_tokens:
            issues.append(Issue("prefix_tokens", f"must be shorter than the prompt ({w.prompt_tokens:,} tokens), got {w.prefix_tokens:,}"))
    if w.trace is not None and not (isinstance(w.trace, tuple | list) and all(isinstance(r, TraceRequest) for r in w.trace)):
        issues.append(Issue("trace", "must be the rows parse_trace returns (import a CSV or JSONL file)"))
    elif w.arrival == "trace" and not w.trace:
        issues.append(Issue("trace", "arrival 'trace' needs at least one trace row (import a CSV or JSONL file)"))
    if cl.disaggregated is True and "replicas" not in bad and cl.replicas != 1:
        issues.append(Issue("replicas", "must be 1 with disaggregated serving (set prefill_instances and decode_instances)"))
    return issues


def coerce_config(c: EngineConfig) -> EngineConfig:
    """`c` (already valid) with integral floats in integer fields turned into ints (sim.fields.coerce)."""
    groups = {name: coerce(getattr(c, name), ENGINE_FIELDS) for name in ("workload", "scheduling", "kv", "cluster")}
    return replace(c, scenario=coerce(c.scenario, SCENARIO_FIELDS, integer_choices=("tp", "attention_dp", "pp")), **groups)
