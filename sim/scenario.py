"""The input of one evaluation, with every field's allowed range in one place.

`Scenario` is a frozen dataclass; `FIELDS` holds each field's bounds and help text so that the
command line, the app's widgets and the validation messages all read the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .engine_defaults import TEXTBOOK_MAX_NUM_BATCHED_TOKENS, TEXTBOOK_MAX_NUM_SEQS
from .errors import InputError, Issue
from .fields import SCENARIO_FIELDS as FIELDS
from .fields import Bound, check_choice, check_engine_version, check_flag, check_name, check_numbers, coerce, fmt, shown
from .spec_heads import SPEC_METHODS
from .units import KV_DTYPES, WEIGHT_DTYPES

ENGINES = ("textbook", "vllm", "sglang", "tensorrt-llm")
# contiguous: each sequence reserves its exact final length (prompt + output) at admission;
# reserve_max: each reserves max_model_len (the model's context when unset), as engines before
# paged attention did, not knowing the output length in advance (vLLM paper, Kwon et al. 2023, §2.3);
# paged: blocks are allocated as tokens arrive.
ALLOCATIONS = ("contiguous", "reserve_max", "paged")
TP_SIZES = (1, 2, 4, 8)
# The scheduler limits that size the activation reserve (see memory.py) default to None, meaning
# "what the chosen engine would pick" (engine_defaults.py): the textbook's 2048 tokens and 1024
# sequences, vLLM's and SGLang's own GPU-dependent defaults. The textbook figures stay importable
# under their old names.
DEFAULT_MAX_NUM_BATCHED_TOKENS = TEXTBOOK_MAX_NUM_BATCHED_TOKENS
DEFAULT_MAX_NUM_SEQS = TEXTBOOK_MAX_NUM_SEQS


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
    # The tp GPUs run attention as attention_dp data-parallel groups of tp / attention_dp GPUs,
    # each serving its own requests and holding only their cache (SGLang --enable-dp-attention
    # --dp N; vLLM --data-parallel-size N with expert parallelism): 1 is plain tensor parallelism.
    attention_dp: int = 1
    # MoE experts spread whole over the tp GPUs instead of a 1/tp slice of each (vLLM
    # --enable-expert-parallel, SGLang --ep-size = tp).
    expert_parallel: bool = False
    # Pipeline parallelism: pp stages of tp GPUs each, every stage holding a contiguous run of the
    # layers (vLLM --pipeline-parallel-size, SGLang --pp-size); tp x pp GPUs in all.
    pp: int = 1
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
    engine_version: str | None = None  # None: the engine's current release (sim/data/engine_rules.json)
    profile: str = "textbook"
    max_model_len: int | None = None
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    mem_fraction_static: float | None = None
    # TensorRT-LLM's KV cache share of the memory still free after the weights and the warm-up
    # (KvCacheConfig.free_gpu_memory_fraction; None: its default, 0.9) and its token cap
    # (KvCacheConfig.max_tokens; None: no cap). Read by the tensorrt-llm accounting only.
    kv_cache_free_gpu_mem_fraction: float | None = None
    kv_cache_max_tokens: int | None = None
    dollars_per_gpu_hour: float | None = None
    # Speculative decoding with a draft model (vLLM's speculative_config "model"): the catalog id
    # of the draft, None for none; spec_tokens and spec_acceptance apply only with a draft.
    spec_draft_model: str | None = None
    spec_tokens: int = 3
    spec_acceptance: float = 0.7
    # Where the proposals come from (vLLM's speculative_config "method"; sim.spec_heads): "draft",
    # the model spec_draft_model names (none: no speculative decoding); "eagle", an EAGLE head
    # built from the target's dimensions; "mtp", the target's own MTP layers.
    spec_method: str = "draft"

    def with_(self, **changes) -> Scenario:
        return replace(self, **changes)

    def to_dict(self) -> dict:
        # The instance dict holds exactly the fields, in order; fields() costs ten times more, and
        # dict(d) four times more than d.copy() (which copies CPython's shared-key table at once).
        return self.__dict__.copy()


# Kept for callers that format bounds (sim.cli): one formatter, in sim.fields.
_fmt = fmt

__all__ = ["ALLOCATIONS", "ENGINES", "FIELDS", "TP_SIZES", "Bound", "Scenario", "validate"]


def validate(s: Scenario) -> Scenario:
    """Raise InputError listing every invalid field (not just the first); return `s` with
    integral floats in integer fields turned into ints (sim.fields.coerce)."""
    if not isinstance(s, Scenario):
        raise InputError(Issue("scenario", f"must be a Scenario, got a {type(s).__name__}"))
    problems = check_numbers(s, FIELDS)
    problems += [
        check_choice("tp", s.tp, TP_SIZES),
        check_choice("attention_dp", s.attention_dp, TP_SIZES),
        check_flag("expert_parallel", s.expert_parallel),
        check_choice("pp", s.pp, TP_SIZES),
        check_choice("kv_dtype", s.kv_dtype, KV_DTYPES),
        check_choice("weight_dtype", s.weight_dtype, WEIGHT_DTYPES),
        check_choice("allocation", s.allocation, ALLOCATIONS),
        check_choice("engine", s.engine, ENGINES),
        check_flag("force_mha", s.force_mha),
        check_choice("spec_method", s.spec_method, SPEC_METHODS),
    ]
    problems.append(check_name("gpu", s.gpu, "a GPU id from the catalog"))
    problems.append(check_name("profile", s.profile, "an efficiency profile name"))
    if s.config is None:
        problems.append(check_name("model", s.model, "a catalog model id"))
    elif not isinstance(s.config, dict):
        problems.append(Issue("config", f"must be a config.json object (a dict), got {shown(s.config)}"))
    if s.spec_draft_model is not None:
        problems.append(check_name("spec_draft_model", s.spec_draft_model, "a catalog model id, or unset for no draft"))
    problems.append(check_engine_version(s.engine, s.engine_version))
    if s.attention_dp in TP_SIZES and s.tp in TP_SIZES and s.tp % s.attention_dp:
        problems.append(Issue("attention_dp", f"must divide tp ({s.tp}): the attention groups split the tp GPUs; "
                                              f"got {s.attention_dp}"))
    issues = [p for p in problems if p is not None]
    if issues:
        raise InputError(issues)
    return coerce(s, FIELDS, integer_choices=("tp", "attention_dp", "pp"))
