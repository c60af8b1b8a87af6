"""What is admitted: the bytes one sequence holds, how many fit, vLLM's concurrency check, and
sim's one verdict on whether anything runs (`refusal_of`)."""

from __future__ import annotations

from . import memory
from .architecture import Architecture
from .boot_log import gib
from .scenario import Scenario

# The refusal reasons (Result.refusal["reason"]): short enough for a tile's caption.
NO_POOL = "weights do not fit"
VLLM_REFUSES = "vLLM refuses to start"
TOO_LONG = "longer than the context"
NONE_FITS = "not one sequence fits"


def refusal_of(arch: Architecture, s: Scenario, mem: memory.MemoryBudget, max_sequences: int,
               vllm_longest: int | None, max_model_len: int, per_seq_bytes: float) -> dict | None:
    """{"reason", "message"} saying why no request of this shape runs, or None when one does. The
    one place that decides it: the CLI, the Python API, the lessons and the views all read it."""
    context = s.prompt_tokens + s.output_tokens
    if mem.kv_pool_bytes <= 0:
        return _refusal(NO_POOL, f"The weights ({gib(mem.weight_bytes)}) and the engine's reserves leave no room for a KV "
                                 f"pool in the {gib(mem.usable_bytes)} the engine may use: it would not start, so nothing runs.")
    if vllm_longest is not None:
        return _refusal(VLLM_REFUSES, f"Not one request of max_model_len {max_model_len:,} tokens fits in the KV pool "
                                      f"({mem.kv_pool_tokens:,} tokens): vLLM refuses to start, so nothing runs.")
    if context > arch.max_position_embeddings:
        return _refusal(TOO_LONG, f"Prompt + output ({context:,} tokens) is longer than the model's context "
                                  f"({arch.max_position_embeddings:,} tokens): the engine refuses the request, so nothing runs.")
    if max_sequences <= 0:
        return _refusal(NONE_FITS, f"One sequence of {context:,} tokens needs {gib(per_seq_bytes)} of KV cache, more than "
                                   f"the pool holds ({mem.kv_pool_tokens:,} tokens): nothing runs.")
    return None


def _refusal(reason: str, message: str) -> dict:
    return {"reason": reason, "message": message}
