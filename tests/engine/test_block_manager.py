"""The block manager is the only owner of KV block accounting: after any sequence of its
operations (admit, share a prefix, grow, preempt with swap or recompute, swap in, release), every
block is accounted for exactly once. Drives the real BlockManager of a real Setup, shrunk to a
small pool so eviction, the host tier and a full swap space all happen."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from kvlab.sim import Scenario
from kvlab.sim.engine.block_manager import BlockManager
from kvlab.sim.engine.blocks import blocks_for
from kvlab.sim.engine.config import EngineConfig
from kvlab.sim.engine.sequence import Seq
from kvlab.sim.engine.setup import build
from kvlab.sim.engine.workload import Request

BS = 16
_BASE = None


def _setup(prefix_caching: bool, host_blocks: int, swap_blocks: int):
    global _BASE
    if _BASE is None:
        _BASE, issues, _ = build(EngineConfig(scenario=Scenario(model="qwen3-8b", block_size_tokens=BS)))
        assert not issues
    cfg = _BASE.config.with_(prefix_caching=prefix_caching, preemption="swap", watermark_fraction=0.05)
    return replace(_BASE, config=cfg, num_gpu_blocks=40, swap_blocks=swap_blocks, host_cache_blocks=host_blocks)


def _check(bm: BlockManager, live: dict, swapped: dict) -> None:
    gpu, swap, cache = bm.gpu, bm.swap, bm.cache
    for pool in (gpu, swap) + ((cache.host,) if cache is not None and cache.host is not None else ()):
        assert 0 <= pool.free <= pool.num_blocks
    cached_gpu = cache.gpu_blocks if cache is not None else 0
    # HBM: every used block is in exactly one place, a live table's private part or the prefix cache
    assert gpu.used == sum(s.table.private for s in live.values()) + cached_gpu
    assert bm.table_blocks == sum(s.table.blocks for s in live.values())
    assert swap.used == sum(s.swap_blocks for s in swapped.values())
    for s in live.values():
        assert s.table.blocks == blocks_for(live_tokens[s.id], BS)
        if s.table.node is not None:
            assert s.table.node.refs > 0 and s.table.shared <= s.table.node.gpu_blocks
        else:
            assert s.table.shared == 0
    evictable = 0
    if cache is not None:
        evictable = sum(n.gpu_blocks for n in cache.children.values() if n.refs == 0)
        assert cache.evictable_blocks == evictable
        assert sum(n.refs for n in cache.children.values()) == sum(1 for s in live.values() if s.table.node is not None)
        if cache.host is not None:
            assert cache.host.used == sum(n.host_blocks for n in cache.children.values())
    assert bm.used() == gpu.used - evictable
    assert bm.reclaimable() == gpu.free + evictable


live_tokens: dict[int, int] = {}

OPS = st.lists(st.tuples(st.sampled_from(["admit", "admit", "share", "grow", "preempt", "swap_in", "release"]),
                         st.integers(0, 10_000), st.integers(0, 10_000)), min_size=30, max_size=80)


@settings(max_examples=80, deadline=None)
@given(ops=OPS, prefix_caching=st.booleans(), host_blocks=st.sampled_from([0, 6, 30]), swap_blocks=st.sampled_from([0, 8, 40]))
def test_every_block_is_accounted_for_after_any_operations(ops, prefix_caching, host_blocks, swap_blocks):
    bm = BlockManager(_setup(prefix_caching, host_blocks, swap_blocks))
    live: dict[int, Seq] = {}
    swapped: dict[int, Seq] = {}
    live_tokens.clear()
    next_id = 0
    for op, a, b in ops:
        if op == "admit":
            prefix = a % 4 if a % 5 else None  # four shared prefixes of 64-128 tokens, or none
            prefix_tokens = 64 + 16 * prefix + 5 if prefix is not None else 0
            prompt = prefix_tokens + 1 + b % 150
            seq = Seq(Request(next_id, 0.0, prompt, 1 + b % 50, None if prefix is None else f"p{prefix}", prefix_tokens), 0.0)
            next_id += 1
            _node, gpu_hit, host_hit, need, headroom = bm.admission(seq)
            assert need == blocks_for(prompt, BS) - gpu_hit
            if headroom >= 0:
                bm.allocate(seq, gpu_hit, host_hit, need)
                live[seq.id] = seq
                live_tokens[seq.id] = prompt
        elif op == "share" and live:
            seq = list(live.values())[a % len(live)]
            bm.share_prefix(seq)
        elif op == "grow" and live:
            seq = list(live.values())[a % len(live)]
            old = live_tokens[seq.id]
            new = old + 1 + b % 40
            n = blocks_for(new, BS) - blocks_for(old, BS)
            if n <= bm.reclaimable():
                bm.grow(n)  # between grow and catch_up the table lags; the totals already count it
                assert bm.table_blocks == sum(s.table.blocks for s in live.values()) + n
                bm.catch_up(seq.table, new)
                live_tokens[seq.id] = new
        elif op == "preempt" and live:
            seq = live.pop(list(live)[a % len(live)])
            tokens = live_tokens.pop(seq.id)
            copy_s = bm.preempt(seq, tokens, decoding=bool(b % 2))
            if copy_s is None:
                assert seq.swap_blocks == 0
            else:
                assert b % 2 and copy_s > 0 and seq.swap_blocks == blocks_for(tokens, BS)
                swapped[seq.id] = seq
                live_tokens[seq.id] = tokens
        elif op == "swap_in" and swapped:
            seq = swapped[list(swapped)[a % len(swapped)]]
            if bm.can_swap_in(seq):
                del swapped[seq.id]
                assert bm.swap_in(seq) > 0
                live[seq.id] = seq
        elif op == "release" and live:
            seq = live.pop(list(live)[a % len(live)])
            live_tokens.pop(seq.id)
            bm.release(seq.table)
        _check(bm, live, swapped)
    for seq in list(live.values()):
        bm.release(seq.table)
    # With every table released, only the prefix cache holds HBM blocks, all of them evictable.
    assert bm.table_blocks == 0
    assert bm.gpu.used == (bm.cache.gpu_blocks if bm.cache is not None else 0) == bm.gpu.used - bm.used()
