"""The seeds' qualitative findings, reproduced on their workload shapes.

Seed 000: chunked prefill with decode priority cuts p99 TTFT and ITL against one shared queue of
whole prompts. Seed 001: at KV saturation the running batch stays far below the concurrency limit
while the cache sits near full, and longer outputs lower it further. Seed 004: p99 latency against
request rate has a sharp knee, and an FP8 cache moves it to a higher rate.
"""

from __future__ import annotations

import pytest
from kvlab.sim.engine import simulate
from kvlab.sim.engine.presets import seed000, seed001, seed004
from kvlab.sim.engine.simulation import make_rng
from kvlab.sim.engine.sweep import knee, rate_sweep
from kvlab.sim.engine.workload import generate


def _steady(r, key):
    """Mean of a series over the middle of the run: after the start-up transient, before a closed
    loop with a finite number of requests drains at the end."""
    v = r.series[key]
    mid = v[len(v) // 4: len(v) * 3 // 5]
    return sum(mid) / len(mid)


# ---------------------------------------------------------------- seed 000
def test_seed000_workload_has_the_seed_shape():
    reqs = generate(seed000().workload.with_(num_requests=20_000), make_rng(0))
    prompts = sorted(q.prompt_tokens for q in reqs)
    outputs = [q.output_tokens for q in reqs]
    assert prompts[len(prompts) // 2] == pytest.approx(6000, rel=0.05)  # median about 6k
    assert 0.01 < sum(p > 30_000 for p in prompts) / len(prompts) < 0.05  # a tail past 30k
    assert sum(o < 300 for o in outputs) / len(outputs) > 0.85  # generations mostly under 300


@pytest.fixture(scope="module")
def shared_queue_capacity() -> float:
    """Requests per second the shared queue completes when overloaded: its service capacity."""
    r = simulate(seed000("fcfs", cpu_costs=False).with_(rate_per_s=4.0, num_requests=1500))
    return r.throughput_per_s


@pytest.mark.parametrize("seed", [0, 1])
def test_seed000_chunked_prefill_with_decode_priority_cuts_the_tails(shared_queue_capacity, seed):
    """At 90% of the shared queue's capacity ("under load"), on the same seeded workload.

    ITL: a decode never waits behind a whole 30k-token prompt, only behind one chunk.
    TTFT: decodes ride along inside compute-bound prefill steps almost for free, instead of each
    decode step paying its own weight read, so the same load is a lighter one for chunked.
    """
    rate = 0.9 * shared_queue_capacity
    shared = simulate(seed000("fcfs", cpu_costs=False).with_(rate_per_s=rate, num_requests=3000, seed=seed))
    chunked = simulate(seed000("chunked", cpu_costs=False).with_(rate_per_s=rate, num_requests=3000, seed=seed))
    assert chunked.itl_s.p99 < 0.2 * shared.itl_s.p99
    assert chunked.itl_s.max < 0.05 * shared.itl_s.max
    assert chunked.ttft_s.p99 < 0.85 * shared.ttft_s.p99
    assert chunked.ttft_s.p50 <= 1.05 * shared.ttft_s.p50


def test_seed000_lanes_bound_the_decode_wait_by_one_chunk():
    """Separate lanes with decode priority: a decode waits at most one prefill chunk, never a
    whole prompt, whatever the prompt length."""
    kw = dict(rate_per_s=1.6, num_requests=1500)
    shared = simulate(seed000("fcfs", cpu_costs=False).with_(**kw))
    lanes = simulate(seed000("lanes", cpu_costs=False).with_(**kw))
    budget_step = simulate(seed000("lanes", cpu_costs=False).with_(num_requests=1, arrival="closed", clients=1,
                                                                   prompt_dist="fixed", prompt_tokens=2048))
    one_chunk_s = budget_step.ttft_s.max
    assert lanes.itl_s.max < 2.5 * one_chunk_s  # one chunk plus one decode step, with margin for the longest context
    assert shared.itl_s.max > 10 * lanes.itl_s.max
    assert lanes.itl_s.p99 < 0.5 * shared.itl_s.p99


def test_seed000_cpu_costs_add_to_the_tail_not_the_median():
    """Tokenization on the request thread and full block-table rewrites, switched on."""
    kw = dict(rate_per_s=1.6, num_requests=1500)
    clean = simulate(seed000("fcfs", cpu_costs=False).with_(**kw))
    costly = simulate(seed000("fcfs", cpu_costs=True).with_(**kw))
    assert costly.tokenizer_s > 0 and costly.per_instance[0]["scheduler_s"] > 0
    assert costly.ttft_s.p99 > clean.ttft_s.p99


# ---------------------------------------------------------------- seed 001
@pytest.fixture(scope="module")
def saturated():
    return {out: simulate(seed001(out)) for out in (1500, 3000)}


def test_seed001_running_requests_far_below_the_limit_while_kv_is_full(saturated):
    r = saturated[3000]
    limit = 150
    running, waiting, usage = _steady(r, "running"), _steady(r, "waiting"), _steady(r, "kv_usage")
    assert running < 0.5 * limit  # the seed saw 46-56 of 150
    assert usage > 0.85  # the seed saw token usage 0.85-0.96
    assert waiting > 50  # with 100+ queued
    assert running + waiting == pytest.approx(limit, abs=2)  # the closed loop keeps 150 in flight


def test_seed001_longer_outputs_lower_the_number_running(saturated):
    short, long = saturated[1500], saturated[3000]
    assert _steady(long, "running") < 0.8 * _steady(short, "running")
    assert _steady(long, "kv_usage") > 0.85 and _steady(short, "kv_usage") > 0.85


def test_seed001_log_lines_show_the_saturation(saturated):
    lines = [x for x in saturated[3000].sglang_log if "Decode batch." in x]
    assert lines
    late = lines[len(lines) // 2]
    usage = float(late.split("token usage: ")[1].split(",")[0])
    running = int(late.split("#running-req: ")[1].split(",")[0])
    assert usage >= 0.8 and running < 100


# ---------------------------------------------------------------- seed 004
RATES = [0.25, 0.5, 1.0, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0, 3.25, 3.5]


@pytest.fixture(scope="module")
def sweeps():
    return {kv: rate_sweep(seed004(kv).with_(num_requests=600), RATES) for kv in ("bf16", "fp8")}


def test_seed004_p99_latency_has_a_sharp_knee(sweeps):
    """Flat for a long way, then an order of magnitude within a small step of load."""
    pts = sweeps["bf16"].points
    floor = pts[0].ttft_p99_s
    k = knee(pts)
    assert k is not None
    i = RATES.index(k)
    before, after = pts[i - 1], pts[min(i + 1, len(pts) - 1)]
    # Flat for a long way: the rate grows 4x from the lightest load, p99 TTFT less than 1.5x (before the
    # knee it is below 3x by the knee's definition). With vLLM's host time per step (3 ms, an engine
    # rule since issue 11) the engine is slower, so the point just before the knee (6x) is at 2.8x.
    assert pts[RATES.index(1.0)].ttft_p99_s < 1.5 * floor
    assert after.rate_per_s <= 1.35 * before.rate_per_s
    assert after.ttft_p99_s > 5 * before.ttft_p99_s  # then a step of at most 35% in load costs 5x or more
    assert pts[-1].ttft_p99_s > 30 * floor


def test_seed004_the_knee_is_where_the_kv_cache_fills(sweeps):
    pts = sweeps["bf16"].points
    i = RATES.index(knee(pts))
    assert pts[i + 1].mean_kv_usage > 0.8
    assert pts[1].mean_kv_usage < 0.2


def test_seed004_an_fp8_cache_moves_the_knee_to_a_higher_rate(sweeps):
    k16, k8 = knee(sweeps["bf16"].points), knee(sweeps["fp8"].points)
    assert k8 is not None and k16 is not None
    assert k8 >= 1.3 * k16
    top16 = max(p.throughput_per_s for p in sweeps["bf16"].points)
    top8 = max(p.throughput_per_s for p in sweeps["fp8"].points)
    assert top8 > 1.25 * top16  # the cache holds twice the tokens; capacity grows, not quite 2x
