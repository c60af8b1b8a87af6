"""Which request holds which KV block, step by step, under each allocation rule: the data of
lesson A5's block map, for a handful of requests sharing a small pool.

Time counts engine steps. A request admitted at step t writes its prompt and its first output
token in that step and one more token in each later step; the step after its last token, its blocks
are free again. Each step, in order: finished requests free their blocks; running requests grow by
one token (paged: a new block when the last is full; with none free, the newest running request is
preempted and queued again at the front, as vLLM's recompute does); then arrived requests are
admitted first come, first served, stopping at the first that does not fit, so a small request
never overtakes a large one.

The contiguous rules reserve at admission what the steady-state model's rule says
(`admission.reservation_tokens`: the exact final length, or max_model_len) in one run of free
blocks, the first run long enough; paged allocation takes any free blocks, one at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

from .admission import reservation_tokens
from .errors import InputError, Issue
from .scenario import ALLOCATIONS

# What one block is at the end of a step.
FREE = "free"
HELD = "held"  # holds at least one token of its request
RESERVED = "reserved"  # reserved by a request that has not written into it (yet, or ever)
STRANDED = "stranded"  # free, and the free blocks would hold the next request, but in no run long enough
MAX_STEPS = 100_000


@dataclass(frozen=True)
class MapRequest:
    arrival_step: int
    prompt_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class BlockMap:
    """The pool at the end of every step until the last request finishes."""

    allocation: str
    pool_blocks: int
    block_tokens: int
    max_len_tokens: int
    requests: tuple[MapRequest, ...]
    cells: tuple[tuple[str, ...], ...]  # per step, per block: FREE, HELD, RESERVED or STRANDED
    owners: tuple[tuple[int, ...], ...]  # per step, per block: the request's index, -1 when free
    running: tuple[int, ...]  # per step: requests holding blocks
    admitted_step: tuple[int, ...]  # per request: the step it was first admitted
    finished_step: tuple[int, ...]  # per request: the step it wrote its last token
    preemptions: int

    @property
    def steps(self) -> int:
        return len(self.cells)

    @property
    def peak_running(self) -> int:
        return max(self.running, default=0)

    def share(self, kind: str) -> float:
        """The fraction of block-steps (every block at every step) in state `kind`."""
        total = self.steps * self.pool_blocks
        return sum(row.count(kind) for row in self.cells) / total if total else 0.0


def _check(requests: tuple[MapRequest, ...], pool_blocks: int, block_tokens: int, max_len_tokens: int,
           allocation: str) -> None:
    issues = []
    if allocation not in ALLOCATIONS:
        issues.append(Issue("allocation", f"must be one of {', '.join(ALLOCATIONS)}, got {allocation!r}"))
    for name, value, high in (("pool_blocks", pool_blocks, 4096), ("block_tokens", block_tokens, 1024),
                              ("max_len_tokens", max_len_tokens, 1 << 20)):
        if not isinstance(value, int) or not 1 <= value <= high:
            issues.append(Issue(name, f"must be an integer from 1 to {high:,}, got {value!r}"))
    if not 1 <= len(requests) <= 64:
        issues.append(Issue("requests", f"must hold 1 to 64 requests, got {len(requests)}"))
    if issues:
        raise InputError(issues)
    for i, r in enumerate(requests):
        final = r.prompt_tokens + r.output_tokens
        if not (r.arrival_step >= 0 and r.prompt_tokens >= 1 and r.output_tokens >= 1 and final <= max_len_tokens):
            issues.append(Issue(f"requests[{i}]", f"needs arrival_step >= 0, prompt and output of at least 1 token and "
                                                  f"prompt + output at most max_len_tokens ({max_len_tokens:,}), got {r!r}"))
        elif -(-max_len_tokens // block_tokens) > pool_blocks:
            issues.append(Issue("pool_blocks", f"must hold one max_len_tokens reservation "
                                               f"({-(-max_len_tokens // block_tokens)} blocks), got {pool_blocks}"))
            break
    if issues:
        raise InputError(issues)


class _Pool:
    """The blocks' owners and each request's blocks, tokens and queue place during the run."""

    def __init__(self, requests, pool_blocks: int, block_tokens: int, max_len_tokens: int, allocation: str):
        self.requests, self.block, self.allocation = requests, block_tokens, allocation
        self.max_len = max_len_tokens
        self.owner = [-1] * pool_blocks
        self.blocks: list[list[int]] = [[] for _ in requests]
        self.tokens = [0] * len(requests)
        self.running: list[int] = []
        self.waiting: list[int] = []
        self.preemptions = 0

    def need_blocks(self, i: int) -> int:
        r = self.requests[i]
        if self.allocation == "paged":
            return -(-(max(self.tokens[i], r.prompt_tokens) + 1) // self.block)
        return reservation_tokens(self.allocation, r.prompt_tokens + r.output_tokens, self.max_len, self.block) // self.block

    def place(self, need: int) -> list[int] | None:
        """Blocks for a new reservation: any free ones (paged) or the first run of `need` free ones."""
        free = [b for b, o in enumerate(self.owner) if o < 0]
        if self.allocation == "paged":
            return free[:need] if len(free) >= need else None
        run = 0
        for b, o in enumerate(self.owner):
            run = run + 1 if o < 0 else 0
            if run == need:
                return list(range(b - need + 1, b + 1))
        return None

    def take(self, i: int, blocks: list[int]) -> None:
        for b in blocks:
            self.owner[b] = i
        self.blocks[i] += blocks

    def free(self, i: int) -> None:
        for b in self.blocks[i]:
            self.owner[b] = -1
        self.blocks[i] = []
        self.running.remove(i)

    def grow(self) -> None:
        """One token more for every running request; paged ones take a block when the last is full."""
        for i in list(self.running):
            if i not in self.running:  # preempted earlier in this step
                continue
            self.tokens[i] += 1
            while self.allocation == "paged" and i in self.running and -(-self.tokens[i] // self.block) > len(self.blocks[i]):
                spare = self.place(1)
                if spare is not None:
                    self.take(i, spare)
                    continue
                victim = self.running[-1]
                self.free(victim)
                self.waiting.insert(0, victim)
                self.preemptions += 1

    def admit(self, step: int, admitted: list[int]) -> int | None:
        """Admit arrived requests in order; the first that does not fit, if one is waiting, else None."""
        while self.waiting and self.requests[self.waiting[0]].arrival_step <= step:
            i = self.waiting[0]
            blocks = self.place(self.need_blocks(i))
            if blocks is None:
                return i
            self.waiting.pop(0)
            self.take(i, blocks)
            self.tokens[i] = max(self.tokens[i], self.requests[i].prompt_tokens) + 1
            self.running.append(i)
            if admitted[i] < 0:
                admitted[i] = step
        return None

    def row(self, blocked: int | None) -> tuple[tuple[str, ...], tuple[int, ...]]:
        free = self.owner.count(-1)
        stranded = blocked is not None and self.allocation != "paged" and free >= self.need_blocks(blocked)
        cells = []
        for b, o in enumerate(self.owner):
            if o < 0:
                cells.append(STRANDED if stranded else FREE)
            else:
                cells.append(HELD if self.blocks[o].index(b) * self.block < self.tokens[o] else RESERVED)
        return tuple(cells), tuple(self.owner)


def block_map(requests: tuple[MapRequest, ...], pool_blocks: int, block_tokens: int, max_len_tokens: int,
              allocation: str) -> BlockMap:
    """The pool, step by step, for `requests` under `allocation` (one of sim.scenario.ALLOCATIONS)."""
    requests = tuple(requests)
    _check(requests, pool_blocks, block_tokens, max_len_tokens, allocation)
    pool = _Pool(requests, pool_blocks, block_tokens, max_len_tokens, allocation)
    pool.waiting = sorted(range(len(requests)), key=lambda i: (requests[i].arrival_step, i))
    admitted, finished = [-1] * len(requests), [-1] * len(requests)
    cells, owners, running = [], [], []
    for step in range(MAX_STEPS):
        for i in [i for i in pool.running if finished[i] >= 0]:
            pool.free(i)
        if not pool.running and not pool.waiting:
            break
        pool.grow()
        blocked = pool.admit(step, admitted)
        for i in pool.running:
            r = requests[i]
            if pool.tokens[i] >= r.prompt_tokens + r.output_tokens:
                finished[i] = step
        row, who = pool.row(blocked)
        cells.append(row)
        owners.append(who)
        running.append(len(pool.running))
    return BlockMap(allocation, pool_blocks, block_tokens, max_len_tokens, requests, tuple(cells), tuple(owners),
                    tuple(running), tuple(admitted), tuple(finished), pool.preemptions)
