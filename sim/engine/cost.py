"""What a time-domain run's output costs: every GPU billed for the whole run.

The steady-state model prices a token from its rates (sim.evaluate's served and decode costs); a run
of the engine has no steady state to read, so its price comes from what it measured: the GPU-hours
it held (GPUs x duration, idle time included, as a rented GPU bills it) over the output tokens it
produced.
"""

from __future__ import annotations

from ..evaluate import SECONDS_PER_HOUR
from .result import EngineResult


def gpu_hours(result: EngineResult) -> float:
    """GPU-hours the run held: every GPU of every instance, from the first arrival to the last token."""
    return result.gpus * result.duration_s / SECONDS_PER_HOUR


def dollars_per_million_output_tokens(result: EngineResult, dollars_per_gpu_hour: float) -> float | None:
    """The run's GPU-hours at `dollars_per_gpu_hour`, per million output tokens; None when it produced none."""
    if result.output_tokens_generated <= 0:
        return None
    return dollars_per_gpu_hour * gpu_hours(result) / result.output_tokens_generated * 1e6
