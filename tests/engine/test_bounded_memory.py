"""Engine memory grows with the work, never with the simulated span (issue 16's worst inputs)."""

from __future__ import annotations

import tracemalloc

from kvlab.sim.engine import EngineConfig, parse_trace, simulate
from kvlab.sim.engine import metrics as M

BUDGET_BYTES = 256 * 2**20  # the engine's stated budget per run (docs/engine.md)


def _peak(cfg):
    tracemalloc.start()
    try:
        r = simulate(cfg)
        return r, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_two_rows_spanning_1e8_seconds_cost_almost_nothing():
    rows = parse_trace("arrival_s,prompt_tokens,output_tokens\n0,100,10\n100000000,100,10\n")
    r, peak = _peak(EngineConfig().with_(arrival="trace", trace=rows))
    assert r.ok and r.completed == 2
    assert peak < 8 * 2**20, peak  # was 4.7 GB: a snapshot per 10 s log interval
    # vLLM's log: the busy line and one idle line; the 10^7 idle repeats are dropped as vLLM drops them.
    assert len(r.vllm_log) == 2 and "Running: 0 reqs" in r.vllm_log[1]
    assert r.e2e_s.max < 10


def test_closed_loop_with_an_hour_of_think_time_is_bounded_by_requests():
    cfg = EngineConfig().with_(arrival="closed", clients=1, think_time_s=3600, num_requests=300)
    r, peak = _peak(cfg)
    assert r.ok and r.completed == 300
    assert r.duration_s > 299 * 3600
    assert peak < 16 * 2**20, peak  # was about 175 MB per 1,000 requests


def test_log_streams_keep_their_first_and_last_entries_exactly():
    ht = M.HeadTail(keep=3)
    order = [5, 1, 9, 2, 8, 3, 7, 4, 6, 0]
    for x in order:
        ht.append(x, t_s=float(x))
    assert ht.items() == [0, 1, 2, 7, 8, 9] and ht.count == 10 and ht.dropped == 4


def test_capped_logs_do_not_depend_on_how_much_is_kept(monkeypatch):
    cfg = EngineConfig().with_(num_requests=400, rate_per_s=4, replicas=3, log_interval_s=0.1)
    full = simulate(cfg)
    monkeypatch.setattr(M, "LOG_KEEP", 400)
    monkeypatch.setattr("kvlab.sim.engine.logs.MAX_LINES", 800)
    small = simulate(cfg)
    monkeypatch.setattr(M, "LOG_KEEP", 10**9)
    big = simulate(cfg)
    assert small.vllm_log == big.vllm_log and small.sglang_log == big.sglang_log
    assert len(small.vllm_log) == 801 and "lines omitted" in small.vllm_log[400]
    assert full.ttft_s == small.ttft_s


def test_what_cannot_fit_the_budget_is_refused_naming_the_limit():
    from kvlab.sim.engine import run
    assert run.MAX_REQUESTS_IN_BUDGET * run.BYTES_PER_REQUEST <= BUDGET_BYTES == run.MEMORY_BUDGET_BYTES
    r = simulate(EngineConfig().with_(num_requests=2_000_000))
    assert r.errors[0]["field"] == "num_requests" and "memory budget of 256 MB" in r.errors[0]["message"]
    assert "at most 400,000 requests" in r.errors[0]["message"]


def test_bytes_per_request_is_what_a_run_takes():
    cfg = EngineConfig().with_(num_requests=5000, rate_per_s=50, prompt_dist="fixed", prompt_tokens=200, output_dist="fixed",
                               output_tokens=20)
    r, peak = _peak(cfg)
    assert r.ok and peak / 5000 < M_BYTES_PER_REQUEST_SLACK * run_bytes()


M_BYTES_PER_REQUEST_SLACK = 1.5


def run_bytes() -> int:
    from kvlab.sim.engine import run
    return run.BYTES_PER_REQUEST


def test_a_tiny_fixed_interval_is_coarsened_before_the_first_event():
    """sample_interval_s=1e-300 (in range; the fuzz found it): the series had fewer than two points
    when the first event came, could not be coarsened then, and was sampled 1e-300 s apart: the
    run did not finish in 40 s. Now the series coarsens between samples and stays bounded."""
    r = simulate(EngineConfig().with_(replicas=4, sample_interval_s=1e-300, num_requests=6))
    assert r.errors == [] and r.completed == 6
    assert 2 <= len(r.series["t_s"]) <= M.JUMP_POINTS * 100_000
