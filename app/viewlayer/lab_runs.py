"""The serving lab's engine runs, driven the same way in both runtimes: the chosen policy's run, then
its comparison, and the rate sweep, each advanced a slice of events at a time.

The lab's session (`lab_session.LabSession`, in both runtimes) holds one `LabRuns`. It owns the
engine jobs; every call returns the run fields that changed, as a dict (`result`, `compare`,
`issues`, `running`, `progress`, `status`, `done_requests`, `total_requests`, `sweep`,
`sweep_running`, `sweep_progress`), which the session applies and records for its host.
Standard library only: it runs in Pyodide.
"""

from __future__ import annotations

from kvlab.sim.engine.sweep import Job, band_from, seed_band_job

from .lab_status import run_status

SWEEP_SEEDS = 3  # random seeds per rate in the sweep: the knee is shown as a band, not one draw's point


class LabRuns:
    __slots__ = ("_job", "_cmp_job", "_sweep_job")

    def __init__(self):
        self._job: Job | None = None
        self._cmp_job: Job | None = None
        self._sweep_job: Job | None = None

    @property
    def running(self) -> bool:
        """The main run or its comparison has slices to go."""
        return self._job is not None or self._cmp_job is not None

    @property
    def busy(self) -> bool:
        return self._job is not None or self._cmp_job is not None or self._sweep_job is not None

    def start(self, main, comparison=None) -> dict:
        """Cancel the run in progress (and its comparison) and queue `main`, then `comparison`
        (an EngineConfig, or None). Nothing runs until `advance`."""
        for job in (self._job, self._cmp_job):
            if job is not None and not job.done:
                job.cancel()
        self._job = Job([main])
        self._cmp_job = Job([comparison]) if comparison is not None else None
        return {"running": True, "progress": 0.0, "status": "simulating\u2026", "compare": None}

    def start_sweep(self, base, rates: list[float], seed: int) -> dict:
        """Cancel a sweep in progress and queue one of `base` (Poisson arrivals) at each rate, with
        SWEEP_SEEDS seeds from `seed`."""
        if self._sweep_job is not None and not self._sweep_job.done:
            self._sweep_job.cancel()
        if base.workload.arrival != "poisson":
            base = base.with_(arrival="poisson")
        self._sweep_job = seed_band_job(base, rates, [seed + i for i in range(SWEEP_SEEDS)])
        return {"sweep_running": True, "sweep_progress": 0.0}

    def cancel(self) -> None:
        """Stop everything; the next `advance` publishes what the runs had done (marked cancelled)."""
        for job in (self._job, self._cmp_job, self._sweep_job):
            if job is not None and not job.done:
                job.cancel()

    def advance(self, events: int) -> dict:
        """About `events` engine events of the main run, else its comparison, else the sweep. The
        main result is published as soon as it is done; the comparison follows a slice later."""
        if self._job is not None:
            job = self._job
            job.advance(events)
            if not job.done:
                return _progress(job, 0.5 if self._cmp_job is not None else 1.0, 0.0)
            self._job = None
            if job.cancelled:
                self._cmp_job = None
            return _main_done(job.results[0], job.cancelled, self._cmp_job is not None)
        if self._cmp_job is not None:
            job = self._cmp_job
            job.advance(events)
            if not job.done:
                return _progress(job, 0.5, 0.5)
            self._cmp_job = None
            return _comparison_done(job.results[0], job.cancelled)
        if self._sweep_job is not None:
            job = self._sweep_job
            job.advance(events)
            if not job.done:
                return {"sweep_progress": job.progress}
            self._sweep_job = None
            return {"sweep": band_from(job), "sweep_running": False, "sweep_progress": 1.0}
        return {}


def finished_run(main, comparison=None) -> dict:
    """The run fields once `main` (an EngineResult), then `comparison` (or None: none was asked
    for), have finished: what `advance` returns along the way, for a run known already."""
    changes = _main_done(main, False, comparison is not None)
    if comparison is not None and changes["running"]:
        changes.update(_comparison_done(comparison, False))
    return changes


def _main_done(main, cancelled: bool, comparing: bool) -> dict:
    still = comparing and main.ok
    return {"result": main if main.ok else None, "issues": list(main.errors), "running": still,
            "progress": 0.5 if still else 1.0, "status": run_status(main, cancelled)}


def _comparison_done(other, cancelled: bool) -> dict:
    return {"compare": other if other.ok and not cancelled else None, "running": False, "progress": 1.0}


def _progress(job: Job, share: float, offset: float) -> dict:
    return {"progress": offset + share * job.progress, "done_requests": job.completed_requests,
            "total_requests": job.total_requests}
