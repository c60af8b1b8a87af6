"""Fuzz the time-domain engine: simulate(EngineConfig) with any value in any field, bounded memory."""

from __future__ import annotations

from dataclasses import fields

from hypothesis import given
from hypothesis import strategies as st
from kvlab.sim.engine import (
    ADMISSIONS,
    ARRIVALS,
    BLOCK_TABLES,
    LENGTH_DISTS,
    POLICIES,
    PREEMPTIONS,
    ROUTERS,
    TOKENIZERS,
    Cluster,
    EngineConfig,
    KVManagement,
    Scheduling,
    Workload,
    simulate,
)
from kvlab.sim.fields import ENGINE_FIELDS

from .support import batches, check_each, finite_numbers, fuzz, hostile, in_range, measure_memory, peak_of, subsets

CHOICES = {
    "arrival": ARRIVALS, "prompt_dist": LENGTH_DISTS, "output_dist": LENGTH_DISTS, "policy": POLICIES,
    "admission": ADMISSIONS, "tokenizer": TOKENIZERS, "block_table": BLOCK_TABLES, "preemption": PREEMPTIONS,
    "router": ROUTERS, "prefix_caching": (True, False), "disaggregated": (True, False),
}
# Valid draws are kept small where the work grows with them (a fuzz run must take milliseconds);
# hostile draws cover the whole range and beyond.
SMALL = {"num_requests": (1, 16), "clients": (1, 16), "replicas": (1, 4), "prefill_instances": (1, 3),
         "decode_instances": (1, 3), "prompt_tokens": (1, 40_000), "prompt_min_tokens": (1, 40_000),
         "prompt_max_tokens": (1, 60_000), "output_tokens": (1, 5_000), "output_min_tokens": (1, 5_000),
         "output_max_tokens": (1, 8_000), "prefix_tokens": (0, 4_000)}
NAMES = [f.name for g in (Workload, Scheduling, KVManagement, Cluster, EngineConfig) for f in fields(g)
         if f.name in ENGINE_FIELDS or f.name in CHOICES]


def _value(name):
    if name in CHOICES:
        good = st.sampled_from(CHOICES[name])
    else:
        b = ENGINE_FIELDS[name]
        low, high = SMALL.get(name, (b.low, b.high))
        good = in_range(low, high, b.integer)
    return st.one_of(good, good, good, hostile)


configs = subsets({name: _value(name) for name in NAMES}, max_size=10)


@fuzz("engine")
@given(batches(configs))
def test_simulate_never_raises_finishes_and_stays_in_budget(batch):
    check_each(batch, _check_changes)


def _check_changes(changes):
    changes.setdefault("num_requests", 6)
    n = changes["num_requests"]
    if isinstance(n, int | float) and not isinstance(n, bool) and 16 < n <= 400_000:
        changes["num_requests"] = 16  # valid but slow: a fuzz run must take milliseconds (the refusal above 400,000 is kept)
    cfg = EngineConfig().with_(**changes)
    r = simulate(cfg)
    if measure_memory(r):
        peak_of(lambda: simulate(cfg), r)
    for e in r.errors:
        assert isinstance(e["field"], str) and isinstance(e["message"], str) and len(e["message"]) < 600
    if r.errors:
        assert r.completed == 0
        return
    assert r.completed == r.num_requests == cfg.workload.num_requests or cfg.workload.arrival == "trace"
    assert not finite_numbers(r)
    assert r.peak_kv_blocks <= r.kv_pool_blocks
    for p in (r.ttft_s, r.e2e_s, r.queue_s, r.itl_s):
        assert 0 <= p.p50 <= p.p90 <= p.p99 <= p.max + 1e-12
