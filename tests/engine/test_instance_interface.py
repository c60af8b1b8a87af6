"""The instance's interface to the simulation is the four InstanceEvents methods and nothing else:
an Instance driven by a 20-line event loop of this test's own (which implements only those four
and would raise on any other call) serves the same requests to the same finish times, to the last
bit, as the engine's Simulation."""

from __future__ import annotations

from heapq import heappop, heappush
from itertools import count

from kvlab.sim.engine import prepare
from kvlab.sim.engine.instance import Instance, InstanceEvents
from kvlab.sim.engine.metrics import Metrics
from kvlab.sim.engine.sequence import Seq

from .conftest import small

READY, STEP = 1, 3  # the Simulation's priorities (at equal times, a request reaching the queue goes before a step end)


class MiniLoop:
    """A bare event loop that implements InstanceEvents for one instance (no disaggregation)."""

    def __init__(self):
        self.heap: list = []
        self.counter = count()
        self.finish_s: dict[int, float] = {}

    def push(self, time_s: float, priority: int, fn) -> None:
        heappush(self.heap, (time_s, priority, next(self.counter), fn))

    def run(self) -> None:
        while self.heap:
            time_s, _, _, fn = heappop(self.heap)
            fn(time_s)

    # InstanceEvents
    def step_ends_at(self, time_s: float, inst: Instance, version: int) -> None:
        self.push(time_s, STEP, lambda now: inst.step_ended(version, now))

    def pull_kv(self, seq, dest, bytes_per_rank, now):
        raise AssertionError("no disaggregation here")

    def hand_off(self, seq, source, now):
        raise AssertionError("no disaggregation here")

    def finished(self, seq: Seq, inst: Instance, now: float) -> None:
        assert seq.id not in self.finish_s
        self.finish_s[seq.id] = now


def test_an_instance_needs_nothing_of_the_simulation_but_its_events():
    assert {m for m in vars(InstanceEvents) if not m.startswith("_")} == {"step_ends_at", "pull_kv", "hand_off", "finished"}
    reference = prepare(small(n=150, rate=12.0))  # a tight pool: admissions wait and sequences are preempted
    reference.run()
    m = reference.metrics
    assert sum(i.preemptions for i in reference.instances) > 0

    loop = MiniLoop()
    setup = reference.setup
    metrics = Metrics(len(reference.requests), 1, m.interval_s, setup.config.log_interval_s, 10_000, setup.block_size)
    inst = Instance(0, "mixed", setup, loop, metrics)
    for req in reference.requests:
        # the request reaches the scheduler when the reference run's front end let it through
        loop.push(m.ready_s[req.id], READY, lambda now, req=req: inst.enqueue(Seq(req, req.arrival_s), now))
    loop.run()

    assert loop.finish_s == {i: m.finish_s[i] for i in range(len(reference.requests))}
    assert inst.blocks.table_blocks == 0 and not inst.running and not inst.busy
