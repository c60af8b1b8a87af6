"""Every step of one time-domain run, in order: when it ran, the prompt tokens it computed and the
running decodes it carried. Lesson C3's step timeline draws them for one long prompt arriving among
running answers, whole against chunked.

A run keeps no steps by default (a 10^5-request run makes millions); `step_timeline` switches the
metrics' step log on and runs every decode step as its own event (`max_run_steps=1`, the reference
the closed-form decode runs are tested against), so each bar is one step. It is for small runs:
at most MAX_REQUESTS requests, and the first MAX_STEPS steps are kept.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import Issue
from .config import EngineConfig
from .result import EngineResult
from .run import _error_result, finish, prepare

MAX_REQUESTS = 1000
MAX_STEPS = 20_000


@dataclass(frozen=True)
class StepRecord:
    start_s: float
    end_s: float
    prompt_tokens: int  # prompt tokens the step computed (a whole prompt, or a chunk)
    decode_seqs: int  # running answers that each got a token in the step (0: the decodes waited)


@dataclass(frozen=True)
class StepTimeline:
    result: EngineResult
    steps: tuple[StepRecord, ...]

    def longest_decode_gap(self) -> tuple[float, float]:
        """(start_s, end_s) of the longest wait between two steps that carry decodes: the ends of
        consecutive decode-carrying steps, the gap a running answer sees between its tokens."""
        ends = [s.end_s for s in self.steps if s.decode_seqs]
        gaps = list(zip(ends, ends[1:], strict=False))
        return max(gaps, key=lambda g: g[1] - g[0], default=(0.0, 0.0))


def step_timeline(config: EngineConfig) -> StepTimeline:
    """Run `config` step by step and keep its steps; bad input comes back as the result's errors."""
    n = len(config.workload.trace or ()) if config.workload.arrival == "trace" else config.workload.num_requests
    if isinstance(n, int) and n > MAX_REQUESTS:
        issue = Issue("num_requests", f"a step timeline keeps every step: at most {MAX_REQUESTS:,} requests, got {n:,}")
        return StepTimeline(_error_result(config, [issue]), ())
    sim = prepare(config, max_run_steps=1)
    if isinstance(sim, EngineResult):
        return StepTimeline(sim, ())
    log: list = []
    sim.metrics.step_log = log
    sim.run()
    return StepTimeline(finish(sim), tuple(StepRecord(*row) for row in log[:MAX_STEPS]))
