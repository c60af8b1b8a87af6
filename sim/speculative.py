"""Speculative decoding with a draft model: one step of it, and what it buys.

A small draft model (vLLM's `speculative_config` with a draft `model`) proposes `k` tokens for
every running sequence, one decode step of the draft per token; the target then runs one step
over each sequence's k proposals plus one token of its own, which reads the target's weights and
cache once for all k + 1 positions. Each proposal is kept with probability `acceptance`,
independently, up to the first one the target rejects; the target's own token at that position
is kept too. A step therefore yields 1 + a + a^2 + ... + a^k tokens per sequence on average
(Leviathan et al. 2023, "Fast Inference from Transformers via Speculative Decoding", eq. 1).

It pays while the target's decode step is memory-bound: k + 1 tokens cost about what one does
when the weights dominate the bytes read. In a large batch the step is compute-bound, the k + 1
positions cost k + 1 times the FLOPs, and the draft's steps are pure overhead: the speed-up
falls below 1.
"""

from __future__ import annotations

from typing import NamedTuple

from . import roofline


def expected_tokens_per_step(k: int, acceptance: float) -> float:
    """Tokens one sequence gains per step: sum of acceptance**i for i = 0..k (k + 1 when every
    proposal is kept, 1 when none is)."""
    if acceptance >= 1.0:
        return k + 1.0
    return (1.0 - acceptance ** (k + 1)) / (1.0 - acceptance)


def acceptance_for_tokens_per_step(k: int, tokens: float) -> float:
    """The acceptance a whose expected tokens a step (expected_tokens_per_step) is `tokens`, for a
    benchmark that states the mean accepted length (TensorRT-LLM's and SGLang's "acceptance
    length", the bonus token included) rather than a per-token rate. Bisection: the series grows
    with a; `tokens` outside 1 (none kept) to k + 1 (all kept) gives 0 or 1."""
    if tokens >= k + 1.0:
        return 1.0
    if tokens <= 1.0:
        return 0.0
    low, high = 0.0, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        if expected_tokens_per_step(k, mid) < tokens:
            low = mid
        else:
            high = mid
    return (low + high) / 2


class SpecStep(NamedTuple):
    verify: roofline.StepCost  # the target's step over batch x (k + 1) positions, host time included
    draft_s: float  # the draft's k decode steps over the batch (GPU time: they run inside the engine's step)
    tokens_per_step: float  # per sequence, on average
    cycle_s: float  # draft + verify: the wall time of one speculative step
    itl_s: float  # cycle_s / tokens_per_step: the mean time between a sequence's tokens


def verify_cost(target: roofline.Machine, batch: float, k: int, attended_tokens: float, context_tokens: float | None,
                detail: bool = True) -> roofline.StepCost:
    """The target's verify step: `batch` sequences x (k + 1) positions through the weights, every
    position sampling a row and attending to its sequence's cache, which is read once a sequence
    (the positions of a sequence share it, as in a prefill chunk). `attended_tokens` is the KV the
    batch reads, summed over its sequences in Architecture.kv_read_tokens units; a hybrid model's
    recurrent state is read once a sequence on top. The time-domain engine's clock reads its
    decode steps' coefficients off this function (sim/engine/clock.py)."""
    positions = batch * (k + 1)
    return roofline.step_cost(target, new_tokens=positions, kv_read_tokens=attended_tokens + batch * target.state_read_tokens,
                              attention_pairs=(k + 1) * attended_tokens, sampled_tokens=positions,
                              context_tokens=context_tokens, detail=detail)


def draft_s(draft: roofline.Machine, batch: float, k: int, context_tokens: float) -> float:
    """The draft's k decode steps over the batch at `context_tokens` a sequence: GPU time only,
    as they run inside the engine's step (its host time is the verify step's)."""
    return k * roofline.decode_step(draft, batch, context_tokens, detail=False).time_s


def spec_step(target: roofline.Machine, draft: roofline.Machine, batch: int, context_tokens: float, k: int,
              acceptance: float, detail: bool = True) -> SpecStep:
    """One speculative step of `batch` sequences holding `context_tokens` each: the draft's k
    decode steps at the same batch and context, then the target's verify step (verify_cost)."""
    verify = verify_cost(target, batch, k, batch * target.cache_read_tokens(context_tokens), context_tokens, detail)
    drafting = draft_s(draft, batch, k, context_tokens)
    tokens = expected_tokens_per_step(k, acceptance)
    cycle = verify.wall_s + drafting
    return SpecStep(verify, drafting, tokens, cycle, cycle / tokens)
