"""The engine's clock is sim.roofline.step_cost, evaluated in closed form: check both claims."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kvlab.sim import Scenario, catalog
from kvlab.sim.engine.clock import StepClock
from kvlab.sim.engine.config import EngineConfig
from kvlab.sim.engine.setup import build
from kvlab.sim.roofline import step_cost


def _clock(model: str, gpu: str = "h100-sxm", tp: int = 1, **kw) -> StepClock:
    setup, issues, _ = build(EngineConfig(scenario=Scenario(model=model, gpu=gpu, tp=tp, **kw)))
    assert not issues, issues
    return setup.clock


MODELS = [("qwen3-8b", "h100-sxm", 1, {}), ("qwen3-30b-a3b", "h100-sxm", 1, {}), ("gemma-2-9b", "a100-80", 1, {}),
          ("deepseek-v3", "h200", 8, {"weight_dtype": "fp8"}), ("llama-3.1-70b", "h100-sxm", 8, {"kv_dtype": "fp8"}),
          # the per-kernel step model (a v2 profile): the closed form must hold for it too
          ("llama-3.1-70b", "h100-sxm", 4, {"weight_dtype": "fp8", "profile": "h100-published"}),
          ("gemma-2-9b", "h200", 1, {"profile": "h200-published"}),
          # an engine rule's host time per step is part of the step's wall time
          ("qwen3-8b", "h100-sxm", 1, {"engine": "vllm", "profile": "h100-published"})]


@pytest.mark.parametrize("model,gpu,tp,kw", MODELS)
def test_step_time_equals_step_cost_for_any_batch(model, gpu, tp, kw):
    clock = _clock(model, gpu, tp, **kw)
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(1, 9000)
        kv = rng.uniform(0, 3e6)
        pairs = rng.uniform(0, 5e7)
        want = step_cost(clock.machine, new_tokens=n, kv_read_tokens=kv, attention_pairs=pairs).wall_s
        assert clock.step_s(n, kv, pairs) == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("model,gpu,tp,kw", MODELS)
def test_decode_run_sums_the_individual_steps(model, gpu, tp, kw):
    """A run of k decode steps lasts the sum of step_cost over its k batches, crossover included."""
    clock = _clock(model, gpu, tp, **kw)
    for n, kv0, k in [(1, 10, 50), (32, 32 * 4096, 300), (256, 256 * 200, 2000), (900, 900 * 128, 3000)]:
        run = clock.decode_run(n, kv0, float(n), extra_s=0.002)
        total = 0.0
        for i in range(k):
            x = kv0 + n * i
            d = step_cost(clock.machine, new_tokens=n, kv_read_tokens=x, attention_pairs=x).wall_s + (0.002 if i == 0 else 0.0)
            assert run.step_s(i) == pytest.approx(d, rel=1e-9)
            total += d
        assert run.total_s(k) == pytest.approx(total, rel=1e-9)


def test_decode_run_crosses_from_memory_to_compute_bound():
    """Qwen3-14B, 256 sequences of short context: the KV read grows until... check that a run
    spanning the crossover still sums exactly (the max() is split at the crossing step)."""
    clock = _clock("qwen3-14b")
    n = 512
    run = clock.decode_run(n, n * 16, float(n))
    assert run._switch is not None or run.b1 == run.b2
    k = 40_000
    exact = math.fsum(run.step_s(i) for i in range(k))
    assert run.total_s(k) == pytest.approx(exact, rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 400), st.floats(0, 1e6), st.integers(1, 5000), st.floats(0, 1))
def test_steps_within_finds_the_step_in_progress(n, kv0, k, frac):
    clock = _clock("qwen3-8b")
    run = clock.decode_run(n, kv0, float(n))
    dt = frac * run.total_s(k)
    j = run.steps_within(dt, k)
    assert 1 <= j <= k
    assert run.total_s(j) >= dt or j == k
    assert j == 1 or run.total_s(j - 1) < dt


def test_kv_read_caps_sliding_window_layers():
    clock = _clock("gemma-2-9b")
    arch = clock.machine.arch
    w = arch.sliding_window_tokens
    assert w and clock.kv_read(w) == w
    frac_full = (arch.num_layers - arch.num_sliding_layers) / arch.num_layers
    assert clock.kv_read(w + 1000) == pytest.approx(w + 1000 * frac_full)


def test_transfer_bytes_are_per_rank():
    """A swap or KV hand-off moves one rank's shard, so tp=8 moves half of what tp=4 moves per link."""
    c4, c8 = _clock("llama-3.1-70b", tp=4), _clock("llama-3.1-70b", tp=8)
    assert c8.kv_bytes_per_token == pytest.approx(c4.kv_bytes_per_token / 2)
    assert c4.kv_bytes_per_token * 4 == 2 * 80 * 8 * 128 * 2  # 320 KiB per token for Llama 3.1 70B in BF16
    assert catalog.gpu("h100-sxm").host_link_bytes_per_s > 0
