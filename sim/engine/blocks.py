"""Paged KV memory: a pool of fixed-size blocks, and the block table of one sequence.

Every block holds `block_size_tokens` tokens of every layer; a sequence of c cached tokens needs
ceil(c / block_size) of them, of which the leading ones may be shared prefix blocks owned by the
prefix cache. Physical block ids carry no information in a simulation (all blocks are alike and
any free one will do), so a table is kept as two counts -- shared and private blocks -- which is
what makes a 100k-token generation cost O(1) rather than one list append per 16 tokens.
"""

from __future__ import annotations


class BlockPool:
    """Free and used blocks of one memory (GPU HBM, or host memory for swap / the host cache).

    The pool refuses to go below zero free blocks: `take` raises, so a scheduler bug that would
    overcommit memory cannot pass silently. `peak_used` is the high-water mark the invariant tests
    compare with `num_blocks`.
    """

    __slots__ = ("num_blocks", "free", "peak_used")

    def __init__(self, num_blocks: int):
        self.num_blocks = num_blocks
        self.free = num_blocks
        self.peak_used = 0

    @property
    def used(self) -> int:
        return self.num_blocks - self.free

    def take(self, n: int) -> None:
        if n > self.free:
            raise RuntimeError(f"KV pool overcommitted: {n} blocks requested, {self.free} free of {self.num_blocks}")
        self.free -= n
        used = self.num_blocks - self.free
        if used > self.peak_used:
            self.peak_used = used

    def give(self, n: int) -> None:
        self.free += n
        if self.free > self.num_blocks:
            raise RuntimeError(f"KV pool freed more blocks than it holds ({self.free} > {self.num_blocks})")


class BlockTable:
    """One sequence's blocks: `shared` leading blocks referenced in the prefix cache (through
    `node`), then `private` blocks only it uses. `tokens` is the cached context length."""

    __slots__ = ("shared", "private", "node")

    def __init__(self):
        self.shared = 0
        self.private = 0
        self.node = None

    @property
    def blocks(self) -> int:
        return self.shared + self.private


def blocks_for(tokens: int, block_size: int) -> int:
    """ceil(tokens / block_size): blocks that hold `tokens` tokens."""
    return -(-tokens // block_size)
