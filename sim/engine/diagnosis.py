"""Which limit binds a finished run: the one verdict the lab shows and the capstone lesson keys its
"name the limit" questions on.

A run's requests miss their targets for one of a few reasons, and each leaves its own signal in what
the engine measured. The rules below read those signals in a fixed order, the first that holds names
the limit, and the verdict keeps the figure that decided it beside the threshold it was compared to
(so a caller can tell a clear verdict from one on an edge):

1. `none`: 99% of requests or more meet both targets; nothing binds at these targets.
2. `repeated_prefill`: half or more of the prompt tokens the GPU computed repeat an opening an earlier
   request already had (a shared system prompt or template computed again; seed 004's prefix economics).
   Removing them at least doubles what the prompt work allows, which no memory lever does, so this
   comes before the load and the pool.
3. `arrivals`: an open loop that, when its last request arrives, still has a tenth or more of the run's
   requests waiting to start: requests arrive faster than the engine completes them, and the queue grows
   for as long as the load lasts (the knee of seed 004), whatever resource sets the capacity. (The
   arrival and completion rates alone cannot tell this apart from a healthy finite run, whose
   completions trail its arrivals by the last requests' own service time.)
4. `pool`: requests were preempted (1% of them or more), or for half the time requests waited the pool
   was 90% used or more. Seed 002: "Cache usage pinned near 100% with a non-empty Waiting queue means
   the pool is your binding constraint", and preemptions should be zero.
5. `batch_cap`: for half the time requests waited, the engine already ran its cap of sequences
   (max_num_seqs), with the pool below the rule above.
6. `prefill`: a quarter or more of the mean TTFT is time in the queue while the pool has room: requests
   wait their turn behind other prompts' prefill (seed 000's tail).
7. `decode_step` or `own_prefill`: nothing queues to speak of, so the misses are each request's own
   work: as many requests miss the first-token target as the per-token one or more (a long prompt's own
   prefill is its TTFT floor: `own_prefill`), or fewer (every decode step reads the weights and the
   batch's cache, so memory bandwidth sets the per-token time: `decode_step`).
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
MET_NONE = 0.99  # one request in a hundred missing is noise of a finite run, not a limit
REPEATED_SHARE = 0.5  # half the prompt work repeated: skipping it doubles prefill capacity
QUEUED_AT_END = 0.1  # a tenth of the load still queued when arrivals stop: far more than a burst leaves
PREEMPTED_SHARE = 0.01  # seed 002: preemptions should be zero; 1% of requests is past a stray one
POOL_FULL_USAGE = 0.9  # "pinned near 100%": engines keep a watermark and whole blocks free below it
WAITING_SHARE = 0.5  # the state held for most of the time requests waited
QUEUE_SHARE = 0.25  # queueing a quarter of TTFT: the wait, not the request's own prefill, sets it
TTFT_MISS_SHARE = 0.5  # of the targets missed, as many first-token ones as per-token ones or more


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
    queued_at_last_arrival: int  # open loops only: requests waiting to start when the last one arrived
    preempted_requests: int
    waiting_share_pool_full: float  # of the sampled time with a queue, the share with the pool >= POOL_FULL_USAGE
    waiting_share_batch_full: float  # ... and the share with the sequence cap reached
    mean_queue_s: float
    mean_ttft_s: float

    @property
    def missed_ttft_share(self) -> float:
        return _share(self.missed_ttft, self.completed)

    @property
    def missed_itl_share(self) -> float:
        return _share(self.missed_itl, self.completed)

    @property
    def overload(self) -> float | None:
        """Arrivals over completions (open loops only): how much faster requests came than the engine served them."""
        return _share(self.arrival_rate_per_s, self.completed_rate_per_s) if self.arrival_rate_per_s else None

    def to_dict(self) -> dict:
        """The counts and the shares every view quotes, so that no view divides them again."""
        return {**asdict(self), "missed_ttft_share": self.missed_ttft_share, "missed_itl_share": self.missed_itl_share,
                "overload": self.overload}


@dataclass(frozen=True)
class Diagnosis:
    limit: str  # a key of LIMITS, "" for a run with no completed request
    figure: float  # the signal that decided it
    threshold: float  # what the rule compared it to: the figure is at or above it
    # How close the call was: of every rule tried (the deciding one and each that failed before it), the
    # smallest distance between its figure and its threshold, as the larger over the smaller less one
    # (0.1: they differ by 10% of the smaller). A verdict with a small margin flips on a small change. A rule
    # whose figure or threshold is zero is infinitely far from flipping and is left out; None when every rule
    # tried is (JSON has no infinity).
    margin: float | None
    signals: dict
    # Every rule tried, in order, up to the deciding one: {"limit", "signal", "figure", "threshold"} each.
    tried: tuple = ()

    @property
    def name(self) -> str:
        return LIMITS.get(self.limit, "")

    @property
    def reason(self) -> str:
        """The signal that decided the verdict, in words, with its figure."""
        s, x = self.signals, self.figure
        if self.limit == "pool" and self.threshold == PREEMPTED_SHARE:
            return f"{x:.0%} of requests were preempted"
        if self.limit in ("decode_step", "own_prefill"):
            return (f"nothing queues; {s['missed_itl_share']:.0%} of requests miss the per-token target and "
                    f"{s['missed_ttft_share']:.0%} the first-token one")
        return {
            "none": f"{x:.1%} of requests meet both targets",
            "repeated_prefill": f"{x:.0%} of the prompt tokens computed repeat an opening an earlier request had",
            "arrivals": (f"when the last request arrived, {x:.0%} of the run's requests were still waiting to start; "
                         f"they arrive {s['overload'] or 0.0:.2f}x as "
                         "fast as the engine completes them"),
            "pool": f"for {x:.0%} of the time requests waited, the pool was {POOL_FULL_USAGE:.0%} used or more",
            "batch_cap": f"for {x:.0%} of the time requests waited, the engine ran as many sequences as it may",
            "prefill": f"queueing is {x:.0%} of the mean TTFT, with room in the pool",
        }.get(self.limit, "")

    @property
    def verdict(self) -> str:
        """The verdict as every view prints it: the limit's name, then the signal that decided it."""
        return f"{self.name} ({self.reason})" if self.limit else ""

    def to_dict(self) -> dict:
        return {**asdict(self), "tried": [dict(t) for t in self.tried], "name": self.name, "reason": self.reason,
                "verdict": self.verdict}


def _share(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def _distance(figure: float, threshold: float) -> float:
    low, high = sorted((abs(figure), abs(threshold)))
    return high / low - 1


def rules(s: Signals) -> list[tuple[str, str, float, float]]:
    """Each rule as (limit, the signal it reads, figure, threshold), in the order tried; a rule holds when
    its figure is at or above its threshold. The last always holds."""
    missed = s.missed_itl + s.missed_ttft
    return [
        ("none", "share of requests that meet both targets", 1 - _share(s.missed, s.completed), MET_NONE),
        ("repeated_prefill", "share of the prompt tokens computed that repeat an earlier request's opening",
         _share(s.repeated_prompt_tokens, s.prompt_tokens_computed), REPEATED_SHARE),
        ("arrivals", "share of the requests still waiting to start when the last one arrived (open loops)",
         _share(s.queued_at_last_arrival, s.completed) if s.arrival_rate_per_s else 0.0, QUEUED_AT_END),
        ("pool", "share of requests preempted", _share(s.preempted_requests, s.completed), PREEMPTED_SHARE),
        ("pool", f"share of the time requests waited with the pool {POOL_FULL_USAGE:.0%} used or more",
         s.waiting_share_pool_full, WAITING_SHARE),
        ("batch_cap", "share of the time requests waited with the cap of running sequences reached",
         s.waiting_share_batch_full, WAITING_SHARE),
        ("prefill", "queueing's share of the mean TTFT", _share(s.mean_queue_s, s.mean_ttft_s), QUEUE_SHARE),
        # A tie goes to the first-token side: the request's own prefill comes first.
        ("own_prefill", "first-token misses' share of the targets missed", _share(s.missed_ttft, missed), TTFT_MISS_SHARE),
        ("decode_step", "per-token misses' share of the targets missed", _share(s.missed_itl, missed), 0.0),
    ]


def diagnose(s: Signals) -> Diagnosis:
    """The first rule of `rules` that holds, and how close the rules tried came to their thresholds."""
    if not s.completed:
        return Diagnosis("", 0.0, 0.0, None, s.to_dict())
    distances, tried = [], []
    for limit, signal, figure, threshold in rules(s):
        tried.append({"limit": limit, "signal": signal, "figure": figure, "threshold": threshold})
        if figure and threshold:
            distances.append(_distance(figure, threshold))
        if figure >= threshold:
            return Diagnosis(limit, figure, threshold, min(distances, default=None), s.to_dict(), tuple(tried))
    raise AssertionError("the last rule always holds")
