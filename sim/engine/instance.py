"""One serving engine instance (one tensor-parallel group): its queues and the steps it runs.

An instance is a composition of three roles, as Vidur and SimPy separate them, each the only
owner of its part of the state:

- the **scheduler** (scheduler.py) decides what the next step carries: admissions, prefill chunks,
  which sequence is preempted or swapped back in, how long a decode run may go;
- the **block manager** (block_manager.py) owns every KV block: the GPU pool, swap space, prefix
  cache and block tables. Nothing else takes or gives a block;
- the **clock**: `StepClock` (clock.py) times each step with sim.roofline.step_cost, and the
  event loop (simulation.py) owns time and the event queue.

The instance itself holds the queues (waiting, swapped, running, prefilling, the decode set) and
carries out what the scheduler decides: it moves sequences between queues, asks the block
manager for their blocks, times the step on the clock, and applies a finished step to every
sequence in it. Lifecycle of a step: `start` asks the scheduler for a plan, times it and asks
the event loop for its end; `interrupt` cuts a multi-step decode run short at the end of the step
in progress when something new arrives; `step_ended` applies the plan and starts the next one.

Its interface to the simulation around it is explicit and narrow. Inward, the event loop calls
`enqueue`, `step_ended`, `kv_released` and `kv_received`, always with the current time, and the
router reads `load()`. Outward, the instance makes four calls, on the `InstanceEvents` it was given
(the Simulation): `step_ends_at`, `pull_kv`, `hand_off` and `finished`; and it reports to the
metrics observer, which records and never changes the simulation. It reads no simulation state.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

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


class InstanceEvents(Protocol):
    """What an instance asks of the simulation around it: its only calls outward (the metrics
    observer aside). `Simulation` implements it."""

    def step_ends_at(self, time_s: float, inst: Instance, version: int) -> None:
        """Call `inst.step_ended(version, time_s)` at `time_s` (a re-planned step bumps the
        version, so the stale end is ignored)."""

    def pull_kv(self, seq: Seq, dest: Instance, bytes_per_rank: float, now: float) -> None:
        """`dest` has allocated room for a handed-off `seq`: move its KV from the prefill instance,
        then call `kv_released` on the source and `kv_received` on `dest`."""

    def hand_off(self, seq: Seq, source: Instance, now: float) -> None:
        """A disaggregated prefill instance finished `seq`'s prompt: queue it at a decode instance."""

    def finished(self, seq: Seq, inst: Instance, now: float) -> None:
        """`seq` produced its last token on `inst`."""


class Instance:
    """State and mechanics of one engine instance: see the module docstring for its roles and
    its interface. `events` is the simulation (InstanceEvents), `metrics` the observer."""

    def __init__(self, index: int, role: str, setup, events: InstanceEvents, metrics, max_run_steps: int = 1 << 62):
        cfg = setup.config
        self.events = events
        self.metrics = metrics
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
        self.spec_carry = 0.0  # speculative decoding: the fraction of a token the cycles so far owe (SpecDecode.advance)
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

    # ----- what the event loop calls --------------------------------------------------------
    def enqueue(self, seq: Seq, now: float) -> None:
        """A request (or a disaggregated hand-off) reaches this instance's queue at `now`."""
        seq.state = WAITING
        seq.home = self
        self.waiting.append(seq)
        self._poke(now)

    def step_ended(self, version: int, now: float) -> None:
        """The step planned as `version` ends at `now` (a re-planned step's old end is ignored)."""
        if version == self.version:
            self._finish(now)

    def kv_released(self, seq: Seq, now: float) -> None:
        """A decode instance has pulled `seq`'s KV: free it here."""
        self.blocks.release(seq.remote_table)
        seq.remote_table = None
        self._poke(now)

    def kv_received(self, seq: Seq, now: float) -> None:
        """The KV pull for `seq` is complete. It joins the decode set at the next step boundary:
        joining in the middle of a run would credit it with steps it did not take."""
        seq.remote_from = None
        self.arrived_kv.append(seq)
        self._poke(now)

    def _poke(self, now: float) -> None:
        """Something changed (a request arrived, blocks came back): start a step if idle, or cut a
        long decode run short at the end of the step in progress."""
        if not self.busy:
            self._start(now)
        else:
            self._interrupt(now)

    def _interrupt(self, now: float) -> None:
        p = self.plan
        if p.run is None or p.k <= 1:
            return
        j = p.run.steps_within(now - p.t0, p.k)
        if j < p.k:
            p.k = j
            p.blocks_planned = self.decoding.blocks_needed(j)
            self.version += 1
            self.events.step_ends_at(p.t0 + p.run.total_s(j), self, self.version)

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
            table = seq.table
            written = blocks.table_blocks if self.full_table_recompute else table.shared + table.private
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
            self.metrics.admitted(seq, now)
        if remote:
            # Every rank moves its own shard of the cache over its own link, in parallel.
            self.events.pull_kv(seq, self, seq.target * self.clock.kv_bytes_per_token + self.clock.state_bytes_per_sequence, now)
            return
        hit_tokens = (gpu_hit + host_hit) * self.block_size
        seq.computed = hit_tokens
        seq.hit_tokens += hit_tokens
        self.new_hit_tokens += hit_tokens
        if self.prefix_caching:
            self.prefix_queries += seq.target
            self.prefix_hits += hit_tokens
            self.metrics.prefix_query(self, seq.target, hit_tokens)
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
        self.metrics.preempted(self, seq, now, "swap" if copy_s is not None else "recompute")
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
    def _start(self, now: float) -> None:
        """Plan and launch the next step, or go idle."""
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
        self.events.step_ends_at(p.end_s(), self, self.version)

    def cycle_tokens(self) -> int:
        """Tokens the next whole decode step gives each decoding sequence: 1, or under speculative
        decoding the next integer share of the running sum of E (SpecDecode.advance)."""
        spec = self.clock.spec
        return 1 if spec is None else spec.advance(self.spec_carry)[0]

    def _take_cycle(self) -> int:
        spec = self.clock.spec
        if spec is None:
            return 1
        tokens, self.spec_carry = spec.advance(self.spec_carry)
        return tokens

    def plan_decode_run(self, p: Plan, now: float, k: int, cycle: bool = False) -> None:
        """Fill `p` with a run of `k` pure decode steps of the decode set (k chosen by the scheduler).
        `cycle`: the run is one whole speculative cycle (k its cycle_tokens), whose share of E is taken."""
        dec = self.decoding
        if cycle:
            self._take_cycle()
        p.t0 = now
        p.k = k
        p.decode = True
        p.n = dec.n
        p.chunks = []
        p.run = self.clock.decode_run(dec.n, dec.kv_read, dec.growth(), self.extra_s,
                                      (dec.kv_read + dec.growth() * (p.k - 1) / 2) / dec.n,
                                      dec.context / dec.n)
        p.blocks_planned = dec.blocks_needed(p.k)
        p.dur_s = 0.0

    def plan_step(self, p: Plan, now: float, chunks: list, with_decode: bool) -> None:
        """Fill `p` with one step carrying prefill `chunks` (and the decode set if `with_decode`)."""
        dec = self.decoding
        clock = self.clock
        n = dec.n if with_decode else 0
        # sampled: rows the lm_head computes, every decode (speculative: every position) and each
        # prompt this step completes; decode_extra_s: a speculative draft's steps
        tokens, kv_read, pairs, sampled, decode_extra_s = (clock.decode_shape(n, dec.kv_read, dec.context / n) if n
                                                           else (0, 0.0, 0.0, 0, 0.0))
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
        p.k = self._take_cycle() if n else 0
        p.decode = bool(n)
        p.n = n
        p.chunks = chunks
        p.run = None
        p.dur_s = clock.step_s(tokens, kv_read, pairs, sampled, context) + decode_extra_s + self.extra_s
        p.blocks_planned = 0
        if chunks:
            self.metrics.prefill_batch(self, now, len(chunks), sum(m for _, m in chunks), self.new_hit_tokens)

    def _finish(self, now: float) -> None:
        """The planned step (or run) has ended at `now`: apply it, then start the next."""
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
        self.metrics.step_tokens(self, p.t0, now, prompt, generated)
        self.metrics.step(p.t0, now, prompt, p.n if p.decode else 0)
        self._start(now)

    def _finish_decode(self, p: Plan, now: float) -> int:
        """Apply k decode steps; return the tokens they generated."""
        dec = self.decoding
        metrics = self.metrics
        k = p.k
        new_blocks = dec.blocks_needed(k)
        self.blocks.grow(new_blocks)
        # Inter-token latency: the first step's token follows each member's previous token (the
        # last decode step's end, or its own first token for newcomers); then k - 1 more gaps.
        first_end = p.t0 + (p.run.step_s(0) if p.run is not None else p.dur_s)
        # A step that carries chunks gives its k tokens (speculative: a whole cycle's) at its end:
        # each of its k gaps is counted as the step over k, as in a run of k steps.
        share = 1 if p.run is not None else k
        n_old = p.n - len(self.joiners)
        if n_old:
            metrics.itl(self, (first_end - self.last_decode_end_s) / share, n_old * share)
        for seq in self.joiners:
            metrics.itl(self, (first_end - seq.last_token_s) / share, share)
        self.joiners.clear()
        if k > 1 and p.run is not None:
            for lo_s, hi_s, count in _segments(p.run, 1, k):
                metrics.itl_linear(self, lo_s, hi_s, count, p.n)
        self.last_decode_end_s = now
        generated = p.n * k
        g = dec.g + k
        for seq in dec.advance(k):
            # A cycle can carry a sequence past its last token: those tokens are not its own.
            generated -= g - seq.finish_g
            self.leave_decode(seq)
            self._finished(seq, now)
        return generated

    def _prefill_done(self, seq: Seq, now: float) -> None:
        self.prefilling.remove(seq)
        seq.generated += 1
        metrics = self.metrics
        if seq.first_token_s < 0:
            seq.first_token_s = now
            metrics.first_token(self, seq, now)
        else:
            metrics.itl(self, now - seq.last_token_s, 1)  # the token after a recompute
        seq.last_token_s = now
        if seq.table.node is not None:  # its prefix's blocks may become the cache's
            self.blocks.share_prefix(seq)
        if seq.generated >= seq.output:
            self._finished(seq, now)
        elif self.role == PREFILL:
            del self.running[seq.id]
            seq.state = HANDOFF
            self.events.hand_off(seq, self, now)
        else:
            self.join_decode(seq, seq.target)

    def _finished(self, seq: Seq, now: float) -> None:
        del self.running[seq.id]
        self.blocks.release(seq.table)
        seq.state = DONE
        self.events.finished(seq, self, now)


def _segments(run: DecodeRun, lo: int, hi: int):
    """Steps lo..hi-1 of a run as linear pieces (first duration, last duration, count)."""
    cuts = [lo, *(s for s in run.breaks() if lo < s < hi), hi]
    for a, b in zip(cuts, cuts[1:], strict=False):
        if b > a:
            yield run.step_s(a), run.step_s(b - 1), b - a
