"""The scheduler of one instance: what its next step carries.

It decides, and the instance carries out. A `Scheduler` reads the instance's queues (waiting,
swapped, running, prefilling, the decode set) and asks the block manager what fits; it chooses
which sequences are admitted, how much of each prompt a step computes, which sequence is
preempted, which swapped sequence comes back, and how many decode steps a closed-form run may
take. Each choice is handed to the instance (`admit`, `swap_in`, `preempt`, `plan_step`,
`plan_decode_run`), which moves the sequence and times the step. The scheduler never takes or
gives a block itself.

All three policies are continuous batching under `max_num_seqs` and a per-step token budget
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

A disaggregated prefill instance plans prefill steps only; a decode instance plans as `chunked`
(its admissions are hand-offs, which take blocks and a seat but compute no prompt). Pure decode
steps with nothing else to do are planned as closed-form runs (see decode_set.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .blocks import blocks_for
from .sequence import RUNNING

if TYPE_CHECKING:
    from .instance import Instance, Plan
    from .sequence import Seq

# Roles of an instance: both phases, or one side of a disaggregated deployment.
MIXED, PREFILL, DECODE = "mixed", "prefill", "decode"
RESERVE_RECHECK_STEPS = 8


class Scheduler:
    __slots__ = ("inst", "blocks", "decoding", "policy", "max_num_seqs", "token_budget", "max_run_steps",
                 "reserve_init", "reserve_min", "reserve_decay", "reserve_reset_g", "decode_reserve", "preempted",
                 "last_step_prefill", "_policy")

    def __init__(self, inst: Instance, setup, max_run_steps: int):
        sched = setup.config.scheduling
        self.inst = inst
        self.blocks = inst.blocks
        self.decoding = inst.decoding
        self.policy = sched.policy if inst.role != DECODE else "chunked"
        self.max_num_seqs = setup.max_num_seqs
        self.token_budget = setup.max_num_batched_tokens
        self.max_run_steps = max_run_steps  # 1: step through every decode step (the closed form's reference)
        # SGLang's admission reserve: new_token_ratio x the output every running request still has
        # to produce. The ratio starts at its initial value, decays linearly to 0.14 x that over 600
        # decode steps while nothing is retracted, and jumps back up after a retraction
        # (SGLANG_INIT_NEW_TOKEN_RATIO 0.7, SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR 0.14,
        # SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS 600 in sglang/srt/global_config.py).
        self.reserve_init = sched.new_token_ratio if sched.admission == "reserve" else 0.0
        self.reserve_min = 0.14 * self.reserve_init
        self.reserve_decay = (self.reserve_init - self.reserve_min) / 600
        self.reserve_reset_g = 0
        self.decode_reserve = 0  # blocks the planned step's decodes will need
        self.preempted = False  # the step being planned preempted a sequence
        self.last_step_prefill = False
        # The function, called with self: a bound method kept on its own object is a reference
        # cycle, and kept a finished run's scheduler (and what it holds) for the garbage collector.
        self._policy = getattr(Scheduler, "_prefill_only" if inst.role == PREFILL else POLICY_METHODS[self.policy])

    def reserve_ratio(self) -> float:
        steps = self.decoding.g - self.reserve_reset_g
        return max(self.reserve_min, self.reserve_init - self.reserve_decay * steps)

    # ----- the plan --------------------------------------------------------------------------
    def plan(self, now: float, p: Plan) -> None:
        """Fill `p` with the instance's next step (p.k == 0 and no chunks: nothing to do)."""
        self.decode_reserve = 0
        self.preempted = False
        inst = self.inst
        if inst.swapped:
            self.swap_in(now)
        self._policy(self, now, p)
        if p.k == 0 and not p.chunks and self.preempted and inst.waiting:
            # Everything that could run was preempted, and a preempting step admits nothing:
            # plan again so the queue's head can start (nothing else would wake the instance).
            self.preempted = False
            if inst.swapped:
                self.swap_in(now)
            self._policy(self, now, p)

    def _fcfs(self, now: float, p: Plan) -> None:
        chunks = self._admit(now, self.token_budget, whole=True, with_decode=False)
        if chunks:
            self.inst.plan_step(p, now, chunks, False)
            self.last_step_prefill = True
            return
        self._decode_or_idle(now, p, single=False)

    def _chunked(self, now: float, p: Plan) -> None:
        dec = self.decoding
        if dec.n:
            self.make_room_for_decode(now)
        budget = self.token_budget - dec.n
        chunks, budget = self._continue_prefills(budget)
        chunks += self._admit(now, budget, whole=False, with_decode=True)
        if chunks:
            self.inst.plan_step(p, now, chunks, dec.n > 0)
            self.last_step_prefill = True
            return
        self._decode_or_idle(now, p, single=False)

    def _lanes(self, now: float, p: Plan) -> None:
        dec = self.decoding
        inst = self.inst
        pending = bool(inst.prefilling or inst.waiting)
        if dec.n and (self.last_step_prefill or not pending):
            self._decode_or_idle(now, p, single=pending)
            return
        chunks, budget = self._continue_prefills(self.token_budget)
        chunks += self._admit(now, budget, whole=False, with_decode=True)
        if chunks:
            self.inst.plan_step(p, now, chunks, False)
            self.last_step_prefill = True
            return
        self._decode_or_idle(now, p, single=False)

    def _prefill_only(self, now: float, p: Plan) -> None:
        """A disaggregated prefill instance: prefill steps only (whole prompts under fcfs, chunks of
        the budget otherwise); finished prefills are handed to a decode instance."""
        whole = self.policy == "fcfs"
        chunks, budget = ([], self.token_budget) if whole else self._continue_prefills(self.token_budget)
        chunks += self._admit(now, budget, whole=whole, with_decode=False)
        if chunks:
            self.inst.plan_step(p, now, chunks, False)
            self.last_step_prefill = True
        else:
            _idle(p)

    def _decode_or_idle(self, now: float, p: Plan, single: bool) -> None:
        dec = self.decoding
        if dec.n:
            self.make_room_for_decode(now)
        if not dec.n:
            _idle(p)
            return
        if self.preempted:
            single = True  # the victim's blocks may admit the queue's head at the very next plan
        inst = self.inst
        # A single step is one decode step of the engine: under speculative decoding a whole cycle,
        # its cycle_tokens steps of one token each (clock.py). Every plan keeps a cycle's blocks
        # free (make_room_for_decode), so a run stops where the next plan would have to preempt.
        cycle = inst.cycle_tokens()
        room = min(dec.steps_to_milestone(), dec.max_steps(self.blocks.reclaimable()) - (cycle - 1))
        k = min(cycle, room) if single else min(room, self.max_run_steps)
        if self.reserve_init and inst.waiting and len(inst.running) < self.max_num_seqs:
            # The reserve ratio shrinks every step, so the head of the queue can become admissible
            # in the middle of a run: look again every few steps (the one approximation of the
            # closed form; admission comes at most RESERVE_RECHECK_STEPS - 1 steps late).
            k = min(k, RESERVE_RECHECK_STEPS)
        inst.plan_decode_run(p, now, max(k, 1), cycle=single)
        self.last_step_prefill = False

    # ----- what a step carries -----------------------------------------------------------------
    def _continue_prefills(self, budget: int) -> tuple[list, int]:
        chunks = []
        for seq in self.inst.prefilling:
            if budget <= 0:
                break
            take = min(seq.target - seq.computed, budget)
            chunks.append((seq, take))
            budget -= take
        return chunks, budget

    def _admit(self, now: float, budget: int, whole: bool, with_decode: bool) -> list:
        inst = self.inst
        if self.preempted or inst.swapped or budget <= 0 or not inst.waiting:
            # No new admissions in a step that had to preempt (vLLM V1), nor while swapped-out
            # sequences wait to come back (vLLM V0 schedules no prefill while its swapped queue is non-empty).
            return []
        self.decode_reserve = self.decoding.blocks_needed(self.inst.cycle_tokens()) if with_decode and self.decoding.n else 0
        return self.admit_from_waiting(now, budget, whole)

    def admit_from_waiting(self, now: float, budget: int, whole: bool) -> list:
        """Admit waiting sequences in FCFS order while `budget` prefill tokens remain (`whole`:
        every admitted prompt is computed in this step, the first even if larger than the
        budget). Stops at the first sequence that does not fit. Returns the new chunks."""
        chunks = []
        waiting = self.inst.waiting
        while waiting and budget > 0:
            seq = waiting[0]
            if seq.remote_from is not None:  # a disaggregated hand-off: blocks and a seat, no prefill
                if not self.try_admit(seq, now):
                    break
                waiting.popleft()
                continue
            if whole and chunks and seq.target - seq.computed > budget:
                break
            if not self.try_admit(seq, now):
                break
            waiting.popleft()
            todo = seq.target - seq.computed
            take = todo if whole else min(todo, budget)
            chunks.append((seq, take))
            budget -= take
        return chunks

    def try_admit(self, seq: Seq, now: float) -> bool:
        """Admit `seq` (new, recomputing, or a disaggregated hand-off) if a seat and its blocks are
        free, keeping free what the decode step being planned and (reserve admission) the running
        requests' remaining output will need."""
        inst = self.inst
        if len(inst.running) >= self.max_num_seqs:
            return False
        _, gpu_hit, host_hit, need, headroom = self.blocks.admission(seq)
        # The decode step being planned takes its new blocks when it ends: keep them free.
        spare = headroom - self.decode_reserve
        if self.reserve_init:
            pending = self.decoding.remaining_output() + sum(s.output - s.generated for s in inst.prefilling)
            pending += seq.output - seq.generated
            spare -= blocks_for(int(self.reserve_ratio() * pending), self.blocks.block_size)
        if spare < 0:
            return False
        inst.admit(seq, now, gpu_hit, host_hit, need)
        return True

    def swap_in(self, now: float) -> None:
        """Bring swapped sequences back first (they hold no GPU blocks but have priority over new
        work, as in vLLM), as many as seats and blocks allow."""
        inst = self.inst
        swapped = inst.swapped
        while swapped and len(inst.running) < self.max_num_seqs:
            seq = swapped[0]
            if not self.blocks.can_swap_in(seq):
                break
            swapped.popleft()
            inst.swap_in(seq)

    def make_room_for_decode(self, now: float) -> None:
        """Preempt the most recently admitted sequences until the next decode step's new blocks
        fit (vLLM: the running queue's tail is preempted first)."""
        dec = self.decoding
        inst = self.inst
        while dec.n and dec.blocks_needed(inst.cycle_tokens()) > self.blocks.reclaimable():
            victim = next((s for s in reversed(inst.running.values()) if s.state == RUNNING), None)
            if victim is None:
                break
            self.preempted = True
            self.reserve_reset_g = dec.g  # SGLang: a retraction resets the reserve ratio
            inst.preempt(victim, now)


def _idle(p: Plan) -> None:
    p.k = 0
    p.chunks = []
    p.run = None
    p.blocks_planned = 0


POLICY_METHODS = {"fcfs": "_fcfs", "chunked": "_chunked", "lanes": "_lanes"}
