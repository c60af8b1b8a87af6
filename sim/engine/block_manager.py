"""The KV block manager of one instance: the only owner of its block accounting.

It holds the GPU pool, the host swap space, the prefix cache (with its optional host tier) and
the sum of the running sequences' block tables, and it is the only code that takes or gives
blocks. Everything else asks it questions (`used`, `reclaimable`, `admission`) or asks it to
carry out one operation:

    admission(seq)     what admitting `seq` would take: its prefix hit and the blocks left over
    allocate(...)      admit: pin the cached prefix, take the blocks, fill the sequence's table
    grow(n)            a decode run wrote n new blocks (one per sequence crossing a block boundary)
    catch_up(table, c) a sequence left the decode set holding c tokens: its table takes the
                       blocks the runs allocated for it in aggregate
    share_prefix(seq)  a finished prefill gives its full prefix blocks to the prefix cache
    preempt(seq, ...)  free a preempted sequence's table, moving its KV to host swap when it fits
    swap_in(seq)       bring a swapped sequence's blocks back into HBM
    release(table)     a sequence finished (or its KV was pulled to another instance)

Blocks are counts, never ids (blocks.py). The operations that move KV over the host link return
the copy time; charging it to a step is the instance's business. The invariant a test checks
after any sequence of operations: the GPU pool's used blocks equal the blocks in running tables
plus the prefix cache's unreferenced blocks, and neither pool goes below zero or above its size.
"""

from __future__ import annotations

from .blocks import BlockPool, BlockTable, blocks_for
from .prefix_cache import PrefixCache


class BlockManager:
    __slots__ = ("block_size", "gpu", "swap", "cache", "watermark_blocks", "swap_mode", "block_bytes",
                 "host_link_bytes_per_s", "table_blocks", "state_blocks", "lookahead")

    def __init__(self, setup):
        kv = setup.config.kv
        self.block_size = setup.block_size
        self.gpu = BlockPool(setup.num_gpu_blocks)
        # The admission watermark: blocks kept free so running sequences can grow (vLLM's watermark).
        self.watermark_blocks = int(setup.config.scheduling.watermark_fraction * setup.num_gpu_blocks)
        self.swap_mode = kv.preemption == "swap"
        self.swap = BlockPool(setup.swap_blocks)
        host = BlockPool(setup.host_cache_blocks) if setup.host_cache_blocks else None
        self.cache = PrefixCache(self.gpu, host) if kv.prefix_caching else None
        self.block_bytes = self.block_size * setup.clock.kv_bytes_per_token
        self.host_link_bytes_per_s = setup.host_link_bytes_per_s
        self.table_blocks = 0  # sum of the block tables of running sequences
        # A hybrid model's recurrent state: blocks of the same pool every running sequence holds
        # whatever its length (its bytes over a block's, rounded up), kept in its private count.
        state = setup.clock.state_bytes_per_sequence
        self.state_blocks = -int(-state // self.block_bytes) if state else 0
        # Speculative decoding: every sequence also holds the k slots its verify step writes ahead
        # of its kept tokens (clock.SpecDecode), from admission on.
        spec = setup.clock.spec
        self.lookahead = spec.lookahead_tokens if spec is not None else 0

    def blocks_held(self, cached_tokens: int) -> int:
        """Blocks a running sequence holding `cached_tokens` owns: its tokens, the lookahead slots
        and its recurrent state."""
        return blocks_for(cached_tokens + self.lookahead, self.block_size) + self.state_blocks

    # ----- questions -------------------------------------------------------------------------
    @property
    def total(self) -> int:
        return self.gpu.num_blocks

    def used(self) -> int:
        """Blocks referenced by a request (cached-but-unreferenced prefix blocks excluded, as
        vLLM's usage gauge and SGLang's token usage exclude them)."""
        evictable = self.cache.evictable_blocks if self.cache is not None else 0
        return self.gpu.used - evictable

    def reclaimable(self) -> int:
        """Blocks an allocation could get: free ones, and unreferenced prefix blocks to evict."""
        return self.gpu.free + (self.cache.evictable_blocks if self.cache is not None else 0)

    def admission(self, seq) -> tuple:
        """(prefix node, blocks hit in HBM, blocks hit in host memory, blocks to take, headroom):
        what admitting `seq` would need, without side effects. `headroom` is what would be left
        reclaimable beyond the watermark (negative: it does not fit). A disaggregated hand-off
        (`seq.remote_from` set) takes blocks for its whole context and hits no prefix."""
        cache = self.cache
        node = None
        gpu_hit = host_hit = 0
        if seq.remote_from is not None:
            need = self.blocks_held(seq.target)
        else:
            if cache is not None and seq.prefix_id is not None:
                node, gpu_hit, host_hit = cache.peek(seq.prefix_id, seq.prefix_tokens // self.block_size)
            need = self.blocks_held(seq.target) - gpu_hit
        available = self.gpu.free + (cache.reclaimable_excluding(node) if cache is not None else 0)
        return node, gpu_hit, host_hit, need, available - need - self.watermark_blocks

    def can_swap_in(self, seq) -> bool:
        return self.reclaimable() - seq.swap_blocks - self.watermark_blocks >= 0

    # ----- operations --------------------------------------------------------------------------
    def _take(self, n: int) -> None:
        short = n - self.gpu.free
        if short > 0 and self.cache is not None:
            self.cache.evict(short)
        self.gpu.take(n)

    def allocate(self, seq, gpu_hit: int, host_hit: int, need: int) -> float:
        """Admit `seq` with what `admission` found: pin its cached prefix, take `need` blocks (the
        host-tier hit among them), fill its table. Returns the host-to-HBM copy time (s)."""
        cache = self.cache
        node = None
        if cache is not None and seq.prefix_id is not None and seq.remote_from is None:
            node = cache.acquire(seq.prefix_id)
        self._take(need)
        table = seq.table
        table.node = node
        table.shared = gpu_hit + host_hit
        table.private = need - host_hit
        self.table_blocks += table.shared + table.private
        if host_hit:
            cache.load_from_host(node, host_hit)
            return host_hit * self.block_bytes / self.host_link_bytes_per_s
        return 0.0

    def grow(self, n: int) -> None:
        """A decode run ended having written `n` new blocks; each enters one sequence's table."""
        if n > self.gpu.free and self.cache is not None:
            self.cache.evict(n - self.gpu.free)
        self.gpu.take(n)
        self.table_blocks += n

    def catch_up(self, table: BlockTable, cached_tokens: int) -> None:
        """A sequence leaves the decode set with `cached_tokens`: its private count catches up
        with the blocks the runs took for it in aggregate (`grow`)."""
        table.private = self.blocks_held(cached_tokens) - table.shared

    def share_prefix(self, seq) -> None:
        """`seq`'s prefill is complete: the full blocks of its shared prefix that it computed
        itself become the prefix cache's (they move from its private to its shared count)."""
        table = seq.table
        node = table.node
        if node is None:
            return
        grow = min(seq.prefix_tokens // self.block_size - node.gpu_blocks, table.private)
        if grow > 0:
            self.cache.donate(node, grow)
            table.private -= grow
            table.shared += grow

    def release(self, table: BlockTable) -> None:
        self.gpu.give(table.private)
        self.table_blocks -= table.shared + table.private
        if table.node is not None:
            self.cache.release(table.node)
        table.node = None
        table.shared = table.private = 0

    def preempt(self, seq, cached_tokens: int, decoding: bool) -> float | None:
        """Free a preempted sequence's table. A decoding sequence under swap preemption whose
        `cached_tokens` fit the swap space goes there -- the whole table, shared prefix blocks
        included, to come back as private blocks -- and the copy time (s) is returned; otherwise
        None: its KV is dropped and will be recomputed."""
        blocks = self.blocks_held(cached_tokens)
        swap = decoding and self.swap_mode and blocks <= self.swap.free
        self.release(seq.table)
        if not swap:
            return None
        self.swap.take(blocks)
        seq.swap_blocks = blocks
        return blocks * self.block_bytes / self.host_link_bytes_per_s

    def swap_in(self, seq) -> float:
        """Bring a swapped sequence's blocks back into HBM; returns the copy time (s)."""
        blocks = seq.swap_blocks
        self._take(blocks)
        self.swap.give(blocks)
        seq.table.private = blocks
        self.table_blocks += blocks
        seq.swap_blocks = 0
        return blocks * self.block_bytes / self.host_link_bytes_per_s
