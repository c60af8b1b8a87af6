"""Prefix caching: a radix tree of KV blocks, LRU eviction of unreferenced blocks, and an optional
host-memory tier (SGLang's hierarchical cache, vLLM's CPU offload).

The tree's root has one child per distinct prefix (a system prompt); each child is a compressed
edge holding that prefix's run of full blocks. Only full blocks are shared -- a block is reusable
only if every one of its tokens matches, which is also why vLLM hashes only full blocks, chaining
each block's hash to its parent's. A run is split by where its blocks live:

    [0, gpu_blocks)                       in HBM, hit for free
    [gpu_blocks, gpu_blocks + host_blocks) in host memory, hit at the cost of a copy over the host link

Blocks referenced by a running sequence are pinned. When the GPU pool needs room, the unreferenced
prefix used least recently loses blocks from its tail first (the OrderedDict keeps that order: a
release moves the node to the end); with a host tier they move there instead of vanishing, and the
host tier drops its own least recently used blocks when full. Eviction from the tail keeps every
run a prefix of the prompt, so a later match is still a contiguous hit.
"""

from __future__ import annotations

from collections import OrderedDict

from .blocks import BlockPool


class PrefixNode:
    __slots__ = ("key", "gpu_blocks", "host_blocks", "refs")

    def __init__(self, key: str):
        self.key = key
        self.gpu_blocks = 0
        self.host_blocks = 0
        self.refs = 0


class PrefixCache:
    """The cached prefix blocks of one instance. `evictable_blocks` counts GPU blocks no running
    sequence references: they occupy the pool but a new allocation may reclaim them."""

    def __init__(self, pool: BlockPool, host: BlockPool | None):
        self.pool = pool
        self.host = host
        self.children: dict[str, PrefixNode] = {}
        self.lru: OrderedDict[str, PrefixNode] = OrderedDict()  # unreferenced nodes with GPU blocks, oldest first
        self.host_lru: OrderedDict[str, PrefixNode] = OrderedDict()  # unreferenced nodes with host blocks, oldest first
        self.evictable_blocks = 0
        self.evicted_blocks = 0
        self.host_dropped_blocks = 0

    # ----- lookups ------------------------------------------------------------------------
    def peek(self, key: str, want_blocks: int) -> tuple[PrefixNode | None, int, int]:
        """(node, blocks hit in HBM, blocks hit in host memory), without side effects."""
        node = self.children.get(key)
        if node is None:
            return None, 0, 0
        gpu = min(node.gpu_blocks, want_blocks)
        host = min(node.gpu_blocks + node.host_blocks, want_blocks) - gpu
        return node, gpu, host

    def reclaimable_excluding(self, node: PrefixNode | None) -> int:
        """Evictable blocks, not counting `node`'s own (a request about to pin them)."""
        if node is not None and node.refs == 0:
            return self.evictable_blocks - node.gpu_blocks
        return self.evictable_blocks

    # ----- pin and release ------------------------------------------------------------------
    def acquire(self, key: str) -> PrefixNode:
        node = self.children.get(key)
        if node is None:
            node = self.children[key] = PrefixNode(key)
        if node.refs == 0:
            if self.lru.pop(key, None) is not None:
                self.evictable_blocks -= node.gpu_blocks
            self.host_lru.pop(key, None)
        node.refs += 1
        return node

    def release(self, node: PrefixNode) -> None:
        node.refs -= 1
        if node.refs:
            return
        if node.gpu_blocks:
            self.lru[node.key] = node
            self.evictable_blocks += node.gpu_blocks
        if node.host_blocks:
            self.host_lru[node.key] = node
        if not node.gpu_blocks and not node.host_blocks:
            del self.children[node.key]

    def load_from_host(self, node: PrefixNode, blocks: int) -> None:
        """Move `blocks` of a pinned node's host run into HBM; the caller has taken them from the pool."""
        node.host_blocks -= blocks
        node.gpu_blocks += blocks
        self.host.give(blocks)

    def donate(self, node: PrefixNode, blocks: int) -> None:
        """A pinned node's run grows by `blocks` the caller computed in HBM; host copies of the same
        positions become redundant."""
        node.gpu_blocks += blocks
        overlap = min(blocks, node.host_blocks)
        if overlap:
            node.host_blocks -= overlap
            self.host.give(overlap)

    # ----- eviction -------------------------------------------------------------------------
    def evict(self, blocks: int) -> int:
        """Free up to `blocks` GPU blocks of unreferenced prefixes, least recently used first, and
        return them to the pool (through the host tier when there is one)."""
        freed = 0
        while freed < blocks and self.lru:
            key, node = next(iter(self.lru.items()))
            x = min(blocks - freed, node.gpu_blocks)
            node.gpu_blocks -= x
            self.evictable_blocks -= x
            self.pool.give(x)
            freed += x
            if self.host is not None:
                self._to_host(node, x)
            if node.gpu_blocks == 0:
                del self.lru[key]
                if node.host_blocks == 0:
                    del self.children[key]
        self.evicted_blocks += freed
        return freed

    def _to_host(self, node: PrefixNode, blocks: int) -> None:
        host = self.host
        while host.free < blocks:
            victim_key = next((k for k in self.host_lru if k != node.key), None)
            if victim_key is None:
                break
            victim = self.host_lru[victim_key]
            drop = min(blocks - host.free, victim.host_blocks)
            victim.host_blocks -= drop
            host.give(drop)
            self.host_dropped_blocks += drop
            if victim.host_blocks == 0:
                del self.host_lru[victim_key]
                if victim.gpu_blocks == 0 and victim.refs == 0:
                    del self.children[victim_key]
        # The evicted blocks sit just before the node's existing host run. If not all of them fit,
        # the old run would no longer follow on from the rest, so it is unreachable: drop it first.
        keep = min(blocks, host.free)
        if keep < blocks and node.host_blocks:
            host.give(node.host_blocks)
            self.host_dropped_blocks += node.host_blocks
            node.host_blocks = 0
            keep = min(blocks, host.free)
        self.host_dropped_blocks += blocks - keep
        host.take(keep)
        node.host_blocks += keep
        if node.host_blocks:
            self.host_lru[node.key] = node
            self.host_lru.move_to_end(node.key)

    @property
    def gpu_blocks(self) -> int:
        return sum(n.gpu_blocks for n in self.children.values())
