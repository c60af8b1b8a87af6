"""The engine's invariants: every request completes exactly once with every token; the same seed
gives the same result; Little's law holds; the KV pool never exceeds its capacity; preempted
requests resume and finish; and the closed-form decode runs equal stepping one step at a time."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kvlab.sim.engine import Cluster, collect, prepare, simulate
from kvlab.sim.engine import clock as engine_clock
from kvlab.sim.engine.presets import default

from .conftest import ROOMY, TIGHT, small

VARIANTS = {
    "fcfs-recompute": dict(policy="fcfs"),
    "chunked-recompute": dict(policy="chunked"),
    "lanes-recompute": dict(policy="lanes"),
    "chunked-swap": dict(policy="chunked", preemption="swap"),
    "fcfs-swap": dict(policy="fcfs", preemption="swap"),
    "reserve-admission": dict(admission="reserve"),
    "prefix-host-tier": dict(prefix_tokens=1500, prefix_fraction=0.9, prefix_groups=30, prompt_min_tokens=1600, host_cache_gib=2.0),
    "disaggregated": dict(cluster=Cluster(disaggregated=True, prefill_instances=2, decode_instances=1)),
    "replicas": dict(cluster=Cluster(replicas=3, router="round_robin")),
    "closed-loop": dict(arrival="closed", clients=48),
    "bursty": dict(arrival="gamma", burst_cv=5.0),
    "cpu-costs": dict(tokenize_s_per_token=2e-6, block_table="full_recompute"),
    # 400 sequences of 128-token prompts decoding together: their steps start compute-bound and
    # turn memory-bound as the KV read grows, inside a closed-form run (the TIGHT pool's batches
    # stay memory-bound, so no other variant has a run whose steps cross from one bound to the other)
    "crosses-compute-to-memory": dict(n=400, scenario=ROOMY.with_(max_num_seqs=1024, max_num_batched_tokens=8192),
                                      arrival="closed", clients=400, prompt_dist="fixed", prompt_tokens=128,
                                      output_dist="fixed", output_tokens=800),
    # Speculative decoding (Qwen3-0.6B drafting 4 tokens at acceptance 0.6): decode runs of one
    # token a step at cycle / E, chunked steps that give a whole cycle's tokens, lookahead slots
    "spec-chunked": dict(scenario=TIGHT.with_(spec_draft_model="qwen3-0.6b", spec_tokens=4, spec_acceptance=0.6)),
    "spec-lanes-swap": dict(policy="lanes", preemption="swap",
                            scenario=TIGHT.with_(spec_draft_model="qwen3-0.6b", spec_tokens=4, spec_acceptance=0.6)),
    "spec-fcfs": dict(policy="fcfs", scenario=TIGHT.with_(spec_draft_model="qwen3-0.6b", spec_tokens=16, spec_acceptance=0.9)),
}


def _run(cfg, **kw):
    sim = prepare(cfg, **kw)
    assert not hasattr(sim, "errors"), sim.errors
    sim.run()
    return sim, collect(sim)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_request_completes_once_with_every_token(name):
    sim, r = _run(small(**VARIANTS[name]))
    m = sim.metrics
    outputs = [q.output_tokens for q in sim.requests]
    assert r.completed == r.num_requests == len(outputs)
    assert m.completions == [1] * len(outputs)
    assert m.generated_at_finish == outputs
    # every generated token is counted once, preemptions and hand-offs included
    assert r.output_tokens_generated == sum(outputs)
    # each prompt is computed at least once (minus prefix-cache hits); recomputation adds more
    prompts = sum(q.prompt_tokens for q in sim.requests)
    assert r.prompt_tokens_computed >= prompts - sum(r.requests["hit_tokens"])
    if r.preemptions == r.swaps:  # nothing was recomputed: each prompt token computed exactly once
        assert r.prompt_tokens_computed == prompts - sum(r.requests["hit_tokens"])
    # time runs forward for every request
    for a, f, e in zip(r.requests["arrival_s"], r.requests["ttft_s"], r.requests["e2e_s"], strict=True):
        assert a >= 0 and 0 < f <= e


@pytest.mark.parametrize("name", list(VARIANTS))
def test_the_pool_never_exceeds_its_capacity(name):
    sim, r = _run(small(**VARIANTS[name]))
    for inst in sim.instances:
        kv = inst.blocks
        assert kv.gpu.peak_used <= kv.gpu.num_blocks
        assert kv.gpu.free == kv.gpu.num_blocks - (kv.cache.gpu_blocks if kv.cache else 0)  # only cached prefixes remain
        assert kv.swap.free == kv.swap.num_blocks and kv.table_blocks == 0
        assert not inst.running and not inst.waiting and not inst.swapped
    assert max(r.series["kv_usage"]) <= 1.0


def test_the_tight_pool_really_is_full_and_preempts():
    """The variants above are meant to exercise preemption: check that they do."""
    r = simulate(small())
    assert r.peak_kv_blocks >= 0.97 * r.kv_pool_blocks
    assert r.preemptions > 0
    assert simulate(small(preemption="swap")).swaps > 0


def test_the_crossing_variant_really_crosses(monkeypatch):
    """The closed form's hardest case, a run whose steps change bound part-way, must be among the
    runs compared with stepping below: count the runs planned across their crossing step."""
    crossing = []
    real_total_s = engine_clock.DecodeRun.total_s

    def total_s(run, k):
        if run._switch is not None and 0 < run._switch < k:
            crossing.append((run._switch, k))
        return real_total_s(run, k)

    monkeypatch.setattr(engine_clock.DecodeRun, "total_s", total_s)
    _run(small(**VARIANTS["crosses-compute-to-memory"]))
    assert len(crossing) >= 5


@pytest.mark.parametrize("mode", ["recompute", "swap"])
def test_preempted_requests_resume_and_finish(mode):
    sim, r = _run(small(n=400, rate=14.0, preemption=mode))
    preempted = [i for i, p in zip(r.requests["id"], r.requests["preemptions"], strict=True) if p > 0]
    assert preempted, "the workload should force preemptions"
    assert all(sim.metrics.generated_at_finish[i] == sim.requests[i].output_tokens for i in preempted)
    if mode == "swap":
        assert r.swaps > 0 and r.per_instance[0]["swap_s"] > 0


def test_same_seed_same_result_different_seed_different_result():
    cfg = small(**VARIANTS["prefix-host-tier"])
    a, b = simulate(cfg).to_dict(), simulate(cfg).to_dict()
    assert a == b
    c = simulate(cfg.with_(seed=4)).to_dict()
    assert c["requests"]["e2e_s"] != a["requests"]["e2e_s"]


def test_littles_law_holds_within_sampling_error():
    """L = lambda W: the time-average of requests in the system, read from the sampled series,
    equals the configured arrival rate times the mean time in system."""
    rate = 8.0
    cfg = default().with_(rate_per_s=rate, num_requests=4000, seed=11, scenario=ROOMY)
    r = simulate(cfg)
    series = r.series
    t_last_arrival = max(r.requests["arrival_s"])
    # average over the window in which requests arrive at the configured rate
    window = [n for t, n in zip(series["t_s"], series["in_system"], strict=True) if t <= t_last_arrival]
    mean_in_system = math.fsum(window) / len(window)
    w_mean = r.e2e_s.mean
    assert mean_in_system == pytest.approx(rate * w_mean, rel=0.08)
    # and over the whole run the sampled average matches the observed-rate identity closely
    ll = r.littles_law
    assert ll["mean_in_system"] == pytest.approx(ll["rate_x_e2e"], rel=0.03)


CLOSED_FORM_CASES = {k: v for k, v in VARIANTS.items() if k != "reserve-admission"}


@pytest.mark.parametrize("name", list(CLOSED_FORM_CASES))
def test_closed_form_runs_equal_stepping_every_step(name):
    """Jumping over decode steps in closed form gives the same timeline as one event per step."""
    cfg = small(**{"n": 200, **CLOSED_FORM_CASES[name]})
    fast_sim, fast = _run(cfg)
    slow_sim, slow = _run(cfg, max_run_steps=1)
    assert slow_sim.events > fast_sim.events
    assert fast.preemptions == slow.preemptions
    for x, y in zip(fast.requests["e2e_s"], slow.requests["e2e_s"], strict=True):
        assert x == pytest.approx(y, rel=1e-9, abs=1e-9)
    for x, y in zip(fast.requests["ttft_s"], slow.requests["ttft_s"], strict=True):
        assert x == pytest.approx(y, rel=1e-9, abs=1e-9)
    # ITL quantiles come from a histogram with 1%-wide bins: a run's gaps are spread over their
    # range, single steps land as points, so the two agree to the bin width; counts and max exactly.
    assert fast.itl_s.p99 == pytest.approx(slow.itl_s.p99, rel=0.01)
    assert fast.itl_s.p50 == pytest.approx(slow.itl_s.p50, rel=0.01)
    assert fast.itl_s.count == slow.itl_s.count
    assert fast.itl_s.max == pytest.approx(slow.itl_s.max, rel=1e-9)


def test_reserve_admission_is_close_to_stepping():
    """SGLang's reserve ratio shrinks every step; runs re-check admission every 8 steps, so the
    timeline is close to, not equal to, stepping every step."""
    from kvlab.sim.engine.presets import seed001
    cfg = seed001().with_(num_requests=300)
    _, fast = _run(cfg)
    _, slow = _run(cfg, max_run_steps=1)
    assert fast.e2e_s.mean == pytest.approx(slow.e2e_s.mean, rel=0.05)
    assert fast.mean_running == pytest.approx(slow.mean_running, rel=0.05)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policy=st.sampled_from(["fcfs", "chunked", "lanes"]), preemption=st.sampled_from(["recompute", "swap"]),
       rate=st.floats(2.0, 30.0), util=st.floats(0.25, 0.6), seed=st.integers(0, 10_000),
       prefix=st.booleans(), block=st.sampled_from([8, 16, 32]), budget=st.sampled_from([512, 2048, 8192]),
       spec=st.sampled_from([None, (2, 0.5), (16, 0.95)]))
def test_random_configurations_keep_every_invariant(policy, preemption, rate, util, seed, prefix, block, budget, spec):
    scenario = TIGHT.with_(gpu_memory_utilization=util, block_size_tokens=block, max_num_batched_tokens=budget,
                           max_num_seqs=min(256, budget))
    if spec is not None:  # speculative decoding: lookahead slots as large as a block or two
        scenario = scenario.with_(spec_draft_model="qwen3-0.6b", spec_tokens=spec[0], spec_acceptance=spec[1])
    changes = dict(policy=policy, preemption=preemption, seed=seed)
    if spec is not None:
        # The draft's cache takes about 44% of each token's slot: at util 0.25 the pool holds 10,848
        # tokens, too few for the workload's longest (16,384-token) prompt, which the engine refuses.
        # Shorter prompts keep the pool as tight, relative to the requests, as without a draft.
        changes.update(prompt_max_tokens=8192)
    if prefix:
        changes.update(prefix_tokens=1000, prefix_fraction=0.7, prefix_groups=5, prompt_min_tokens=1100)
    sim, r = _run(small(n=120, rate=rate, scenario=scenario, **changes))
    assert r.completed == 120
    assert sim.metrics.completions == [1] * 120
    assert sim.metrics.generated_at_finish == [q.output_tokens for q in sim.requests]
    assert all(i.blocks.gpu.peak_used <= i.blocks.gpu.num_blocks for i in sim.instances)
