"""What is admitted: the bytes one sequence holds, how many fit, vLLM's concurrency check, the
batch, and sim's one verdict on whether anything runs (`refusal_of`)."""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from . import engine_defaults, memory
from .architecture import Architecture
from .boot_log import gib
from .scenario import Scenario

# The refusal reasons (Result.refusal["reason"]): short enough for a tile's caption.
NO_POOL = "weights do not fit"
VLLM_REFUSES = "vLLM refuses to start"
TOO_LONG = "longer than the context"
NONE_FITS = "not one sequence fits"


class Admission(NamedTuple):
    """What admission decides for one workload on one setup."""

    limits: engine_defaults.EngineLimits  # SGLang's max_num_seqs filled in from the pool
    max_model_len: int  # the request length the engine plans for
    per_seq_bytes: float  # KV bytes one sequence holds (held_bytes_per_sequence), a draft's cache included
    draft_per_seq_bytes: float  # the speculative draft model's part of per_seq_bytes (0 without one)
    max_sequences: int
    max_concurrency: float  # pool / one max_model_len request (vLLM's "Maximum concurrency")
    vllm_longest: int | None  # vllm, when it refuses to start: the longest max_model_len that fits
    batch: int
    limited_by: str  # "concurrency", "kv_pool", "max_num_seqs", or "context" (refused: too long)
    refusal: dict | None  # refusal_of's verdict


def admit(arch: Architecture, s: Scenario, mem: memory.MemoryBudget, limits: engine_defaults.EngineLimits,
          kv_bytes_per_token: float, draft=None) -> Admission:
    """`draft` (resolve.Draft) is a speculative draft model whose cache each sequence also holds."""
    context = s.prompt_tokens + s.output_tokens
    # The request length the engine plans for: the textbook panel plans for this request; vLLM and
    # SGLang for the model's whole context unless max_model_len says otherwise.
    max_len = s.max_model_len or (context if s.engine == "textbook" else arch.max_position_embeddings)
    if limits.max_num_seqs is None:  # SGLang sizes its request cap from the pool
        limits = replace(limits, max_num_seqs=engine_defaults.sglang_max_running_requests(mem.kv_pool_tokens, max_len))
    draft_bytes = held_bytes_per_sequence(draft.arch, s, draft.kv_bytes_per_token) if draft is not None else 0.0
    per_seq = held_bytes_per_sequence(arch, s, kv_bytes_per_token) + draft_bytes
    max_seqs = int(mem.kv_pool_bytes // per_seq) if per_seq > 0 else 0
    longest = None
    if s.engine == "vllm":
        max_conc, longest = vllm_concurrency(arch, s, mem, max_len, limits.max_num_batched_tokens, draft)
        if longest is not None:
            max_seqs = 0  # vLLM refuses to start: not one request of max_model_len fits
    else:
        # A request of max_model_len tokens is held in whole blocks: the concurrency line counts them,
        # as the fit count does and as vLLM's own line does (257 tokens hold 272 tokens of cache);
        # a hybrid's recurrent state and a draft's cache, in the pool's tokens, come on top.
        extra = arch.state_bytes_per_sequence(s.tp, s.attention_dp, s.pp) + (draft.kv_bytes_per_token * max_len if draft else 0.0)
        held = -(-max_len // s.block_size_tokens) * s.block_size_tokens + extra / kv_bytes_per_token
        max_conc = mem.kv_pool_tokens / held if held else 0.0
    # The smallest cap wins; on a tie the concurrency is named (nothing is cut), then the pool.
    batch, limited_by = s.concurrency, "concurrency"
    if max_seqs < batch:
        batch, limited_by = max_seqs, "kv_pool"
    if limits.max_num_seqs < batch:
        batch, limited_by = limits.max_num_seqs, "max_num_seqs"
    refusal = refusal_of(arch, s, mem, max_seqs, longest, max_len, per_seq)
    if refusal is not None:
        batch = 0  # nothing runs
        if refusal["reason"] == TOO_LONG:
            limited_by = "context"
    return Admission(limits, max_len, per_seq, draft_bytes, max_seqs, max_conc, longest, batch, limited_by, refusal)


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


def _block_tokens_sum(n: int, block: int, cap: int | None = None) -> int:
    """Sum over x = 1..n of ceil(min(x, cap) / block) * block: tokens held, block-rounded, by a
    sequence as it grows to each length x (closed form, so a 100k-token generation costs O(1))."""
    def s(m: int) -> int:
        q, r = divmod(m, block)
        return block * (block * q * (q + 1) // 2 + r * (q + 1))
    if cap is None or n <= cap:
        return s(n)
    return s(cap) + (n - cap) * (-(-cap // block) * block)


def reservation_tokens(allocation: str, final_tokens: int, max_len_tokens: int, block_tokens: int,
                       cap_tokens: int | None = None) -> int:
    """Tokens a contiguous allocation reserves for one sequence when it is admitted, in whole blocks:
    its exact final length ("contiguous") or max_model_len ("reserve_max"), at most `cap_tokens` (a
    windowed layer's window). Paged allocation reserves nothing ahead: it takes a block as the last fills."""
    want = final_tokens if allocation == "contiguous" else max_len_tokens
    return -(-min(want, cap_tokens or want) // block_tokens) * block_tokens


def held_bytes_per_sequence(arch: Architecture, s: Scenario, kv_bytes_per_token: float) -> float:
    """KV bytes one sequence occupies on one rank for admission purposes.

    Contiguous: the full final length (prompt + output) is reserved at admission, in whole blocks.
    Reserve_max: max_model_len (the model's context when unset) is reserved at admission, as
    pre-paging engines did because the output length is unknown when a request starts.
    Paged: a sequence holds only the blocks it has filled so far; with requests at staggered
    points of their generation, the pool carries each one's average over its life, i.e. the mean
    of ceil((prompt + t) / block) blocks for t = 1..output.

    kv_bytes_per_token: one token's cache on one rank over all layers (Architecture.kv_bytes_per_token);
    a windowed layer holds at most its window, hence the mean over layers of the tokens held. A
    hybrid model's linear layers add their fixed recurrent state, whatever the allocation.
    """
    p, o, b = s.prompt_tokens, s.output_tokens, s.block_size_tokens
    reserved = s.max_model_len or arch.max_position_embeddings

    def held_tokens(window: int) -> float:
        cap = window or None
        if s.allocation != "paged":
            return reservation_tokens(s.allocation, p + o, reserved, b, cap)
        return (_block_tokens_sum(p + o, b, cap) - _block_tokens_sum(p, b, cap)) / o

    return kv_bytes_per_token * arch.layer_mean(held_tokens) + arch.state_bytes_per_sequence(s.tp, s.attention_dp, s.pp)


def vllm_concurrency(arch: Architecture, s: Scenario, mem: memory.MemoryBudget, max_len: int,
                     max_num_batched_tokens: int, draft=None) -> tuple[float, int | None]:
    """vLLM's "Maximum concurrency" (pool blocks / blocks one max_model_len request needs) and,
    when not even one such request fits, the longest max_model_len that would (vLLM then refuses
    to start, naming that figure)."""
    b = s.block_size_tokens
    pool_layer_blocks = mem.num_blocks * arch.kv_layers
    extra = arch.state_bytes_per_sequence(s.tp, s.attention_dp, s.pp) + (draft.kv_bytes_per_token * max_len if draft is not None else 0.0)
    extra_blocks = extra_layer_blocks(arch, mem, extra)
    need = memory.vllm_layer_blocks_per_request(arch, max_len, b, max_num_batched_tokens) + extra_blocks
    concurrency = pool_layer_blocks / need if need else 0.0
    if mem.kv_pool_bytes <= 0 or concurrency >= 1:
        return concurrency, None
    low, high = 0, max_len  # binary search, as vLLM's own estimate does
    while low < high:
        mid = (low + high + 1) // 2
        if memory.vllm_layer_blocks_per_request(arch, mid, b, max_num_batched_tokens) + extra_blocks <= pool_layer_blocks:
            low = mid
        else:
            high = mid - 1
    return concurrency, low


def extra_layer_blocks(arch: Architecture, mem: memory.MemoryBudget, extra_bytes: float) -> int:
    """Bytes a request holds besides the target's per-token cache (a hybrid model's recurrent
    state, a draft model's cache) in the pool's unit (one layer's block of block_size tokens),
    rounded up. vLLM itself gives each linear layer one page per request and widens the attention
    block until its page is as large (its hybrid allocator); kvlab counts the state's own bytes
    instead, a difference of the rounding only."""
    if not extra_bytes or mem.kv_pool_tokens <= 0 or not mem.num_blocks:
        return 0
    layer_block_bytes = mem.kv_pool_bytes / (mem.num_blocks * arch.kv_layers)
    return -int(-extra_bytes // layer_block_bytes)
