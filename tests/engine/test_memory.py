"""Paged blocks, the decode set's block arithmetic, and the radix prefix cache, each against a
brute-force model of the same thing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kvlab.sim import Scenario
from kvlab.sim.engine.blocks import BlockPool, blocks_for
from kvlab.sim.engine.config import EngineConfig
from kvlab.sim.engine.decode_set import DecodeSet
from kvlab.sim.engine.prefix_cache import PrefixCache
from kvlab.sim.engine.sequence import Seq
from kvlab.sim.engine.setup import build
from kvlab.sim.engine.workload import Request


def test_pool_refuses_to_overcommit():
    pool = BlockPool(10)
    pool.take(7)
    with pytest.raises(RuntimeError, match="overcommitted"):
        pool.take(4)
    pool.give(7)
    assert pool.free == 10 and pool.peak_used == 7
    with pytest.raises(RuntimeError):
        pool.give(1)


def test_blocks_for_rounds_up():
    assert [blocks_for(t, 16) for t in (0, 1, 16, 17, 32, 33)] == [0, 1, 1, 2, 2, 3]


def _clock():
    setup, issues, _ = build(EngineConfig(scenario=Scenario(model="qwen3-8b")))
    assert not issues
    return setup.clock


def _seq(i: int, output: int) -> Seq:
    s = Seq(Request(i, 0.0, 100, output, None, 0), 0.0)
    s.order = i
    return s


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 500), st.integers(2, 300)), min_size=1, max_size=30),
       st.integers(0, 40), st.sampled_from([1, 4, 16, 32]), st.integers(1, 700))
def test_blocks_needed_matches_stepping_every_sequence(members, start_g, block, k):
    """Blocks a run of k steps allocates = sum over sequences of the block boundaries crossed."""
    dec = DecodeSet(block, _clock())
    dec.g = start_g
    contexts = []
    for i, (ctx, out) in enumerate(members):
        dec.add(_seq(i, out), ctx)
        contexts.append(ctx)
    brute = sum(blocks_for(c + k, block) - blocks_for(c, block) for c in contexts)
    assert dec.blocks_needed(k) == brute
    # max_steps is the largest k whose blocks fit
    avail = brute
    m = dec.max_steps(avail)
    assert dec.blocks_needed(m) <= avail < dec.blocks_needed(m + 1)


def test_decode_set_milestones_and_aggregates():
    dec = DecodeSet(16, _clock())
    a, b = _seq(1, 10), _seq(2, 4)
    dec.add(a, 100)  # generated 0 -> finishes after 10 steps
    dec.add(b, 50)
    assert dec.n == 2 and dec.kv_read == (100 + 1) + (50 + 1)
    assert dec.steps_to_milestone() == 4
    done = dec.advance(4)
    assert done == [b]
    assert dec.cached(b) == 54
    dec.remove(b)
    assert b.generated == 4 and dec.n == 1
    assert dec.kv_read == 100 + 4 + 1
    assert dec.steps_to_milestone() == 6
    assert dec.remaining_output() == 6


def test_removed_member_leaves_no_live_milestone():
    dec = DecodeSet(16, _clock())
    a = _seq(1, 5)
    dec.add(a, 10)
    dec.remove(a)
    assert dec.steps_to_milestone() > 10**12
    assert dec.advance(10) == []


def _cache(gpu_blocks=100, host_blocks=0):
    pool = BlockPool(gpu_blocks)
    host = BlockPool(host_blocks) if host_blocks else None
    return pool, host, PrefixCache(pool, host)


def _fill(cache, pool, key, blocks):
    node = cache.acquire(key)
    pool.take(blocks)
    cache.donate(node, blocks)
    cache.release(node)
    return node


def test_lru_evicts_least_recently_released_first_from_the_tail():
    pool, _, cache = _cache()
    _fill(cache, pool, "a", 10)
    _fill(cache, pool, "b", 10)
    node = cache.acquire("a")  # a is used again: b is now the oldest
    cache.release(node)
    assert list(cache.lru) == ["b", "a"]
    assert cache.evictable_blocks == 20
    assert cache.evict(4) == 4
    assert cache.children["b"].gpu_blocks == 6  # trimmed from its tail: still a prefix of the prompt
    assert cache.evict(100) == 16
    assert cache.children == {} and pool.free == 100


def test_pinned_prefixes_are_never_evicted():
    pool, _, cache = _cache()
    _fill(cache, pool, "a", 10)
    node = cache.acquire("a")
    assert cache.evictable_blocks == 0
    assert cache.evict(10) == 0 and node.gpu_blocks == 10
    assert cache.peek("a", 6)[1:] == (6, 0)
    assert cache.reclaimable_excluding(node) == 0


def test_host_tier_keeps_evicted_blocks_and_loads_them_back():
    pool, host, cache = _cache(100, 8)
    _fill(cache, pool, "a", 10)
    cache.evict(6)
    node = cache.children["a"]
    assert (node.gpu_blocks, node.host_blocks) == (4, 6)
    assert cache.peek("a", 10)[1:] == (4, 6)
    node = cache.acquire("a")
    pool.take(6)
    cache.load_from_host(node, 6)
    assert (node.gpu_blocks, node.host_blocks, host.free) == (10, 0, 8)
    cache.release(node)


def test_full_host_tier_drops_its_least_recent_blocks():
    pool, host, cache = _cache(100, 8)
    _fill(cache, pool, "a", 8)
    _fill(cache, pool, "b", 8)
    cache.evict(8)  # a goes to the host tier entirely
    cache.evict(8)  # b needs the room: a's host blocks are dropped
    assert cache.children["b"].host_blocks == 8
    assert "a" not in cache.children
    assert host.free == 0 and cache.host_dropped_blocks == 8
