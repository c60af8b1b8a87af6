"""Layer kinds own the attention window's rules (as vLLM's KVCacheSpec subclasses do): the KV
tokens a layer keeps and the (query, key) pairs it computes are LayerKind methods, the
architecture sums them over its kinds, and the time-domain engine's clock calls the same rule
instead of a copy of its own (issue 33)."""

import math

import pytest
from kvlab.sim import Scenario, resolve
from kvlab.sim.engine.clock import StepClock

WINDOWED = ("gemma-2-9b", "gemma-3-27b")


@pytest.mark.parametrize("model", WINDOWED)
def test_the_architecture_sums_its_layer_kinds_rules(model):
    arch = resolve(Scenario(model=model)).arch
    assert arch.window_tokens > 0
    w = arch.window_tokens
    for context in (1, w // 2, w - 1, w, w + 1, 4 * w, 131_071):
        kept = math.fsum(k.count * k.attended(context) for k in arch.window_kinds) / arch.num_layers
        assert arch.kv_read_tokens(context) == kept
        assert all(k.attended(context) == (min(context, k.window_tokens) if k.window_tokens else context)
                   for k in arch.window_kinds)
    for new, cached in ((128, 0), (w, 0), (512, w - 100), (4096, 3 * w)):
        pairs = math.fsum(k.count * k.pairs(new, cached) for k in arch.window_kinds) / arch.num_layers
        assert arch.causal_pairs(new, cached) == pairs


@pytest.mark.parametrize("model", (*WINDOWED, "qwen3-8b"))
def test_the_engines_clock_calls_the_layer_kinds_rule(model):
    machine = resolve(Scenario(model=model)).machine
    clock = StepClock(machine)
    assert clock.kv_read.__func__ is type(machine.arch).kv_read_tokens
    for context in (1, 100, 5000, 70_000):
        assert clock.kv_read(context) == machine.arch.kv_read_tokens(context)
