"""One serving engine instance (one tensor-parallel group): its queues, KV memory and the steps
it runs. The scheduler (scheduler.py) decides what goes into a step; this module carries it out:
admission with block allocation, preemption, swapping, prefix-cache hits, and applying a finished
step or run of steps to every sequence in it.

Lifecycle of a step: `start()` asks the policy for a plan, times it on the roofline clock and
schedules its end; `interrupt()` cuts a multi-step decode run short at the end of the step in
progress when something new arrives; `finish()` applies the plan and starts the next one.
"""

from __future__ import annotations

from collections import deque

from .block_manager import BlockManager
from .clock import DecodeRun, StepClock
from .decode_set import DecodeSet
from .scheduler import DECODE, MIXED, PREFILL, Scheduler
from .sequence import DONE, HANDOFF, RECEIVING, RUNNING, SWAPPED, WAITING, Seq

__all__ = ["DECODE", "MIXED", "PREFILL", "Instance", "Plan"]


class Plan:
    """What the instance is executing: `k` decode steps of the decode set (k > 1 only for a pure
    decode run, timed in closed form by `run`), or one step carrying prefill `chunks` (with the
    decode set when `decode` is true), lasting `dur_s`."""

    __slots__ = ("t0", "k", "run", "decode", "n", "chunks", "dur_s", "blocks_planned")

    def __init__(self):
        self.t0 = 0.0
        self.k = 0
        self.run: DecodeRun | None = None
        self.decode = False
        self.n = 0
        self.chunks: list = []
        self.dur_s = 0.0
        self.blocks_planned = 0

    def end_s(self) -> float:
        return self.t0 + (self.run.total_s(self.k) if self.run is not None else self.dur_s)


class Instance:
    """State and mechanics of one engine instance. `sim` provides the clock (`now_s`), event
    scheduling, the metrics observer and the hand-off of finished or transferred sequences."""

    def __init__(self, sim, index: int, role: str, setup, max_run_steps: int = 1 << 62):
        cfg = setup.config
        self.sim = sim
        self.index = index
        self.role = role
        self.clock: StepClock = setup.clock
        self.block_size = setup.block_size
        sched = cfg.scheduling
        self.table_s_per_block = sched.block_table_s_per_block
        self.full_table_recompute = sched.block_table == "full_recompute"
        self.blocks = BlockManager(setup)  # the only owner of this instance's KV block accounting
        self.prefix_caching = self.blocks.cache is not None
        self.waiting: deque[Seq] = deque()
        self.swapped: deque[Seq] = deque()
        self.running: dict[int, Seq] = {}  # admission order; prefilling, decoding and receiving
        self.prefilling: list[Seq] = []
        self.decoding = DecodeSet(self.block_size, self.clock)
        self.scheduler = Scheduler(self, setup, max_run_steps)  # decides what each step carries
        self.joiners: list[Seq] = []  # joined the decode set since its last step
        self.last_decode_end_s = 0.0
        self.arrived_kv: list[Seq] = []  # pulled KV complete, waiting for the next step boundary
        self.busy = False
        self.version = 0
        self.plan = Plan()
        self.extra_s = 0.0  # swap, host-load and scheduler time of the step being planned
        self.new_hit_tokens = 0  # prefix-cache hits of this step's admissions (SGLang's #cached-token)
        self.counter = 0
        # counters the metrics read
        self.preemptions = 0
        self.swaps_out = 0
        self.steps = 0
        self.prefix_queries = 0
        self.prefix_hits = 0
        self.scheduler_s = 0.0  # block-table bookkeeping charged to steps
        self.host_load_s = 0.0  # prefix blocks copied back from the host tier
        self.swap_s = 0.0  # swap-out and swap-in copies

    # ----- what the observers read ---------------------------------------------------------
    def used_blocks_at(self, t: float) -> float:
        """The block manager's `used` at time t inside the current step, the growth of a decode
        run spread linearly over it (for time series; the invariants use exact counts)."""
        used = self.blocks.used()
        p = self.plan
        if self.busy and p.blocks_planned:
            end = p.end_s()
            if end > p.t0:
                used += p.blocks_planned * min(max((t - p.t0) / (end - p.t0), 0.0), 1.0)
        return used

    def load(self) -> int:
        return len(self.waiting) + len(self.running) + len(self.swapped)

    # ----- entering the instance -------------------------------------------------------------
    def enqueue(self, seq: Seq, front: bool = False) -> None:
        seq.state = WAITING
        seq.home = self
        if front:
            self.waiting.appendleft(seq)
        else:
            self.waiting.append(seq)
        self.poke()

    def poke(self) -> None:
        """Something changed (a request arrived, blocks came back): start a step if idle, or cut a
        long decode run short at the end of the step in progress."""
        if not self.busy:
            self.start()
        else:
            self.interrupt()

    def interrupt(self) -> None:
        p = self.plan
        if p.run is None or p.k <= 1:
            return
        j = p.run.steps_within(self.sim.now_s - p.t0, p.k)
        if j < p.k:
            p.k = j
            p.blocks_planned = self.decoding.blocks_needed(j)
            self.version += 1
            self.sim.step_done_at(p.t0 + p.run.total_s(j), self)

    # ----- admission -----------------------------------------------------------------------------
    def admit(self, seq: Seq, now: float, gpu_hit: int, host_hit: int, need: int) -> None:
        """The scheduler admits `seq` (new, recomputing, or a disaggregated hand-off) with what
        the block manager's `admission` found: allocate its blocks, pin its cached prefix, charge
        the scheduler's CPU time, and start its prefill (or, for a hand-off, pull its KV)."""
        blocks = self.blocks
        remote = seq.remote_from is not None
        load_s = blocks.allocate(seq, gpu_hit, host_hit, need)
        if host_hit:
            self.extra_s += load_s
            self.host_load_s += load_s
        if self.table_s_per_block:
            # Seed 000: rewriting every running sequence's table on each admission makes the cost of
            # one admission grow with the running batch, and the total with its square.
            written = blocks.table_blocks if self.full_table_recompute else seq.table.blocks
            cost = written * self.table_s_per_block
            self.extra_s += cost
            self.scheduler_s += cost
        self.counter += 1
        seq.order = self.counter
        seq.state = RUNNING if not remote else RECEIVING
        seq.home = self
        self.running[seq.id] = seq
        if seq.admitted_s < 0:
            seq.admitted_s = now
            self.sim.metrics.admitted(seq, now)
        if remote:
            self.sim.pull_kv(seq, self)
            return
        hit_tokens = (gpu_hit + host_hit) * self.block_size
        seq.computed = hit_tokens
        seq.hit_tokens += hit_tokens
        self.new_hit_tokens += hit_tokens
        if self.prefix_caching:
            self.prefix_queries += seq.target
            self.prefix_hits += hit_tokens
            self.sim.metrics.prefix_query(self, seq.target, hit_tokens)
        self.prefilling.append(seq)

    def swap_in(self, seq: Seq) -> None:
        """The scheduler brings a swapped sequence back: its blocks return to HBM and it rejoins
        the decode set."""
        copy_s = self.blocks.swap_in(seq)
        self.extra_s += copy_s
        self.swap_s += copy_s
        self.counter += 1
        seq.order = self.counter
        seq.state = RUNNING
        self.running[seq.id] = seq
        self.join_decode(seq, seq.computed)

    # ----- preemption ------------------------------------------------------------------------------
    def preempt(self, seq: Seq, now: float) -> None:
        """The scheduler chose `seq` to make room: swap it out or drop its KV for a recompute."""
        self.preemptions += 1
        seq.preemptions += 1
        del self.running[seq.id]
        was_decoding = seq.decoding
        if was_decoding:
            cached = self.leave_decode(seq)
            seq.last_token_s = max(seq.last_token_s, self.last_decode_end_s)
        else:
            self.prefilling.remove(seq)
            cached = 0
        # Swapped out, the whole table (shared prefix blocks included) goes to host memory and
        # comes back as private blocks: the copy costs blocks x block bytes over the host link each way.
        copy_s = self.blocks.preempt(seq, cached, was_decoding)
        self.sim.metrics.preempted(self, seq, now, "swap" if copy_s is not None else "recompute")
        if copy_s is not None:
            self.extra_s += copy_s
            self.swap_s += copy_s
            seq.computed = cached
            seq.state = SWAPPED
            self.swaps_out += 1
            self.swapped.append(seq)
            return
        # Recompute: the prompt and every token generated so far are prefilled again; the last
        # sampled token is among them, and the re-prefill samples the next one.
        seq.target = seq.prompt + seq.generated
        seq.computed = 0
        seq.state = WAITING
        self.waiting.appendleft(seq)

    # ----- decode set --------------------------------------------------------------------------------
    def join_decode(self, seq: Seq, cached: int) -> None:
        self.decoding.add(seq, cached)
        seq.decoding = True
        self.joiners.append(seq)

    def leave_decode(self, seq: Seq) -> int:
        """Remove a member (preemption or finish); its table's private blocks catch up with the
        blocks the runs allocated for it in aggregate."""
        cached = self.decoding.remove(seq)
        seq.decoding = False
        if self.joiners and seq in self.joiners:
            self.joiners.remove(seq)
        self.blocks.catch_up(seq.table, cached)
        return cached

    # ----- running a step ------------------------------------------------------------------------------
    def start(self) -> None:
        """Plan and launch the next step, or go idle."""
        now = self.sim.now_s
        self.extra_s = 0.0
        self.new_hit_tokens = 0
        p = self.plan
        if self.arrived_kv:
            for seq in self.arrived_kv:
                seq.state = RUNNING
                self.join_decode(seq, seq.target)
            self.arrived_kv.clear()
        self.scheduler.plan(now, p)
        if p.k == 0 and not p.chunks:
            self.busy = False
            return
        self.busy = True
        self.version += 1
        self.steps += 1
        self.sim.step_done_at(p.end_s(), self)

    def plan_decode_run(self, p: Plan, now: float, k: int) -> None:
        """Fill `p` with a run of `k` pure decode steps of the decode set (k chosen by the scheduler)."""
        dec = self.decoding
        p.t0 = now
        p.k = k
        p.decode = True
        p.n = dec.n
        p.chunks = []
        p.run = self.clock.decode_run(dec.n, dec.kv_read, dec.growth(), self.extra_s,
                                      (dec.kv_read + dec.growth() * (p.k - 1) / 2) / dec.n)
        p.blocks_planned = dec.blocks_needed(p.k)
        p.dur_s = 0.0

    def plan_step(self, p: Plan, now: float, chunks: list, with_decode: bool) -> None:
        """Fill `p` with one step carrying prefill `chunks` (and the decode set if `with_decode`)."""
        dec = self.decoding
        clock = self.clock
        n = dec.n if with_decode else 0
        tokens = n
        kv_read = dec.kv_read if n else 0.0
        pairs = kv_read
        sampled = n  # rows the lm_head computes: every decode, and each prompt this step completes
        context = kv_read / n if n else None
        for seq, m in chunks:
            r, a = clock.prefill_chunk(m, seq.computed)
            kv_read += r
            pairs += a
            tokens += m
            if seq.computed + m >= seq.target:
                sampled += 1
            if context is None:
                context = seq.computed + m / 2
        p.t0 = now
        p.k = 1 if n else 0
        p.decode = bool(n)
        p.n = n
        p.chunks = chunks
        p.run = None
        p.dur_s = clock.step_s(tokens, kv_read, pairs, sampled, context) + self.extra_s
        p.blocks_planned = 0
        if chunks:
            self.sim.metrics.prefill_batch(self, now, len(chunks), tokens - n, self.new_hit_tokens)

    def finish(self) -> None:
        """The planned step (or run) has ended at sim.now_s: apply it, then start the next."""
        now = self.sim.now_s
        p = self.plan
        generated = self._finish_decode(p, now) if p.decode and p.k else 0
        prompt = 0
        if p.chunks:
            for seq, m in p.chunks:
                prompt += m
                seq.computed += m
                if seq.computed >= seq.target:
                    generated += 1  # a finished prefill samples a token
                    self._prefill_done(seq, now)
        self.sim.metrics.step_tokens(self, p.t0, now, prompt, generated)
        self.start()

    def _finish_decode(self, p: Plan, now: float) -> int:
        """Apply k decode steps; return the tokens they generated."""
        dec = self.decoding
        metrics = self.sim.metrics
        k = p.k
        new_blocks = dec.blocks_needed(k)
        self.blocks.grow(new_blocks)
        # Inter-token latency: the first step's token follows each member's previous token (the
        # last decode step's end, or its own first token for newcomers); then k - 1 more gaps.
        first_end = p.t0 + (p.run.step_s(0) if p.run is not None else p.dur_s)
        n_old = p.n - len(self.joiners)
        if n_old:
            metrics.itl(self, first_end - self.last_decode_end_s, n_old)
        for seq in self.joiners:
            metrics.itl(self, first_end - seq.last_token_s, 1)
        self.joiners.clear()
        if k > 1:
            for lo_s, hi_s, count in _segments(p.run, 1, k):
                metrics.itl_linear(self, lo_s, hi_s, count, p.n)
        self.last_decode_end_s = now
        for seq in dec.advance(k):
            self.leave_decode(seq)
            self._finished(seq, now)
        return p.n * k

    def _prefill_done(self, seq: Seq, now: float) -> None:
        self.prefilling.remove(seq)
        seq.generated += 1
        metrics = self.sim.metrics
        if seq.first_token_s < 0:
            seq.first_token_s = now
            metrics.first_token(self, seq, now)
        else:
            metrics.itl(self, now - seq.last_token_s, 1)  # the token after a recompute
        seq.last_token_s = now
        self.blocks.share_prefix(seq)
        if seq.generated >= seq.output:
            self._finished(seq, now)
        elif self.role == PREFILL:
            del self.running[seq.id]
            seq.state = HANDOFF
            self.sim.hand_off(seq, self)
        else:
            self.join_decode(seq, seq.target)

    def _finished(self, seq: Seq, now: float) -> None:
        del self.running[seq.id]
        self.blocks.release(seq.table)
        seq.state = DONE
        self.sim.finished(seq, self, now)

    # ----- disaggregation ----------------------------------------------------------------------------------
    def handoff_released(self, seq: Seq) -> None:
        """The decode instance has pulled `seq`'s KV: free it here."""
        self.blocks.release(seq.remote_table)
        seq.remote_table = None
        self.poke()

    def received(self, seq: Seq) -> None:
        """The KV pull for `seq` is complete. It joins the decode set at the next step boundary:
        joining in the middle of a run would credit it with steps it did not take."""
        seq.remote_from = None
        self.arrived_kv.append(seq)
        self.poke()


def _segments(run: DecodeRun, lo: int, hi: int):
    """Steps lo..hi-1 of a run as linear pieces (first duration, last duration, count)."""
    s = run._switch
    cuts = [lo, hi] if s is None or not lo < s < hi else [lo, s, hi]
    for a, b in zip(cuts, cuts[1:], strict=False):
        if b > a:
            yield run.step_s(a), run.step_s(b - 1), b - a
