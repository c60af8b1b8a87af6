"""One module per measurement. Each has `units(plan, models) -> int` (for the progress bar) and
`run(ctx, models) -> dict` (the raw section of the profile's "measurements").

A benchmark never raises for a point it cannot take: it records why (out of time, out of memory,
unsupported by the library) next to the points it did take, so the profile shows its own gaps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..backend import Backend
from ..plan import Plan
from ..progress import Progress, RunLog
from ..timing import Budget, Timing, measure


@dataclass
class Context:
    backend: Backend
    plan: Plan
    budget: Budget
    progress: Progress
    log: RunLog
    seed: int
    units_left: int
    skipped: list[str] = field(default_factory=list)
    save_partial: Callable[[dict], None] | None = None  # set by the suite: checkpoint a section mid-way

    def checkpoint(self, section: dict) -> None:
        """Save the running benchmark's section so far (a long sweep saves after each model)."""
        if self.save_partial is not None:
            self.save_partial(section)

    def target_s(self) -> float:
        """Time the repeats of the next point may take: the plan's target or a fair share of what
        is left of the budget, whichever is smaller (but never below 1 ms)."""
        return max(1e-3, self.budget.slice_s(self.units_left, self.plan.point_target_s))

    def time_point(self, call, n_sets: int) -> Timing:
        return measure(self.backend, call, n_sets, self.plan.repeats, self.target_s())

    def done(self, label: str, units: int = 1) -> None:
        self.units_left = max(0, self.units_left - units)
        self.progress.advance(label, units)

    def out_of_time(self, label: str) -> bool:
        """True (and the point recorded as skipped) once the budget is spent."""
        if self.budget.exhausted():
            self.skipped.append(f"{label}: time budget of {self.plan.budget_s:.0f} s spent")
            self.done(label + " (skipped)")
            return True
        return False

    def fits_in_memory(self, label: str, nbytes: int, fraction: float = 0.6) -> bool:
        free = self.backend.free_memory_bytes()
        if nbytes > fraction * free:
            self.skipped.append(f"{label}: needs {nbytes / 2**30:.2f} GiB, {free / 2**30:.2f} GiB free")
            return False
        return True
