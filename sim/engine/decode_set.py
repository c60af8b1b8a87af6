"""The sequences decoding on one instance, kept as aggregates so that k decode steps cost O(1).

Between events every decoding sequence gains one token per step, so the set is described by:

- n, the number of sequences, and G, the count of decode steps the instance has run;
- the KV tokens the next step reads (sum over sequences, sliding-window layers capped) and how
  much that grows per step;
- when each sequence needs a new block. A sequence holding c tokens needs one before the step
  that writes token c + 1 exactly when c is a multiple of the block size B. Its phase
  (c - G) mod B never changes while it decodes, so a histogram of phases answers "how many blocks
  do the next k steps need" in O(B): k // B full cycles of n blocks, plus the phases hit in the
  remaining k mod B steps. Under speculative decoding a sequence also holds the k lookahead
  slots its verify step writes (clock.SpecDecode), so it needs a block when c + k is a multiple
  of B: its phase is (c + k - G) mod B;
- a heap of milestones: the step at which each sequence finishes (G = finish_g) or, for models
  with sliding-window layers, reaches the window (its per-step KV read growth changes there).

A run of decode steps can go on until the first milestone, the first step whose blocks the pool
cannot supply, or an outside event; between those nothing about the batch changes but the
arithmetic series the clock sums.
"""

from __future__ import annotations

from heapq import heappop, heappush

from .clock import StepClock
from .sequence import Seq

_WINDOW, _FINISH = 0, 1


class DecodeSet:
    __slots__ = ("block_size", "clock", "window", "full_fraction", "window_fraction",
                 "n", "g", "kv_read", "below_window", "phase_counts", "heap", "sum_finish_g", "lookahead", "context")

    def __init__(self, block_size: int, clock: StepClock):
        self.block_size = block_size
        self.clock = clock
        self.window = clock.window_tokens
        self.window_fraction = clock.window_fraction
        self.full_fraction = 1.0 - clock.window_fraction
        self.n = 0
        self.g = 0
        self.kv_read = 0.0  # KV tokens the next decode step reads (context + the new token)
        self.below_window = 0
        self.phase_counts = [0] * block_size
        self.heap: list[tuple] = []
        self.sum_finish_g = 0
        self.lookahead = clock.spec.lookahead_tokens if clock.spec is not None else 0
        self.context = 0  # tokens the next decode step's sequences hold, summed (the draft's steps read them)

    # ----- membership -----------------------------------------------------------------------
    def add(self, seq: Seq, cached_tokens: int) -> None:
        g = self.g
        seq.join_g = g
        seq.join_ctx = cached_tokens
        seq.finish_g = g + (seq.output - seq.generated)
        self.phase_counts[(cached_tokens + self.lookahead - g) % self.block_size] += 1
        read = cached_tokens + 1
        self.context += read
        self.kv_read += self.clock.kv_read(read)
        w = self.window
        if w and read < w:
            self.below_window += 1
            heappush(self.heap, (g + w - read, _WINDOW, seq.order, seq.epoch, seq))
        heappush(self.heap, (seq.finish_g, _FINISH, seq.order, seq.epoch, seq))
        self.sum_finish_g += seq.finish_g
        self.n += 1

    def cached(self, seq: Seq) -> int:
        return seq.join_ctx + self.g - seq.join_g

    def remove(self, seq: Seq) -> int:
        """Take a sequence out (preemption or finish); returns its cached tokens and brings its
        `generated` count up to date."""
        c = self.cached(seq)
        read = c + 1
        self.kv_read -= self.clock.kv_read(read)
        self.context -= read
        if self.window and read < self.window:
            self.below_window -= 1
        self.phase_counts[(seq.join_ctx + self.lookahead - seq.join_g) % self.block_size] -= 1
        self.sum_finish_g -= seq.finish_g
        self.n -= 1
        # (at most its output: a speculative cycle can carry it past its last token, sequence.py)
        seq.generated = min(seq.output, seq.output - (seq.finish_g - self.g))
        seq.epoch += 1
        if self.n == 0:
            self.kv_read = 0.0  # drop accumulated rounding
        return c

    # ----- what the next k steps need --------------------------------------------------------
    def growth(self) -> float:
        """Increase of the KV read per step."""
        if not self.window:
            return float(self.n)
        return self.full_fraction * self.n + self.window_fraction * self.below_window

    def blocks_needed(self, k: int) -> int:
        b = self.block_size
        if k == 1:
            return self.phase_counts[(-self.g) % b]
        q, r = divmod(k, b)
        total = q * self.n
        if r:
            counts, g = self.phase_counts, self.g
            for j in range(r):
                total += counts[(-(g + j)) % b]
        return total

    def max_steps(self, available_blocks: int) -> int:
        """Most steps whose new blocks fit in `available_blocks` (0: not even the next one)."""
        n = self.n
        if n == 0:
            return 1 << 62
        b = self.block_size
        q, rem = divmod(available_blocks, n)
        counts, g = self.phase_counts, self.g + q * b
        j = 0
        while j < b:
            need = counts[(-(g + j)) % b]
            if need > rem:
                break
            rem -= need
            j += 1
        return q * b + j

    def steps_to_milestone(self) -> int:
        heap = self.heap
        while heap and heap[0][3] != heap[0][4].epoch:
            heappop(heap)
        return heap[0][0] - self.g if heap else 1 << 62

    def remaining_output(self) -> int:
        """Tokens the members still have to generate (SGLang-style admission reserves a share)."""
        return self.sum_finish_g - self.n * self.g

    # ----- advancing ---------------------------------------------------------------------------
    def advance(self, k: int) -> list[Seq]:
        """Run k steps; return the sequences that finished (still members: the caller removes them)."""
        self.kv_read += k * self.growth()
        self.context += k * self.n
        self.g += k
        g = self.g
        heap = self.heap
        done = []
        while heap and heap[0][0] <= g:
            _, kind, _, epoch, seq = heappop(heap)
            if epoch != seq.epoch:
                continue
            if kind == _WINDOW:
                self.below_window -= 1
            else:
                done.append(seq)
        return done
