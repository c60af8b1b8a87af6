"""Which memory knobs each engine reads (sim/data/engine_rules.json, `memory_settings`): the one rule
the panels enable a knob by and the HBM bar draws its utilisation edge by. Checked against the
accounting itself: a knob an engine is said to read moves its KV pool, any other knob leaves it."""

import pytest
from kvlab.sim import Scenario, evaluate
from kvlab.sim.engine_rules import ENGINES_WITH_RULES, memory_knobs, reads_setting

# Two values of each knob, both inside its bounds, far enough apart to move any pool that reads it.
KNOBS = {"gpu_memory_utilization": (0.80, 0.95), "mem_fraction_static": (0.75, 0.90),
         "kv_cache_free_gpu_mem_fraction": (0.70, 0.90), "kv_cache_max_tokens": (None, 20_000)}


@pytest.mark.parametrize("engine", ENGINES_WITH_RULES)
@pytest.mark.parametrize("knob", KNOBS)
def test_a_knob_moves_the_pool_exactly_when_the_engine_reads_it(engine, knob):
    low, high = KNOBS[knob]
    pools = [evaluate(Scenario(engine=engine, model="qwen3-8b", **{knob: value})).kv_pool_tokens for value in (low, high)]
    assert (pools[0] != pools[1]) == reads_setting(engine, knob), (engine, knob, pools)


def test_every_engine_reads_some_knob_and_every_knob_is_checked_here():
    assert all(any(reads_setting(e, k) for k in KNOBS) for e in ENGINES_WITH_RULES)
    assert set(memory_knobs()) == set(KNOBS)
