"""Engine rules by version: CPU-side costs and memory accounting that the GPU profile cannot see.

Data in `sim/data/engine_rules.json`, each figure with its source. `rules(engine, version)` returns
the frozen rule set one evaluation applies: the per-step CPU cost added to every decode step (ITL),
the front-end overhead added to the served TTFT, the host time per row a release adds to every step
(`host_rules`), and for vLLM the profiling rules of that
version's memory accounting (sampler term per logit, sum or max of forward and sampler peaks,
non-torch memory). A version is "major.minor" ("0.10.2" reads as "0.10"); None is the engine's
default (its current release).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

from .catalog import DATA_DIR
from .errors import InputError, Issue
from .units import GIB


@dataclass(frozen=True)
class EngineRules:
    engine: str
    version: str
    mode: str  # vLLM: "V0" or "V1"
    cpu_step_s: float  # host time per step not hidden behind the GPU (fixed part)
    cpu_row_s: float  # and per row the step samples (sampling, detokenizing, scheduling one request)
    frontend_s: float  # HTTP, tokenization, admission before the first step (served TTFT)
    sampler_bytes_per_logit: float  # vLLM's profiling sampler run
    peak: str  # "sum": forward peak + sampler peak; "max": the larger of the two
    non_torch_bytes: float  # vLLM's non-torch memory at tp = 1
    non_torch_tp_bytes: float  # and at tp > 1 (NCCL, custom all-reduce buffers)
    fp4_kv_cache: bool = False  # the engine stores an FP4 (nvfp4) KV cache (on NVIDIA's FP4 GPUs)
    memory_settings: tuple[str, ...] = ()  # the scenario's settings its memory accounting reads (sim/memory.py)


@cache
def _table() -> dict:
    return json.loads((DATA_DIR / "engine_rules.json").read_text())["engines"]


ENGINES_WITH_RULES = ("textbook", "vllm", "sglang", "tensorrt-llm")


def version_issue(engine: str, version) -> Issue | None:
    """None if `version` names a release of `engine` the rules know, else the Issue."""
    try:
        normalise_version(engine, version)
    except InputError as e:
        return e.issues[0]
    return None


def versions(engine: str) -> list[str]:
    return list(_table().get(engine, {}).get("versions", []))


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def normalise_version(engine: str, version) -> str:
    """"0.10.2" -> "0.10" when 0.10 is a known version of `engine`; InputError naming the field
    and the allowed versions otherwise."""
    table = _table()[engine]
    if version is None:
        return table["default_version"]
    known = table["versions"]
    text = version[:20] if isinstance(version, str) else type(version).__name__
    parts = text.split(".")
    if isinstance(version, str) and len(parts) >= 2 and all(p.isdigit() for p in parts[:3]) and len(parts) <= 3:
        short = f"{int(parts[0])}.{int(parts[1])}"
        if short in known:
            return short
    raise InputError(Issue("engine_version", f"must be one of {', '.join(known)} for {engine} (or major.minor.patch of one), "
                                             f"got {text!r}"))


def _since(table_rules: list[dict], version: str) -> dict:
    """The last of `table_rules` (each with the release it starts at, in order) that applies to `version`."""
    chosen: dict = {}
    for rule in table_rules:
        if _key(rule["since"]) <= _key(version):
            chosen = rule
    return chosen


@cache
def rules(engine: str, version: str | None = None) -> EngineRules:
    table = _table()[engine]
    v = normalise_version(engine, version)
    memory = _since(table.get("memory_rules", []), v)
    host = _since(table.get("host_rules", []), v)
    return EngineRules(
        engine=engine,
        version=v,
        mode=memory.get("mode", ""),
        cpu_step_s=float(table["cpu_step_s"]),
        cpu_row_s=float(host.get("cpu_step_per_row_s", table.get("cpu_step_per_row_s", 0.0))),
        frontend_s=float(table["frontend_s"]),
        sampler_bytes_per_logit=float(memory.get("sampler_bytes_per_logit", 0)),
        peak=memory.get("peak", "sum"),
        non_torch_bytes=float(memory.get("non_torch_gib", 0.0)) * GIB,
        non_torch_tp_bytes=float(memory.get("non_torch_tp_gib", 0.0)) * GIB,
        fp4_kv_cache=bool(table.get("fp4_kv_cache", False)),
        memory_settings=tuple(table["memory_settings"]),
    )


def memory_knobs() -> tuple[str, ...]:
    """Every scenario setting some engine's memory accounting reads (the union of `memory_settings`):
    the knobs the panels and the lab enable or disable by `reads_setting`."""
    return tuple(dict.fromkeys(k for e in ENGINES_WITH_RULES for k in rules(e).memory_settings))


def reads_setting(engine: str, setting: str) -> bool:
    """Whether `engine`'s memory accounting reads the scenario's `setting` (SGLang and TensorRT-LLM size
    their pools from knobs of their own, not gpu_memory_utilization): the one rule the panels follow to
    enable a knob, and the HBM bar to draw the utilisation edge."""
    return setting in rules(engine).memory_settings
