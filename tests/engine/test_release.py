"""A finished or cancelled run is freed by reference counting, not left for the garbage collector:
the serving lab replaces runs as fast as a student moves a setting, and on kvlab serve a full
collection is a pause for every session (app/server/quiet_gc.py)."""

from __future__ import annotations

import gc
import weakref

import pytest
from kvlab.sim.engine import EngineConfig
from kvlab.sim.engine.sweep import Job


@pytest.mark.parametrize("how", ["cancelled", "finished"])
@pytest.mark.parametrize("changes", [{}, {"policy": "fcfs", "prefix_caching": True}, {"disaggregated": True}])
def test_a_run_is_freed_as_soon_as_it_is_dropped(how, changes):
    job = Job([EngineConfig().with_(num_requests=400, **changes)])
    job.advance(1_500)
    sim = weakref.ref(job._current)
    instances = [weakref.ref(i) for i in job._current.instances]
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        if how == "cancelled":
            job.cancel()
        else:
            while not job.advance(10_000):
                pass
        assert job.results and job.results[0].completed > 0
        del job
        assert sim() is None, "the simulation is still referenced: a reference cycle keeps it for the collector"
        assert all(i() is None for i in instances)
    finally:
        if was_enabled:
            gc.enable()
