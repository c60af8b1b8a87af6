"""Workload generation and trace import."""

from __future__ import annotations

import math
import statistics

import pytest
from kvlab.sim.engine import Workload, format_trace, parse_trace, simulate
from kvlab.sim.engine.simulation import make_rng
from kvlab.sim.engine.workload import generate
from kvlab.sim.errors import InputError

from .conftest import small


def _gen(**kw):
    return generate(Workload(num_requests=20_000, **kw), make_rng(5))


def test_poisson_arrivals_have_the_rate_and_exponential_gaps():
    reqs = _gen(arrival="poisson", rate_per_s=4.0)
    gaps = [b.arrival_s - a.arrival_s for a, b in zip(reqs, reqs[1:], strict=False)]
    assert statistics.fmean(gaps) == pytest.approx(0.25, rel=0.03)
    assert statistics.stdev(gaps) / statistics.fmean(gaps) == pytest.approx(1.0, rel=0.05)


def test_gamma_arrivals_are_burstier_at_the_same_rate():
    reqs = _gen(arrival="gamma", rate_per_s=4.0, burst_cv=3.0)
    gaps = [b.arrival_s - a.arrival_s for a, b in zip(reqs, reqs[1:], strict=False)]
    assert statistics.fmean(gaps) == pytest.approx(0.25, rel=0.06)
    assert statistics.stdev(gaps) / statistics.fmean(gaps) == pytest.approx(3.0, rel=0.1)


def test_length_distributions():
    fixed = _gen(prompt_dist="fixed", prompt_tokens=777, output_dist="fixed", output_tokens=33)
    assert {q.prompt_tokens for q in fixed} == {777} and {q.output_tokens for q in fixed} == {33}
    uni = _gen(prompt_dist="uniform", prompt_min_tokens=100, prompt_max_tokens=300)
    ps = [q.prompt_tokens for q in uni]
    assert min(ps) == 100 and max(ps) == 300 and statistics.fmean(ps) == pytest.approx(200, rel=0.02)
    logn = _gen(prompt_dist="lognormal", prompt_tokens=2000, prompt_sigma=1.0, prompt_min_tokens=1, prompt_max_tokens=2**21)
    ps = sorted(q.prompt_tokens for q in logn)
    assert ps[len(ps) // 2] == pytest.approx(2000, rel=0.04)
    # P(X > median x e) = P(Z > 1) = 15.9% for sigma 1
    assert sum(p > 2000 * math.e for p in ps) / len(ps) == pytest.approx(0.159, abs=0.012)


def test_shared_prefix_fraction_and_groups():
    reqs = _gen(prefix_tokens=500, prefix_fraction=0.3, prefix_groups=4, prompt_min_tokens=600)
    shared = [q for q in reqs if q.prefix_id is not None]
    assert len(shared) / len(reqs) == pytest.approx(0.3, abs=0.015)
    assert {q.prefix_id for q in shared} == {f"system-{g}" for g in range(4)}
    assert all(q.prefix_tokens == 500 < q.prompt_tokens for q in shared)


def test_closed_loop_keeps_clients_in_flight():
    r = simulate(small(n=200, arrival="closed", clients=10, think_time_s=0.5))
    assert r.completed == 200
    assert max(r.series["in_system"]) <= 10
    # each client waits think_time after its answer: arrivals after the first ten come later
    arrivals = sorted(r.requests["arrival_s"])
    assert arrivals[:10] == [0.0] * 10 and arrivals[10] >= 0.5


def test_same_seed_same_workload():
    w = Workload(num_requests=100, seed=9)
    assert generate(w, make_rng(9)) == generate(w, make_rng(9))
    assert generate(w, make_rng(9)) != generate(w, make_rng(10))


# ------------------------------------------------------------------------------- traces
CSV = """arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens
0.0,1200,40,sys,512
0.5,300,10,,
0.5,2000,80,sys,512
"""


def test_csv_trace_round_trip_and_run():
    rows = parse_trace(CSV)
    assert [(r.arrival_s, r.prompt_tokens, r.output_tokens, r.prefix_id, r.prefix_tokens) for r in rows] == [
        (0.0, 1200, 40, "sys", 512), (0.5, 300, 10, None, 0), (0.5, 2000, 80, "sys", 512)]
    assert parse_trace(format_trace(rows)) == rows
    r = simulate(small(arrival="trace", trace=rows))
    assert r.completed == 3
    assert r.requests["hit_tokens"][2] == 512  # the third request reuses the first one's prefix blocks


def test_jsonl_trace_with_aliases():
    text = '{"timestamp": 0.1, "input_tokens": 50, "max_tokens": 5}\n\n{"timestamp": 0.2, "input_tokens": 60, "max_tokens": 6}\n'
    rows = parse_trace(text)
    assert [(r.arrival_s, r.prompt_tokens, r.output_tokens) for r in rows] == [(0.1, 50, 5), (0.2, 60, 6)]


@pytest.mark.parametrize("text,needle", [
    ("", "is empty"),
    ("arrival_s,prompt_tokens\n0,5\n", "missing column(s) output_tokens"),
    ("arrival_s,prompt_tokens,output_tokens\n", "no rows"),
    ("arrival_s,prompt_tokens,output_tokens\n0,abc,5\n", "row 2: prompt_tokens must be an integer between 1 and"),
    ("arrival_s,prompt_tokens,output_tokens\n0,5,0\n", "row 2: output_tokens must be between 1 and 1,048,576, got 0"),
    ("arrival_s,prompt_tokens,output_tokens\n-1,5,5\n", "row 2: arrival_s must be a number of seconds >= 0"),
    ("arrival_s,prompt_tokens,output_tokens\n2,5,5\n1,5,5\n", "row 3: arrival_s 1 is earlier than the previous row's 2"),
    ("arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens\n0,5,5,a,9\n", "prefix_tokens must be shorter than prompt_tokens"),
    ("arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens\n0,50,5,,9\n", "prefix_tokens given without a prefix_id"),
    ('{"arrival_s": 0, "prompt_tokens": 5, "output_tokens": 3}\n{"arrival_s": 1,\n', "line 2: not valid JSON"),
    ('{"arrival_s": 0, "prompt_tokens": 5}\n', "is missing column(s) output_tokens"),
    ("arrival_s,prompt_tokens,output_tokens\n0,2.5,5\n", "row 2: prompt_tokens must be an integer"),
])
def test_malformed_traces_name_the_row_and_the_problem(text, needle):
    with pytest.raises(InputError) as e:
        parse_trace(text)
    assert all(i.field == "trace" for i in e.value.issues)
    assert needle in str(e.value)


def test_many_bad_rows_are_listed_up_to_ten():
    text = "arrival_s,prompt_tokens,output_tokens\n" + "0,x,1\n" * 50
    with pytest.raises(InputError) as e:
        parse_trace(text)
    assert len(e.value.issues) == 11 and "further rows not checked" in e.value.issues[-1].message


def test_a_trace_request_longer_than_the_pool_is_an_error_not_a_hang():
    rows = parse_trace("arrival_s,prompt_tokens,output_tokens\n0,200000,10\n")
    r = simulate(small(arrival="trace", trace=rows))
    assert r.errors and r.errors[0]["field"] == "trace"
    assert "needs" in r.errors[0]["message"] and "the pool has" in r.errors[0]["message"]
