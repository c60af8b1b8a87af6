"""Served latency: what a benchmark client measures in steady state with `concurrency` requests
in flight (TTFT with its queue and in-batch prefill, the ITL others' prefills stretch, the
closed-loop output rate)."""

from __future__ import annotations

from functools import partial

from . import roofline
from .engine_rules import EngineRules
from .scenario import Scenario


def served(m: roofline.Machine, s: Scenario, pre: roofline.StepCost, dec: roofline.StepCost, batch: int,
           context: float, chunk: int | None, rules: EngineRules, itl_s: float | None = None) -> dict:
    """The Result fields of served latency.

    Every request's prefill runs inside the running batch: its marginal cost is the decode step
    with the prompt's pass added (in chunks of the step budget) minus the same step without it.
    Over one request's life (prefill and output_tokens steps) each of the other batch - 1 slots
    turns over once, so a request's mean inter-token time carries (batch - 1) such
    prefills; the batch's cycle is output x ITL + batch prefills. Requests beyond the batch wait
    (Little's law: (concurrency / batch - 1) cycles). `itl_s` replaces the decode step's wall time
    as the ITL (speculative decoding: a step yields more than one token a sequence).
    """
    out = s.output_tokens
    itl = dec.wall_s if itl_s is None else itl_s
    if batch == 1:
        # Alone on the engine: the prompt's passes, each a step with its host time, then output - 1
        # decode steps (the time-domain engine's single request, step for step).
        marginal = pre.time_s
        in_batch = pre.wall_s
    else:
        # The decode step of the running batch with one prompt's pass added, minus the same step
        # without it (dec): what the prompt costs the batch (its weights are already being read).
        per_seq = m.cache_read_tokens(context)
        step = chunk or s.prompt_tokens
        passes = -(-s.prompt_tokens // step)
        piece = s.prompt_tokens / passes
        cached = (s.prompt_tokens - piece) / 2  # the mean prefix an average pass of the prompt attends to
        mixed = roofline.step_cost(m, new_tokens=batch + piece,
                                   kv_read_tokens=(batch + 1) * m.state_read_tokens + batch * per_seq + m.cache_read_tokens(cached),
                                   attention_pairs=batch * per_seq + m.arch.causal_pairs(piece, cached),
                                   sampled_tokens=batch + 1, context_tokens=context, detail=False)
        marginal = passes * max(mixed.time_s - dec.time_s, 0.0)
        in_batch = itl + marginal
    cycle_s = out * itl + batch * marginal if batch > 1 else in_batch + (out - 1) * itl
    queue = max(s.concurrency / batch - 1.0, 0.0) * cycle_s
    if batch > 1:
        # A request arrives mid-step, and other prompts may be ahead of it (M/D/1 wait, load rho).
        rho = min(batch * marginal / cycle_s, 0.95)
        queue += 0.5 * itl + rho / (2 * (1 - rho)) * marginal
    if chunk is not None and s.prompt_tokens >= chunk:
        batch_prefill = partial(float, batch * pre.time_s)  # each prompt fills its own passes
    else:
        batch_prefill = partial(_step_time, roofline.prefill, m, s.prompt_tokens, chunk, batch)
    return {
        "ttft_queue_s": queue,
        "ttft_prefill_s": in_batch,
        "served_ttft_s": rules.frontend_s + queue + in_batch,
        "served_itl_s": itl + (batch - 1) * marginal / max(out - 1, 1),
        "served_tokens_per_s": batch * out / cycle_s,
        "prefill_in_batch_s": marginal,
        "_batch_prefill_s_builder": batch_prefill,
    }


def _step_time(step, *args) -> float:
    return step(*args, detail=False).time_s
