"""sim.engine.steps: every step of a small run, for lesson C3's step timeline."""

from __future__ import annotations

import pytest
from kvlab.sim.engine import simulate
from kvlab.sim.engine.config import TraceRequest
from kvlab.sim.engine.run import prepare
from kvlab.sim.engine.steps import MAX_REQUESTS, step_timeline

from .conftest import small

# Eight answers streaming, then one long prompt among them.
TRACE = tuple(TraceRequest(0.01 * i, 200, 300) for i in range(8)) + (TraceRequest(0.5, 8000, 5),)


@pytest.fixture(scope="module", params=["fcfs", "chunked"])
def timeline(request):
    return step_timeline(small(arrival="trace", trace=TRACE, policy=request.param))


def test_steps_follow_each_other_and_add_up_to_the_run(timeline):
    steps, r = timeline.steps, timeline.result
    assert r.ok and r.completed == len(TRACE)
    assert all(a.end_s <= b.start_s + 1e-12 and a.start_s < a.end_s for a, b in zip(steps, steps[1:], strict=False))
    assert sum(s.prompt_tokens for s in steps) == r.prompt_tokens_computed
    # Every step is one step: the decode tokens are the decodes each step carried.
    assert sum(s.decode_seqs for s in steps) == r.output_tokens_generated - len(TRACE)


def test_the_longest_decode_gap_is_the_runs_worst_itl(timeline):
    start, end = timeline.longest_decode_gap()
    assert end - start == pytest.approx(timeline.result.itl_s.max, rel=0.01)


def test_whole_prefill_stalls_every_decode_and_chunked_carries_them():
    whole = step_timeline(small(arrival="trace", trace=TRACE, policy="fcfs"))
    chunked = step_timeline(small(arrival="trace", trace=TRACE, policy="chunked"))
    long_whole = [s for s in whole.steps if s.prompt_tokens == 8000]
    assert len(long_whole) == 1 and long_whole[0].decode_seqs == 0
    assert all(s.decode_seqs for s in chunked.steps if s.start_s > 0.5 and s.prompt_tokens)
    assert chunked.longest_decode_gap()[1] - chunked.longest_decode_gap()[0] < long_whole[0].end_s - long_whole[0].start_s


def test_a_plain_run_keeps_no_steps_and_gives_the_same_figures():
    cfg = small(arrival="trace", trace=TRACE, policy="chunked")
    sim = prepare(cfg)
    assert sim.metrics.step_log is None
    plain, logged = simulate(cfg), step_timeline(cfg).result
    assert logged.ttft_s.p99 == pytest.approx(plain.ttft_s.p99, rel=1e-9)


def test_too_many_requests_are_refused_by_name():
    t = step_timeline(small(n=MAX_REQUESTS + 1))
    assert t.steps == () and t.result.errors[0]["field"] == "num_requests"
