"""The engine's clock is sim.roofline.step_cost, evaluated in closed form: check both claims."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kvlab.sim import Scenario, catalog
from kvlab.sim.engine.clock import DecodeRun, StepClock
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
          ("qwen3-8b", "h100-sxm", 1, {"engine": "vllm", "profile": "h100-published"}),
          # the measured H200 profile: its attention efficiency depends on the context per sequence
          ("qwen3-8b", "h200", 1, {"profile": "h200"}), ("deepseek-v3", "h200", 8, {"weight_dtype": "fp8", "profile": "h200"})]
# The clock snaps a context to the nearest 1/8 octave (one step shape per grid point); contexts on
# that grid must cost exactly what step_cost says, and every profile must be tried at some.
GRID_CONTEXTS = [2.0 ** (j / 8) for j in range(0, 17 * 8)]


@pytest.mark.parametrize("model,gpu,tp,kw", MODELS)
def test_step_time_equals_step_cost_for_any_batch(model, gpu, tp, kw):
    """Any batch: tokens, KV read and pairs, the rows it samples (a prefill samples one per prompt)
    and the context per sequence (on the clock's grid)."""
    clock = _clock(model, gpu, tp, **kw)
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(1, 9000)
        kv = rng.uniform(0, 3e6)
        pairs = rng.uniform(0, 5e7)
        sampled = rng.choice([None, rng.randint(1, n)])
        context = rng.choice([None, rng.choice(GRID_CONTEXTS)])
        want = step_cost(clock.machine, new_tokens=n, kv_read_tokens=kv, attention_pairs=pairs, sampled_tokens=sampled,
                         context_tokens=context).wall_s
        assert clock.step_s(n, kv, pairs, sampled, context) == pytest.approx(want, rel=1e-9), (n, sampled, context)


def test_the_rows_sampled_and_the_context_change_the_step_where_the_profile_says_they_do():
    """Without this, the test above could pass with a clock that drops both arguments: the
    per-kernel lm_head costs by rows sampled, vLLM's host time by rows, and the measured H200
    attention efficiency by context."""
    vllm = _clock("qwen3-8b", "h100-sxm", 1, engine="vllm", profile="h100-published")
    assert vllm.step_s(2048, 1e5, 1e6, 1) < vllm.step_s(2048, 1e5, 1e6, 2048)
    n, x = 64, 64 * 4096.0  # the same batch and KV read, said to be short or long sequences
    h200 = _clock("qwen3-8b", "h200", profile="h200")
    assert h200.step_s(n, x, x, n, 256.0) != pytest.approx(h200.step_s(n, x, x, n, 32768.0), rel=1e-6)
    textbook = _clock("qwen3-8b", "h100-sxm")  # no efficiency curve: the context changes nothing
    assert textbook.step_s(n, x, x, n, 256.0) == textbook.step_s(n, x, x, n, 32768.0)


@pytest.mark.parametrize("context", [300.0, 1000.0, 3333.0, 12345.0, 40000.0])
def test_a_context_between_grid_points_costs_as_the_nearest_eighth_of_an_octave(context):
    clock = _clock("qwen3-8b", "h200", profile="h200")
    n = 64
    lower = max(c for c in GRID_CONTEXTS if c <= context)
    upper = min(c for c in GRID_CONTEXTS if c > context)
    nearest = lower if context / lower < upper / context else upper
    def cost(c: float) -> float:
        return step_cost(clock.machine, new_tokens=n, kv_read_tokens=n * context, attention_pairs=n * context,
                         sampled_tokens=n, context_tokens=c).wall_s
    assert clock.step_s(n, n * context, n * context, n, context) == pytest.approx(cost(nearest), rel=1e-9)


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


def test_decode_run_crosses_from_compute_to_memory_bound():
    """Qwen3-14B, 512 sequences of 16 tokens: 512 tokens through the weights make the first steps
    compute-bound, and the KV read, growing by 512 tokens a step, makes them memory-bound from
    step `_switch` on (a decode step never crosses the other way: a KV token's bytes outgrow its
    attention FLOPs). Every partial sum up to past the switch equals the sum of step_cost's steps,
    so a run that split its series one step early or late would fail."""
    clock = _clock("qwen3-14b")
    n, kv0 = 512, 512 * 16

    def step(i: int):
        x = kv0 + n * i
        return step_cost(clock.machine, new_tokens=n, kv_read_tokens=x, attention_pairs=x)

    run = clock.decode_run(n, kv0, float(n))
    s = run._switch
    assert s is not None and 50 < s < 5000
    assert step(s - 1).compute_side_s > step(s - 1).memory_side_s and step(s).memory_side_s > step(s).compute_side_s
    total = 0.0
    for k in range(1, s + 50):
        total += step(k - 1).wall_s
        assert run.total_s(k) == pytest.approx(total, rel=1e-9), k


@pytest.mark.parametrize("a1,b1,a2,b2", [(1.1, 0.1, 0.0, 0.35), (0.0, 0.35, 1.1, 0.1), (1.0, 0.1, 0.9, 0.3),
                                         (1.0, 0.1, 1.0, 0.1), (2.0, 0.1, 0.0, 0.1), (0.5, 0.2, 0.5, 0.3)])
def test_a_run_of_either_shape_lasts_the_sum_of_its_steps(a1, b1, a2, b2):
    """DecodeRun by itself, on lines that cross either way (the first is on top, then the second,
    crossing at step 4.4; the reverse; within the first step, at 0.5), that coincide, run parallel
    or meet at the start."""
    e, extra = 0.01, 0.5
    run = DecodeRun(a1, b1, a2, b2, e, extra)
    total = 0.0
    for k in range(1, 30):
        d = max(a1 + b1 * (k - 1), a2 + b2 * (k - 1)) + e + (extra if k == 1 else 0.0)
        assert run.step_s(k - 1) == pytest.approx(d, rel=1e-12)
        total += d
        assert run.total_s(k) == pytest.approx(total, rel=1e-12), k


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
