"""Seed 000's CPU-side costs, prefix caching with its host tier, disaggregated serving, and jobs
that run in slices with progress and cancel."""

from __future__ import annotations

import pytest
from kvlab.sim.engine import Cluster, parse_trace, simulate
from kvlab.sim.engine.presets import default
from kvlab.sim.engine.sweep import Job, colocated_vs_disaggregated, compare_job, rate_sweep_job, sweep_from

from .conftest import ROOMY, TIGHT, small


# ----------------------------------------------------------------------- seed 000: CPU costs
def test_tokenization_on_the_request_thread_serializes_prompts():
    """A 40k-token prompt followed 10 ms later by a 100-token one: on the request thread the short
    one waits for the long one's tokenization; in a worker pool it does not."""
    rows = parse_trace("arrival_s,prompt_tokens,output_tokens\n0.0,40000,4\n0.01,100,4\n")
    tok = 1e-5  # 10 us per token: 0.4 s for the long prompt
    serial = simulate(small(arrival="trace", trace=rows, scenario=ROOMY, tokenize_s_per_token=tok, tokenizer="request_thread"))
    pool = simulate(small(arrival="trace", trace=rows, scenario=ROOMY, tokenize_s_per_token=tok, tokenizer="worker_pool"))
    waited = serial.requests["ttft_s"][1] - pool.requests["ttft_s"][1]
    assert waited > 0.3  # most of the long prompt's 0.4 s
    assert serial.tokenizer_s == pytest.approx(40100 * tok)


def _scheduler_cost_per_admission(clients: int, mode: str) -> float:
    cfg = small(n=clients * 4, arrival="closed", clients=clients, scenario=ROOMY.with_(max_num_seqs=256),
                prompt_dist="fixed", prompt_tokens=4000, output_dist="fixed", output_tokens=200,
                block_table=mode, block_table_s_per_block=1e-7)
    r = simulate(cfg)
    return r.per_instance[0]["scheduler_s"] / r.completed


def test_full_block_table_rewrites_grow_with_the_running_batch():
    """Seed 000: invisible at 8 concurrent sequences, large at 64. Per admission the full rewrite
    costs in proportion to the running batch (so in total, to its square); incremental does not."""
    full8, full64 = _scheduler_cost_per_admission(8, "full_recompute"), _scheduler_cost_per_admission(64, "full_recompute")
    inc8, inc64 = _scheduler_cost_per_admission(8, "incremental"), _scheduler_cost_per_admission(64, "incremental")
    assert inc64 == pytest.approx(inc8, rel=0.05)  # one table of 4200 tokens: 263 blocks x 0.1 us
    assert inc8 == pytest.approx(263 * 1e-7, rel=0.05)
    assert full64 / full8 > 5  # grows with the batch
    assert full64 > 20 * inc64


# ----------------------------------------------------------------------- prefix caching
def test_prefix_hits_save_prefill_and_match_the_expected_rate():
    cfg = small(n=600, rate=5.0, scenario=ROOMY, prefix_tokens=1600, prefix_fraction=1.0, prefix_groups=2,
                prompt_dist="fixed", prompt_tokens=2000)
    on, off = simulate(cfg), simulate(cfg.with_(prefix_caching=False))
    # after the first request of each group every request hits 100 full blocks of its 1600 tokens
    expected = (600 - 2) * 1600 / (600 * 2000)
    assert on.prefix_hit_rate == pytest.approx(expected, rel=0.01)
    assert off.prefix_hit_rate == 0
    assert on.prompt_tokens_computed == pytest.approx(off.prompt_tokens_computed * (1 - expected), rel=0.01)
    assert on.ttft_s.p50 < off.ttft_s.p50


def test_lru_eviction_under_pressure_and_the_host_tier():
    """Many groups and a small pool: unreferenced prefixes get evicted and the hit rate drops; a
    host tier keeps the evicted blocks, so hits come back at the cost of host-link copies."""
    cfg = small(n=800, rate=8.0, scenario=TIGHT, prefix_tokens=3000, prefix_fraction=1.0, prefix_groups=40,
                prompt_dist="fixed", prompt_tokens=3200, output_dist="fixed", output_tokens=100)
    no_tier = simulate(cfg)
    tier = simulate(cfg.with_(host_cache_gib=30.0))
    assert no_tier.prefix_evicted_blocks > 0
    assert tier.prefix_hit_rate > no_tier.prefix_hit_rate + 0.05
    assert tier.per_instance[0]["host_load_s"] > 0
    roomy = simulate(cfg.with_(scenario=ROOMY))
    assert roomy.prefix_hit_rate > no_tier.prefix_hit_rate


# ----------------------------------------------------------------------- disaggregation
def test_disaggregation_removes_prefill_interference_from_decode():
    """Same workload, same two GPUs: colocated replicas mix prefill chunks into decode steps;
    a prefill GPU and a decode GPU keep every decode step free of them."""
    base = default().with_(rate_per_s=8.0, num_requests=800, itl_target_s=0.015, ttft_target_s=2.0)
    colo, disagg = colocated_vs_disaggregated(base, 1, 1).run()
    assert colo.gpus == disagg.gpus == 2
    assert disagg.itl_s.p99 < 0.5 * colo.itl_s.p99
    assert disagg.tpot_s.p99 < 0.7 * colo.tpot_s.p99
    assert disagg.goodput_per_s > 1.05 * colo.goodput_per_s  # a tight ITL target favours the split
    roles = [p["role"] for p in disagg.per_instance]
    assert roles == ["prefill", "decode"]
    assert disagg.per_instance[0]["generation_tokens"] == disagg.completed  # the first token of each request


def test_disaggregation_loses_when_one_pool_is_the_bottleneck():
    """With a loose ITL target and a heavier load, one prefill GPU cannot keep up while two
    colocated GPUs share the prefill work: the split must be sized to the workload."""
    base = default().with_(rate_per_s=12.0, num_requests=800, itl_target_s=0.025, ttft_target_s=2.0)
    colo, disagg = colocated_vs_disaggregated(base, 1, 1).run()
    assert disagg.ttft_s.p50 > 5 * colo.ttft_s.p50
    assert colo.goodput_per_s > 1.5 * disagg.goodput_per_s


def test_kv_transfer_cost_shows_in_the_first_gap():
    base = default().with_(rate_per_s=2.0, num_requests=200, cluster=Cluster(disaggregated=True))
    fast = simulate(base.with_(kv_transfer_gb_per_s=400.0))
    slow = simulate(base.with_(kv_transfer_gb_per_s=0.5))
    # a 2,000-token prompt of Qwen3-8B is 0.3 GB of KV: 0.6 s at 0.5 GB/s, under 1 ms at 400 GB/s
    assert slow.itl_s.max > fast.itl_s.max + 0.3
    assert slow.e2e_s.mean > fast.e2e_s.mean + 0.3
    assert slow.ttft_s.p50 == pytest.approx(fast.ttft_s.p50, rel=0.05)  # the first token comes from the prefill GPU


# ----------------------------------------------------------------------- jobs
def test_jobs_advance_in_slices_report_progress_and_match_a_full_run():
    cfg = small(n=300)
    job = compare_job(cfg, {"fcfs": {"policy": "fcfs"}, "lanes": {"policy": "lanes"}})
    seen = []
    while not job.advance(200):
        seen.append(job.progress)
    assert seen == sorted(seen) and 0 < seen[0] < 1 and len(seen) > 4
    assert job.progress == 1.0
    full = [simulate(cfg.with_(policy=p)).to_dict() for p in ("fcfs", "lanes")]
    assert [r.to_dict() for r in job.results] == full


def test_jobs_can_be_cancelled():
    job = rate_sweep_job(small(n=400), [2.0, 6.0, 10.0])
    job.advance(300)
    job.cancel()
    assert job.done and job.advance(10_000)
    sw = sweep_from(job)
    assert sw.cancelled and len(sw.points) < 3


def test_a_job_records_bad_input_and_goes_on():
    job = Job([small(rate_per_s=-1), small(n=20)])
    results = job.run()
    assert results[0].errors and results[1].completed == 20
