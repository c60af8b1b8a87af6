"""Which limit binds a finished run: the one verdict the lab shows and the capstone lesson keys its
"name the limit" questions on.

A run's requests miss their targets for one of a few reasons, and each leaves its own signal in what
the engine measured. The rules below read those signals in a fixed order, the first that holds names
the limit, and the verdict keeps the figure that decided it beside the threshold it was compared to
(so a caller can tell a clear verdict from one on an edge):

1. `none`: at most 1% of requests miss a target; nothing binds at these targets.
2. `repeated_prefill`: half or more of the prompt tokens the GPU computed repeat an opening an earlier
   request already had (a shared system prompt or template computed again; seed 004's prefix economics).
   Removing them at least doubles what the prompt work allows, which no memory lever does, so this
   comes before the load and the pool.
3. `arrivals`: an open loop whose requests arrive 10% or more faster than the engine completes them: the
   queue grows for as long as the load lasts (the knee of seed 004), whatever resource sets the capacity.
4. `pool`: requests were preempted (1% of them or more), or for half the time requests waited the pool
   was 90% used or more. Seed 002: "Cache usage pinned near 100% with a non-empty Waiting queue means
   the pool is your binding constraint", and preemptions should be zero.
5. `batch_cap`: for half the time requests waited, the engine already ran its cap of sequences
   (max_num_seqs), with the pool below the rule above.
6. `prefill`: a quarter or more of the mean TTFT is time in the queue while the pool has room: requests
   wait their turn behind other prompts' prefill (seed 000's tail).
7. `decode_step` or `own_prefill`: nothing queues to speak of, so the misses are each request's own
   work: more requests miss the per-token target (every decode step reads the weights and the batch's
   cache: memory bandwidth) than the first-token target (`decode_step`), or the other way round (a long
   prompt's own prefill is its TTFT floor: `own_prefill`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

# What each verdict is called where the lab and the CLI print it.
LIMITS = {
    "none": "nothing: every request meets its targets",
    "repeated_prefill": "repeated prompt work",
    "arrivals": "arrivals beyond the engine's capacity",
    "pool": "the KV cache pool",
    "batch_cap": "the cap on running sequences (max_num_seqs)",
    "prefill": "prefill compute: requests queue behind other prompts",
    "decode_step": "the decode step's memory reads",
    "own_prefill": "each long prompt's own prefill",
}

# The thresholds of the rules above, each with why it sits where it does.
MISSED_NONE = 0.01  # one request in a hundred missing is noise of a finite run, not a limit
REPEATED_SHARE = 0.5  # half the prompt work repeated: skipping it doubles prefill capacity
OVERLOAD_RATIO = 1.1  # 10% more arriving than completing: a tenth of the load is left queued at the end
PREEMPTED_SHARE = 0.01  # seed 002: preemptions should be zero; 1% of requests is past a stray one
POOL_FULL_USAGE = 0.9  # "pinned near 100%": engines keep a watermark and whole blocks free below it
WAITING_SHARE = 0.5  # the state held for most of the time requests waited
QUEUE_SHARE = 0.25  # queueing a quarter of TTFT: the wait, not the request's own prefill, sets it


@dataclass(frozen=True)
class Signals:
    """What a finished run measured that the rules read (sim/engine/run.py fills it)."""

    completed: int
    missed: int  # requests that missed the TTFT target or the mean ITL target
    missed_ttft: int
    missed_itl: int
    prompt_tokens_computed: int
    repeated_prompt_tokens: int  # computed prompt tokens that repeat an earlier request's opening
    arrival_rate_per_s: float | None  # open loops only: requests over the span they arrived in
    completed_rate_per_s: float
    preempted_requests: int
    waiting_share_pool_full: float  # of the sampled time with a queue, the share with the pool >= POOL_FULL_USAGE
    waiting_share_batch_full: float  # ... and the share with the sequence cap reached
    mean_queue_s: float
    mean_ttft_s: float


@dataclass(frozen=True)
class Diagnosis:
    limit: str  # a key of LIMITS, "" for a run with no completed request
    figure: float  # the signal that decided it
    threshold: float  # what the rule compared it to (the figure clears it: above, or below for `none`)
    signals: dict

    @property
    def name(self) -> str:
        return LIMITS.get(self.limit, "")

    @property
    def reason(self) -> str:
        """The signal that decided the verdict, in words, with its figure."""
        s, x = self.signals, self.figure
        if self.limit == "pool" and x == _share(s["preempted_requests"], s["completed"]):
            return f"{x:.0%} of requests were preempted"
        return {
            "none": f"{x:.1%} of requests miss a target",
            "repeated_prefill": f"{x:.0%} of the prompt tokens computed repeat an opening an earlier request had",
            "arrivals": f"requests arrive {x:.2f}x as fast as the engine completes them",
            "pool": f"for {x:.0%} of the time requests waited, the pool was {POOL_FULL_USAGE:.0%} used or more",
            "batch_cap": f"for {x:.0%} of the time requests waited, the engine ran as many sequences as it may",
            "prefill": f"queueing is {x:.0%} of the mean TTFT, with room in the pool",
            "decode_step": f"nothing queues; {x:.0%} of requests miss the per-token target",
            "own_prefill": f"nothing queues; {x:.0%} of requests miss the first-token target",
        }.get(self.limit, "")

    def to_dict(self) -> dict:
        return {**asdict(self), "name": self.name, "reason": self.reason}


def _share(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def diagnose(s: Signals) -> Diagnosis:
    """The first rule of the module's list that holds."""
    signals = asdict(s)

    def verdict(limit: str, figure: float, threshold: float) -> Diagnosis:
        return Diagnosis(limit, figure, threshold, signals)

    if not s.completed:
        return verdict("", 0.0, 0.0)
    missed = _share(s.missed, s.completed)
    if missed <= MISSED_NONE:
        return verdict("none", missed, MISSED_NONE)
    repeated = _share(s.repeated_prompt_tokens, s.prompt_tokens_computed)
    if repeated >= REPEATED_SHARE:
        return verdict("repeated_prefill", repeated, REPEATED_SHARE)
    if s.arrival_rate_per_s is not None and s.completed_rate_per_s > 0:
        overload = s.arrival_rate_per_s / s.completed_rate_per_s
        if overload >= OVERLOAD_RATIO:
            return verdict("arrivals", overload, OVERLOAD_RATIO)
    preempted = _share(s.preempted_requests, s.completed)
    if preempted >= PREEMPTED_SHARE:
        return verdict("pool", preempted, PREEMPTED_SHARE)
    if s.waiting_share_pool_full >= WAITING_SHARE:
        return verdict("pool", s.waiting_share_pool_full, WAITING_SHARE)
    if s.waiting_share_batch_full >= WAITING_SHARE:
        return verdict("batch_cap", s.waiting_share_batch_full, WAITING_SHARE)
    queued = _share(s.mean_queue_s, s.mean_ttft_s)
    if queued >= QUEUE_SHARE:
        return verdict("prefill", queued, QUEUE_SHARE)
    if s.missed_itl > s.missed_ttft:
        return verdict("decode_step", _share(s.missed_itl, s.completed), 0.0)
    return verdict("own_prefill", _share(s.missed_ttft, s.completed), 0.0)
