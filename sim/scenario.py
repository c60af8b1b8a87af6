"""The input of one evaluation, with every field's allowed range in one place.

`Scenario` is a frozen dataclass; `FIELDS` holds each field's bounds and help text so that the
command line, the app's widgets and the validation messages all read the same numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .engine_defaults import TEXTBOOK_MAX_NUM_BATCHED_TOKENS, TEXTBOOK_MAX_NUM_SEQS
from .errors import InputError, Issue
from .units import KV_DTYPES, WEIGHT_DTYPES

ENGINES = ("textbook", "vllm", "sglang")
ALLOCATIONS = ("contiguous", "paged")
TP_SIZES = (1, 2, 4, 8)
# The scheduler limits that size the activation reserve (see memory.py) default to None, meaning
# "what the chosen engine would pick" (engine_defaults.py): the textbook's 2048 tokens and 1024
# sequences, vLLM's and SGLang's own GPU-dependent defaults. The textbook figures stay importable
# under their old names.
DEFAULT_MAX_NUM_BATCHED_TOKENS = TEXTBOOK_MAX_NUM_BATCHED_TOKENS
DEFAULT_MAX_NUM_SEQS = TEXTBOOK_MAX_NUM_SEQS


@dataclass(frozen=True)
class Bound:
    """Allowed range and help text of one numeric field."""

    low: float
    high: float
    integer: bool
    help: str
    optional: bool = False


FIELDS: dict[str, Bound] = {
    "gpu_memory_gib": Bound(1, 4096, False, "override the GPU's memory capacity, GiB", optional=True),
    "prompt_tokens": Bound(1, 2**21, True, "tokens in each request's prompt"),
    "output_tokens": Bound(1, 2**20, True, "tokens each request generates"),
    "concurrency": Bound(1, 1_000_000, True, "requests in flight at once"),
    "gpu_memory_utilization": Bound(0.05, 1.0, False, "fraction of capacity the engine may use"),
    "block_size_tokens": Bound(1, 1024, True, "tokens per KV block (paged allocation, pool rounding)"),
    "max_model_len": Bound(1, 2**22, True, "longest request the engine accepts, tokens", optional=True),
    "max_num_batched_tokens": Bound(1, 2**20, True, "token budget of one forward step (unset: the engine's default)",
                                    optional=True),
    "max_num_seqs": Bound(1, 1_000_000, True, "most sequences the scheduler runs at once (unset: the engine's default)",
                          optional=True),
    "mem_fraction_static": Bound(0.05, 1.0, False, "SGLang: fraction of memory for weights + KV pool (unset: SGLang's default)",
                                 optional=True),
    "dollars_per_gpu_hour": Bound(0, 1000, False, "price of one GPU-hour, dollars", optional=True),
}


@dataclass(frozen=True)
class Scenario:
    """One configuration of model, hardware, workload and engine.

    `model` is a catalog id; `config`, when given, is a pasted config.json dict that replaces it.
    Units are in the names: tokens, GiB, dollars. Optional fields left at None mean "the
    default": the card's own memory, the model's context for max_model_len, and the chosen
    engine's own scheduler limits (see `sim.engine_defaults`); `Result` reports the values used.
    """

    model: str = "qwen3-8b"
    config: dict | None = None
    gpu: str = "h100-sxm"
    gpu_memory_gib: float | None = None
    tp: int = 1
    prompt_tokens: int = 4096
    output_tokens: int = 256
    concurrency: int = 32
    kv_dtype: str = "bf16"
    weight_dtype: str = "bf16"
    gpu_memory_utilization: float = 0.90
    force_mha: bool = False
    allocation: str = "contiguous"
    block_size_tokens: int = 16
    engine: str = "textbook"
    profile: str = "textbook"
    max_model_len: int | None = None
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    mem_fraction_static: float | None = None
    dollars_per_gpu_hour: float | None = None

    def with_(self, **changes) -> Scenario:
        return replace(self, **changes)

    def to_dict(self) -> dict:
        # The instance dict holds exactly the fields, in order; fields() costs ten times more.
        return dict(self.__dict__)


def _fmt(x: float) -> str:
    return f"{int(x):,}" if x == int(x) else f"{x:g}"


def _check_number(name: str, value, bound: Bound) -> Issue | None:
    # The valid path does no string work: validate() runs on every slider move.
    if value is None:
        return None if bound.optional else Issue(name, f"is required: {_describe(bound)}")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return Issue(name, f"must be {_describe(bound)}, got {str(value)[:40]!r}")
    # Python ints have no upper limit; compare before any float conversion can overflow.
    if isinstance(value, float) and not math.isfinite(value):
        return Issue(name, f"must be {_describe(bound)}, got {value}")
    if bound.integer and value != int(value):
        return Issue(name, f"must be {_describe(bound)}, got {value}")
    if not bound.low <= value <= bound.high:
        shown = _fmt(value) if abs(value) < 1e15 else f"{str(value)[:12]}... (out of range)"
        return Issue(name, f"must be between {_fmt(bound.low)} and {_fmt(bound.high)}, got {shown}")
    return None


def _describe(bound: Bound) -> str:
    kind = "an integer" if bound.integer else "a number"
    return f"{kind} between {_fmt(bound.low)} and {_fmt(bound.high)}"


def _check_choice(name: str, value, choices) -> Issue | None:
    if value not in choices:
        return Issue(name, f"must be one of {', '.join(map(str, choices))}, got {str(value)[:40]!r}")
    return None


def validate(s: Scenario) -> None:
    """Raise InputError listing every invalid field (not just the first)."""
    problems = [_check_number(name, getattr(s, name), bound) for name, bound in FIELDS.items()]
    problems += [
        _check_choice("tp", s.tp, TP_SIZES),
        _check_choice("kv_dtype", s.kv_dtype, KV_DTYPES),
        _check_choice("weight_dtype", s.weight_dtype, WEIGHT_DTYPES),
        _check_choice("allocation", s.allocation, ALLOCATIONS),
        _check_choice("engine", s.engine, ENGINES),
        _check_choice("force_mha", s.force_mha, (True, False)),
    ]
    if not isinstance(s.model, str):
        problems.append(Issue("model", "must be a catalog model id"))
    if not isinstance(s.profile, str):
        problems.append(Issue("profile", "must be a profile name"))
    issues = [p for p in problems if p is not None]
    if issues:
        raise InputError(issues)
