"""What a run reports: distributions, goodput, time series, engine log lines, Prometheus text."""

from __future__ import annotations

import json
import re

import pytest
from kvlab.sim.engine import simulate
from kvlab.sim.engine.histogram import LogHistogram
from kvlab.sim.engine.result import EngineResult, percentiles

from .conftest import ROOMY, small

VLLM_LINE = re.compile(
    r"^INFO \[t=\s*[\d.]+s\] Engine (\d{3}): Avg prompt throughput: ([\d.]+) tokens/s, Avg generation throughput: ([\d.]+) tokens/s, "
    r"Running: (\d+) reqs, Waiting: (\d+) reqs, (?:Preemptions: (\d+), )?GPU KV cache usage: ([\d.]+)%, "
    r"Prefix cache hit rate: ([\d.]+)%$")
SGLANG_DECODE = re.compile(
    r"^\[t=\s*[\d.]+s\] \[engine \d+\] Decode batch\. #running-req: (\d+), #token: (\d+), token usage: ([\d.]+), "
    r"gen throughput \(token/s\): ([\d.]+), #queue-req: (\d+), $")
SGLANG_PREFILL = re.compile(
    r"^\[t=\s*[\d.]+s\] \[engine \d+\] Prefill batch\. #new-seq: (\d+), #new-token: (\d+), #cached-token: (\d+), "
    r"token usage: ([\d.]+), #running-req: (\d+), #queue-req: (\d+), $")


@pytest.fixture(scope="module")
def preempting():
    return simulate(small(n=400, rate=14.0, log_interval_s=2.0))


def test_percentiles_interpolate_like_numpy():
    p = percentiles([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    assert (p.p50, p.p90, p.max, p.mean) == (5.5, 9.1, 10, 5.5)
    assert p.p99 == pytest.approx(9.91)


def test_log_histogram_quantiles_within_one_percent():
    h = LogHistogram()
    values = [0.001 * 1.003**i for i in range(3000)]
    for v in values:
        h.add(v)
    values.sort()
    for q in (0.5, 0.9, 0.99):
        assert h.quantile(q) == pytest.approx(values[int(q * (len(values) - 1))], rel=0.01)
    line = LogHistogram()
    line.add_linear(0.010, 0.020, 1001, 3)  # 1001 evenly spaced values, weight 3 each
    assert line.count == 3003 and line.quantile(0.5) == pytest.approx(0.015, rel=0.01)
    assert line.cumulative(0.0125) == pytest.approx(0.25 * 3003, rel=0.02)
    assert line.mean == pytest.approx(0.015)


def test_vllm_log_lines_and_the_preemptions_field(preempting):
    r = preempting
    assert r.preemptions > 0
    lines = [x for x in r.vllm_log if x.startswith("INFO")]
    assert len(lines) >= 10
    seen_preemption = False
    for line in lines:
        m = VLLM_LINE.match(line)
        assert m, line
        if m.group(6) is not None:
            seen_preemption = True
            assert int(m.group(6)) > 0
        else:
            assert not seen_preemption, "the field stays once preemptions happened"
        assert 0 <= float(m.group(7)) <= 100
    assert seen_preemption
    first = next(i for i, x in enumerate(r.vllm_log) if "preempted by PreemptionMode.RECOMPUTE" in x)
    assert "total_num_cumulative_preemption=1" in r.vllm_log[first]
    no_pre = simulate(small(n=100, rate=2.0, scenario=ROOMY))
    assert no_pre.preemptions == 0 and all("Preemptions" not in x for x in no_pre.vllm_log)


def test_vllm_log_throughput_adds_up_to_the_tokens_generated(preempting):
    r = preempting
    width = r.config["log_interval_s"]
    lines = [VLLM_LINE.match(x) for x in r.vllm_log if x.startswith("INFO")]
    logged = sum(float(m.group(3)) * width for m in lines)
    # lines cover whole intervals up to the end of the run; the tail after the last tick is not logged
    assert logged == pytest.approx(r.output_tokens_generated, rel=0.05)


def test_sglang_lines(preempting):
    decode = [SGLANG_DECODE.match(x) for x in preempting.sglang_log if "Decode batch" in x]
    prefill = [SGLANG_PREFILL.match(x) for x in preempting.sglang_log if "Prefill batch" in x]
    assert decode and all(decode) and prefill and all(prefill)
    assert max(float(m.group(3)) for m in decode) > 0.9  # the tight pool fills


def _parse_prometheus(text: str) -> dict:
    samples = {}
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        name, value = line.rsplit(" ", 1)
        samples[name] = float(value)
    return samples


def test_prometheus_exposition_under_vllm_names(preempting):
    r = preempting
    text = r.prometheus
    for metric, kind in [("vllm:num_requests_running", "gauge"), ("vllm:num_requests_waiting", "gauge"),
                         ("vllm:kv_cache_usage_perc", "gauge"), ("vllm:num_preemptions", "counter"),
                         ("vllm:prompt_tokens", "counter"), ("vllm:generation_tokens", "counter"),
                         ("vllm:request_success", "counter"), ("vllm:prefix_cache_queries", "counter"),
                         ("vllm:prefix_cache_hits", "counter"), ("vllm:time_to_first_token_seconds", "histogram"),
                         ("vllm:inter_token_latency_seconds", "histogram"), ("vllm:e2e_request_latency_seconds", "histogram")]:
        assert f"# TYPE {metric} {kind}" in text
    s = _parse_prometheus(text)
    lab = '{engine="0",model_name="Qwen3-8B"}'
    assert s[f"vllm:num_preemptions_total{lab}"] == r.preemptions
    assert s[f"vllm:generation_tokens_total{lab}"] == r.output_tokens_generated
    assert s[f"vllm:prompt_tokens_total{lab}"] == r.prompt_tokens_computed
    assert s['vllm:request_success_total{engine="0",model_name="Qwen3-8B",finished_reason="length"}'] == r.completed
    assert s[f"vllm:e2e_request_latency_seconds_count{lab}"] == r.completed
    assert s[f"vllm:time_to_first_token_seconds_sum{lab}"] == pytest.approx(sum(r.requests["ttft_s"]))
    assert s[f"vllm:inter_token_latency_seconds_count{lab}"] == r.output_tokens_generated - r.completed
    for hist in ("time_to_first_token_seconds", "inter_token_latency_seconds", "e2e_request_latency_seconds"):
        buckets = [(k, v) for k, v in s.items() if k.startswith(f"vllm:{hist}_bucket")]
        counts = [v for _, v in buckets]
        assert counts == sorted(counts) and 'le="+Inf"' in buckets[-1][0]


def test_itl_counts_every_gap_between_tokens(preempting):
    """A request with n output tokens has n - 1 gaps."""
    r = preempting
    assert r.itl_s.count == r.output_tokens_generated - r.completed
    assert r.itl_s.p50 <= r.itl_s.p90 <= r.itl_s.p99 <= r.itl_s.max


def test_goodput_counts_requests_meeting_both_targets():
    r = simulate(small(n=200, rate=6.0, scenario=ROOMY, ttft_target_s=0.3, itl_target_s=0.03))
    met = sum(1 for t, p in zip(r.requests["ttft_s"], r.requests["tpot_s"], strict=True) if t <= 0.3 and p <= 0.03)
    assert r.goodput_fraction == pytest.approx(met / r.completed)
    assert r.goodput_per_s == pytest.approx(met / r.duration_s)
    assert 0 < r.goodput_fraction < 1


def test_time_series_are_aligned_and_bounded():
    r = simulate(small(n=3000, rate=20.0, scenario=ROOMY))
    s = r.series
    n = len(s["t_s"])
    assert 100 <= n <= 800  # about 400 points whatever the run's length
    for k in ("running", "waiting", "kv_usage", "in_system", "preemptions", "prefix_hit_rate",
              "prompt_tokens_per_s", "generation_tokens_per_s"):
        assert len(s[k]) == n
    assert all(b > a for a, b in zip(s["t_s"], s["t_s"][1:], strict=False))
    total = sum(s["generation_tokens_per_s"]) * s["interval_s"]
    assert total == pytest.approx(r.output_tokens_generated, rel=1e-6)


def test_a_result_survives_json_and_back(preempting):
    """The static site ships the serving lab's opening run as JSON (app/viewlayer/lab_page.py): read
    back, it is the same result, every field and every distribution."""
    quiet = simulate(small(n=40, rate=2.0, scenario=ROOMY))
    for result in (preempting, quiet):
        back = EngineResult.from_dict(json.loads(json.dumps(result.to_dict())))
        assert back == result and back.ttft_s == result.ttft_s and back.to_dict() == result.to_dict()
