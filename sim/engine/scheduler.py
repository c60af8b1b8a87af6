"""Scheduling policies: what the next step of an instance carries.

All three are continuous batching under `max_num_seqs` and a per-step token budget
(`max_num_batched_tokens`), with FCFS admission against the KV pool (a request enters only if its
blocks fit, keeping the watermark free). They differ in how prefill and decode share the GPU:

``fcfs``     one queue, prefill first, whole prompts (vLLM before chunked prefill). While waiting
             requests can be admitted, the step is a prefill of as many whole prompts as fit the
             budget (a longer prompt runs alone); every decoding sequence waits for it. Otherwise
             the step is a decode of all running sequences.
``chunked``  every step carries all decoding sequences first (one token each), then spends what is
             left of the budget on prefill chunks: partial prefills first, then new admissions
             (vLLM V1, Sarathi-Serve, SGLang's chunked_prefill_size).
``lanes``    seed 000's fix: separate decode and prefill steps with decode priority. A decode step
             runs whenever sequences are decoding; between two decode steps the prefill lane gets
             one step of at most the budget, so a decode waits at most one chunk, never one prompt.

Pure decode steps with nothing else to do are planned as closed-form runs (see decode_set.py).
"""

from __future__ import annotations

from .instance import PREFILL, Instance, Plan


def _continue_prefills(inst: Instance, budget: int) -> tuple[list, int]:
    chunks = []
    for seq in inst.prefilling:
        if budget <= 0:
            break
        take = min(seq.target - seq.computed, budget)
        chunks.append((seq, take))
        budget -= take
    return chunks, budget


def _admit(inst: Instance, now: float, budget: int, whole: bool, with_decode: bool) -> list:
    if inst.preempted_this_step or inst.swapped or budget <= 0 or not inst.waiting:
        # No new admissions in a step that had to preempt (vLLM V1), nor while swapped-out
        # sequences wait to come back (vLLM V0 schedules no prefill while its swapped queue is non-empty).
        return []
    inst.decode_reserve = inst.decoding.blocks_needed(1) if with_decode and inst.decoding.n else 0
    return inst.admit_from_waiting(now, budget, whole)


def plan_fcfs(inst: Instance, now: float, p: Plan) -> None:
    chunks = _admit(inst, now, inst.token_budget, whole=True, with_decode=False)
    if chunks:
        inst.plan_step(p, now, chunks, with_decode=False)
        return
    _decode_or_idle(inst, now, p, single=False)


def plan_chunked(inst: Instance, now: float, p: Plan) -> None:
    dec = inst.decoding
    if dec.n:
        inst.make_room_for_decode(now)
    budget = inst.token_budget - dec.n
    chunks, budget = _continue_prefills(inst, budget)
    chunks += _admit(inst, now, budget, whole=False, with_decode=True)
    if chunks:
        inst.plan_step(p, now, chunks, with_decode=dec.n > 0)
        return
    _decode_or_idle(inst, now, p, single=False)


def plan_lanes(inst: Instance, now: float, p: Plan) -> None:
    dec = inst.decoding
    pending = bool(inst.prefilling or inst.waiting)
    if dec.n and (inst.last_step_prefill or not pending):
        _decode_or_idle(inst, now, p, single=pending)
        return
    chunks, budget = _continue_prefills(inst, inst.token_budget)
    chunks += _admit(inst, now, budget, whole=False, with_decode=True)
    if chunks:
        inst.plan_step(p, now, chunks, with_decode=False)
        return
    _decode_or_idle(inst, now, p, single=False)


def plan_prefill_only(inst: Instance, now: float, p: Plan) -> None:
    """A disaggregated prefill instance: prefill steps only (whole prompts under fcfs, chunks of
    the budget otherwise); finished prefills are handed to a decode instance."""
    whole = inst.policy == "fcfs"
    chunks, budget = ([], inst.token_budget) if whole else _continue_prefills(inst, inst.token_budget)
    chunks += _admit(inst, now, budget, whole=whole, with_decode=False)
    if chunks:
        inst.plan_step(p, now, chunks, with_decode=False)
    else:
        _idle(p)


def _decode_or_idle(inst: Instance, now: float, p: Plan, single: bool) -> None:
    if inst.decoding.n:
        inst.make_room_for_decode(now)
    if inst.decoding.n:
        inst.plan_decode_run(p, now, single)
    else:
        _idle(p)


def _idle(p: Plan) -> None:
    p.k = 0
    p.chunks = []
    p.run = None
    p.blocks_planned = 0


POLICIES = {"fcfs": plan_fcfs, "chunked": plan_chunked, "lanes": plan_lanes}


def plan(inst: Instance, now: float, p: Plan) -> None:
    """Fill `p` with the instance's next step (p.k == 0 and no chunks: nothing to do)."""
    if inst.swapped:
        inst.swap_in(now)
    if inst.role == PREFILL:
        plan_prefill_only(inst, now, p)
    else:
        POLICIES[inst.policy](inst, now, p)
