"""The mutable state of one request inside the engine (the frozen `Request` is what the client sent)."""

from __future__ import annotations

from .blocks import BlockTable
from .workload import Request

# Where a sequence is. RUNNING covers prefilling and decoding; HANDOFF is a disaggregated
# sequence whose KV sits on the prefill instance until the decode instance has pulled it.
NEW, WAITING, RUNNING, SWAPPED, HANDOFF, RECEIVING, DONE = range(7)
STATE_NAMES = ("new", "waiting", "running", "swapped", "handoff", "receiving", "done")


class Seq:
    """One request being served.

    Token bookkeeping: prefill computes the KV of `target` tokens (the prompt; after a recompute
    preemption, the prompt plus everything generated so far) and samples one token. A decode step
    then feeds the last sampled token (its KV joins the cache) and samples the next, so while
    decoding `cached = prompt + generated - 1`. While a sequence is in the decode set its cached
    length is `join_ctx + (G - join_g)` for the instance's decode-step counter G: nothing per
    sequence is touched per step.
    """

    __slots__ = (
        "id", "req", "prompt", "output", "prefix_id", "prefix_tokens", "arrival_s",
        "target", "computed", "generated", "table", "state", "order",
        "join_g", "join_ctx", "finish_g", "epoch",
        "first_token_s", "last_token_s", "admitted_s", "preemptions", "hit_tokens", "swap_blocks",
        "home", "remote_from", "remote_table", "decoding",
    )

    def __init__(self, req: Request, arrival_s: float):
        self.id = req.id
        self.req = req
        self.prompt = req.prompt_tokens
        self.output = req.output_tokens
        self.prefix_id = req.prefix_id
        self.prefix_tokens = req.prefix_tokens
        self.arrival_s = arrival_s
        self.target = req.prompt_tokens
        self.computed = 0
        self.generated = 0
        self.table = BlockTable()
        self.state = NEW
        self.order = 0  # admission order: preemption takes the most recently admitted first
        self.join_g = 0
        self.join_ctx = 0
        self.finish_g = 0
        self.epoch = 0  # bumped whenever the sequence leaves a decode set: stale milestones are skipped
        self.first_token_s = -1.0
        self.last_token_s = -1.0
        self.admitted_s = -1.0
        self.preemptions = 0
        self.hit_tokens = 0
        self.swap_blocks = 0
        self.home = None  # the instance holding its KV
        self.remote_from = None  # disaggregated: the prefill instance still holding its KV
        self.remote_table = None  # ... and the block table it holds there
        self.decoding = False  # a member of its instance's decode set
