"""The discrete-event loop: arrivals, tokenization, routing, steps, KV hand-offs, completions.

Events are (time_s, priority, counter, handler, payload) tuples on one heap, run as
`handler(payload, time_s)`; ties break on the priority (arrivals before step ends at the same
instant, so a step that ends just as a request arrives can already admit it) and then on the
order they were scheduled. Everything random was drawn up front from `random.Random(seed)`
(workload.py), so a seed fixes the run.

A `Simulation` can be advanced a bounded number of events at a time, which is how the serving
lab shows progress and honours a cancel without threads (Pyodide has none).

The loop owns time and the event queue; the instances (instance.py) own their queues, KV blocks
and steps. They meet at one narrow interface: the loop calls an instance's `enqueue`,
`step_ended`, `kv_released` and `kv_received` with the current time, and the instance calls back
only the four `InstanceEvents` methods implemented here (`step_ends_at`, `pull_kv`, `hand_off`,
`finished`).
"""

from __future__ import annotations

import math
import random
from collections import deque
from heapq import heappop, heappush
from itertools import count

from .blocks import BlockTable
from .instance import DECODE, MIXED, PREFILL, Instance
from .metrics import Metrics
from .sequence import Seq
from .setup import Setup
from .workload import Request

ARRIVAL, READY, TRANSFER, STEP = range(4)
AUTO_POINTS = 400
MAX_POINTS_AUTO = 800
MAX_POINTS_FIXED = 100_000


class StalledError(RuntimeError):
    """The event queue ran dry with requests unfinished: a scheduler bug, never user input."""


class Simulation:
    """One run. `max_run_steps` caps a closed-form decode run; 1 makes the simulator step through
    every decode step one event at a time (the reference the closed form is tested against)."""

    def __init__(self, setup: Setup, requests: list[Request], max_run_steps: int = 1 << 62):
        cfg = setup.config
        self.max_run_steps = max_run_steps
        self.setup = setup
        self.config = cfg
        self.requests = requests
        self.heap: list[tuple] = []
        self._counter = count()
        self.now_s = 0.0
        self.events = 0
        self.completed = 0
        self.cancelled = False
        cl = cfg.cluster
        if cl.disaggregated:
            roles = [PREFILL] * cl.prefill_instances + [DECODE] * cl.decode_instances
        else:
            roles = [MIXED] * cl.replicas
        self._rr = 0
        self._rr_decode = 0
        self.round_robin = cl.router == "round_robin"
        w = cfg.workload
        self.closed = w.arrival == "closed"
        # vllm bench serve's client semaphore: at most `cap` requests in flight, the rest held in
        # arrival order. A closed loop's clients are its cap already.
        self.cap = None if self.closed else w.max_concurrency
        self.in_flight = 0
        self.held: deque[int] = deque()
        self.think_time_s = w.think_time_s
        sched = cfg.scheduling
        self.tokenize_s_per_token = sched.tokenize_s_per_token
        self.serial_tokenizer = sched.tokenizer == "request_thread"
        self._tokenizer_free_s = 0.0
        self.frontend_s = setup.frontend_s
        self.tokenizer_s = 0.0  # total tokenization time
        interval = cfg.sample_interval_s
        if interval > 0:
            max_points = MAX_POINTS_FIXED
        else:
            max_points = MAX_POINTS_AUTO
            span = requests[-1].arrival_s if requests and not self.closed else math.nan
            interval = span / AUTO_POINTS if span and span == span else 0.5
            interval = max(interval, 1e-3)
        self.metrics = Metrics(len(requests), len(roles), interval, cfg.log_interval_s, max_points, setup.block_size)
        self.instances = [Instance(i, role, setup, self, self.metrics, max_run_steps) for i, role in enumerate(roles)]
        self.entry = [i for i in self.instances if i.role != DECODE]
        self.decoders = [i for i in self.instances if i.role == DECODE]
        if self.closed:
            first = min(w.clients, len(requests))
            for i in range(first):
                self._push(0.0, ARRIVAL, self._on_arrival, i)
            self._next_closed = first
        elif requests:
            self._push(requests[0].arrival_s, ARRIVAL, self._on_arrival, 0)

    # ----- the loop ---------------------------------------------------------------------------
    def _push(self, time_s: float, priority: int, handler, payload) -> None:
        heappush(self.heap, (time_s, priority, next(self._counter), handler, payload))

    def advance(self, max_events: int = 1 << 62) -> bool:
        """Process up to `max_events` events; True when the run is over (or cancelled)."""
        heap, metrics, instances = self.heap, self.metrics, self.instances
        done = 0
        while heap and done < max_events and not self.cancelled:
            time_s, _, _, handler, payload = heappop(heap)
            if time_s >= metrics.next_sample_s or time_s >= metrics.next_log_s:
                metrics.sample_until(time_s, instances)
            self.now_s = time_s
            handler(payload, time_s)
            done += 1
        self.events += done
        if not heap and not self.cancelled and self.completed < len(self.requests):
            raise StalledError(f"the event queue ran dry with {len(self.requests) - self.completed} requests unfinished")
        return not heap or self.cancelled

    def run(self) -> None:
        self.advance()

    @property
    def progress(self) -> float:
        return self.completed / len(self.requests) if self.requests else 1.0

    def cancel(self) -> None:
        self.cancelled = True

    def release(self) -> None:
        """Break the run's reference cycles once it is summarised: queued events point back at the
        simulation through bound methods, an instance through its events, and a sequence in
        flight at its instance, whose queues hold the sequence. Unbroken, a dropped simulation
        waited for a full garbage collection: a 100,000-request run cancelled mid-way left
        163,000 unreachable objects, 0.47 s of collection."""
        for inst in self.instances:
            inst.__dict__.clear()  # its queues, block manager and events: nothing reads them after `collect`
        self.heap = []
        self.instances = self.entry = self.decoders = []

    # ----- handlers ------------------------------------------------------------------------------
    def _on_arrival(self, i: int, now: float) -> None:
        if not self.closed and i + 1 < len(self.requests):
            self._push(self.requests[i + 1].arrival_s, ARRIVAL, self._on_arrival, i + 1)
        if self.cap is not None and self.in_flight >= self.cap:
            self.held.append(i)
            return
        self._send(i, now)

    def _send(self, i: int, now: float) -> None:
        """The client sends request `i`: its TTFT and end-to-end clocks start now."""
        self.in_flight += 1
        seq = Seq(self.requests[i], now)
        self.metrics.arrived(seq, now)
        tok = self.tokenize_s_per_token
        if tok or self.frontend_s:
            # Seed 000: tokenization on the request thread serializes every prompt behind the one
            # before it; a worker pool only costs each request its own time.
            start = max(now, self._tokenizer_free_s) if self.serial_tokenizer else now
            ready = start + seq.prompt * tok
            self.tokenizer_s += seq.prompt * tok
            if self.serial_tokenizer:
                self._tokenizer_free_s = ready
            # The engine rule's front end (HTTP, admission), the figure evaluate()'s served TTFT adds.
            self._push(ready + self.frontend_s, READY, self._on_ready, seq)
        else:
            self._route(seq)

    def _on_ready(self, seq: Seq, now: float) -> None:
        self._route(seq)

    def _route(self, seq: Seq) -> None:
        self.metrics.ready(seq, self.now_s)
        self._pick(self.entry, decode=False).enqueue(seq, self.now_s)

    def _pick(self, pool: list[Instance], decode: bool) -> Instance:
        if len(pool) == 1:
            return pool[0]
        if self.round_robin:
            if decode:
                self._rr_decode += 1
                return pool[self._rr_decode % len(pool)]
            self._rr += 1
            return pool[self._rr % len(pool)]
        return min(pool, key=lambda inst: (inst.load(), inst.index))

    # ----- InstanceEvents: what an instance asks of the loop -----------------------------------
    def step_ends_at(self, time_s: float, inst: Instance, version: int) -> None:
        # The instance's own handler: it ignores the end if the step was re-planned (a run cut short).
        self._push(time_s, STEP, inst.step_ended, version)

    def finished(self, seq: Seq, inst: Instance, now: float) -> None:
        self.metrics.finished(inst, seq, now)
        self.completed += 1
        self.in_flight -= 1
        if self.held:
            self._send(self.held.popleft(), now)
        if self.closed and self._next_closed < len(self.requests):
            self._push(now + self.think_time_s, ARRIVAL, self._on_arrival, self._next_closed)
            self._next_closed += 1

    # ----- disaggregated prefill -> decode ----------------------------------------------------
    def hand_off(self, seq: Seq, source: Instance, now: float) -> None:
        """A prefill instance finished `seq`'s prompt: queue it at a decode instance, which pulls
        the KV once it has allocated room (the prefill side keeps its blocks until then)."""
        seq.remote_from = source
        seq.remote_table = seq.table
        seq.table = BlockTable()
        self._pick(self.decoders, decode=True).enqueue(seq, now)

    def pull_kv(self, seq: Seq, dest: Instance, bytes_per_rank: float, now: float) -> None:
        self._push(now + bytes_per_rank / self.setup.kv_transfer_bytes_per_s, TRANSFER, self._on_transfer, seq)

    def _on_transfer(self, seq: Seq, now: float) -> None:
        seq.remote_from.kv_released(seq, now)
        seq.home.kv_received(seq, now)


def make_rng(seed: int) -> random.Random:
    return random.Random(seed)
