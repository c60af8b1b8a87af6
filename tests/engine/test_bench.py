"""Benchmark client runs (sim.engine.bench): vLLM's and SGLang's samplers and arrivals, the client's
concurrency cap, and the summary under vLLM's labels and keys."""

from __future__ import annotations

import json
import math
import statistics

import pytest
from kvlab.sim.engine import EngineConfig, simulate
from kvlab.sim.engine.bench import (
    BenchSpec,
    arrivals_s,
    custom_lengths,
    length_range,
    read_lengths,
    validate_spec,
    workload,
)
from kvlab.sim.engine.bench_summary import _peaks, bench_metrics, result_json, summary_lines
from kvlab.sim.engine.cli import main as engine_main
from kvlab.sim.engine.config import Workload
from kvlab.sim.evaluate import evaluate
from kvlab.sim.scenario import Scenario

SCENARIO = Scenario(model="qwen3-0.6b", gpu="h100-sxm", engine="vllm")


def run(spec: BenchSpec):
    r = simulate(EngineConfig(scenario=SCENARIO, workload=workload(spec)))
    assert not r.errors, r.errors
    return r


@pytest.mark.parametrize(("tool", "length", "ratio", "expected"), [
    ("vllm", 1024, 0.0, (1024, 1024)), ("vllm", 1024, 0.5, (512, 1536)), ("vllm", 3, 0.5, (1, 5)), ("vllm", 1, 0.9, (1, 2)),
    ("sglang", 1024, 0.0, (1, 1024)), ("sglang", 1024, 0.5, (512, 1024)), ("sglang", 1024, 1.0, (1024, 1024)),
])
def test_length_ranges_follow_each_tools_sampler(tool, length, ratio, expected):
    # vllm/benchmarks/datasets/random.py: [floor(L(1-r)), ceil(L(1+r))]; sglang bench_serving: [int(L r), L]; never 0
    assert length_range(tool, length, ratio) == expected


def test_drawn_lengths_stay_in_range_and_the_prefix_is_shared():
    spec = BenchSpec(num_prompts=400, random_input_len=1000, random_output_len=100, random_range_ratio=0.3,
                     random_prefix_len=200, seed=3)
    rows = workload(spec).trace
    assert len(rows) == 400
    assert all(200 + 700 <= r.prompt_tokens <= 200 + 1300 and 70 <= r.output_tokens <= 130 for r in rows)
    assert {r.prefix_id for r in rows} == {"random-prefix"} and {r.prefix_tokens for r in rows} == {200}
    assert len({r.prompt_tokens for r in rows}) > 100  # drawn, not fixed
    fixed = workload(spec.with_(random_range_ratio=0.0, random_prefix_len=0)).trace
    assert {(r.prompt_tokens, r.output_tokens, r.prefix_id) for r in fixed} == {(1000, 100, None)}


def test_rate_inf_sends_everything_at_once():
    assert arrivals_s(BenchSpec(num_prompts=50), __import__("random").Random(0)) == [0.0] * 50


def test_vllm_rescales_arrivals_so_the_last_is_due_at_n_over_rate():
    import random
    spec = BenchSpec(num_prompts=500, request_rate=4.0)
    times = arrivals_s(spec, random.Random(1))
    assert times[-1] == pytest.approx(500 / 4.0, rel=1e-12)
    assert times == sorted(times) and times[0] > 0
    sglang = arrivals_s(spec.with_(bench_tool="sglang"), random.Random(1))
    assert sglang[-1] != pytest.approx(125.0, rel=1e-6)  # SGLang leaves the sum as drawn


def test_burstiness_below_one_clusters_arrivals():
    import random

    def cv(b: float) -> float:
        t = arrivals_s(BenchSpec(num_prompts=4000, request_rate=10.0, burstiness=b), random.Random(2))
        gaps = [b - a for a, b in zip([0.0] + t, t, strict=False)]
        return statistics.pstdev(gaps) / statistics.fmean(gaps)

    # gamma(shape k): coefficient of variation 1/sqrt(k)
    assert cv(1.0) == pytest.approx(1.0, abs=0.06)
    assert cv(0.25) == pytest.approx(2.0, abs=0.2)
    assert cv(4.0) == pytest.approx(0.5, abs=0.05)


def _in_flight(r) -> int:
    q = r.requests
    events = sorted([(a, 1) for a in q["arrival_s"]] + [(a + e, -1) for a, e in zip(q["arrival_s"], q["e2e_s"], strict=True)],
                    key=lambda x: (x[0], x[1]))
    peak = now = 0
    for _, d in events:
        now += d
        peak = max(peak, now)
    return peak


def test_max_concurrency_caps_requests_in_flight():
    spec = BenchSpec(num_prompts=120, random_input_len=256, random_output_len=32)
    assert _in_flight(run(spec.with_(max_concurrency=4))) == 4
    assert _in_flight(run(spec)) > 4


def test_a_held_request_is_sent_when_one_finishes_and_its_clock_starts_then():
    r = run(BenchSpec(num_prompts=30, random_input_len=128, random_output_len=16, max_concurrency=1))
    q = r.requests
    order = sorted(range(len(q["id"])), key=lambda i: q["arrival_s"][i])
    for a, b in zip(order, order[1:], strict=False):
        # one in flight: the next is sent as the previous one's last token arrives
        assert q["arrival_s"][b] == pytest.approx(q["arrival_s"][a] + q["e2e_s"][a], abs=1e-12)
    assert max(q["ttft_s"]) < 0.1  # no request's TTFT holds its wait at the client


def test_rate_inf_with_a_cap_is_a_closed_loop_of_that_many_clients():
    capped = run(BenchSpec(num_prompts=200, random_input_len=512, random_output_len=64, max_concurrency=8))
    closed = simulate(EngineConfig(scenario=SCENARIO, workload=Workload(
        arrival="closed", clients=8, num_requests=200, prompt_dist="fixed", prompt_tokens=512, output_dist="fixed",
        output_tokens=64)))
    assert capped.duration_s == pytest.approx(closed.duration_s, rel=1e-9)
    assert capped.ttft_s.mean == pytest.approx(closed.ttft_s.mean, rel=1e-9)


def test_metrics_are_computed_as_vllm_computes_them():
    spec = BenchSpec(num_prompts=80, random_input_len=300, random_output_len=3, random_range_ratio=0.9, request_rate=20.0)
    r = run(spec)
    m = bench_metrics(r)
    q = r.requests
    finish = [a + e for a, e in zip(q["arrival_s"], q["e2e_s"], strict=True)]
    assert m.duration_s == pytest.approx(max(finish))  # from the start of the run (t = 0), not the first arrival
    assert m.duration_s > max(finish) - min(q["arrival_s"])
    assert m.total_input == sum(q["prompt_tokens"]) and m.total_output == sum(q["output_tokens"])
    assert m.request_throughput == pytest.approx(80 / m.duration_s)
    tpots = [t for t, o in zip(q["tpot_s"], q["output_tokens"], strict=True) if o > 1]  # output 1 has no TPOT
    assert len(tpots) < 80
    assert m.tpot.mean_ms == pytest.approx(statistics.fmean(tpots) * 1e3)
    assert m.ttft.std_ms == pytest.approx(statistics.pstdev(q["ttft_s"]) * 1e3)  # np.std: population
    assert m.ttft.median_ms == pytest.approx(statistics.median(q["ttft_s"]) * 1e3)
    assert m.itl.mean_ms == pytest.approx(r.itl_s.mean * 1e3) and m.itl.p99_ms == pytest.approx(r.itl_s.p99 * 1e3)


def test_peaks_count_whole_seconds_as_vllm_counts_them():
    # A: sent at 0, tokens at 0.5, 1.0, 1.5, 2.0, 2.5 (TPOT 0.5 s); B: sent at 1.2, tokens at 1.3, 1.7, 2.1;
    # C: one token at 3.05. Seconds 0-3 hold 1, 4, 3, 1 tokens; A is in flight in seconds 0-2, B in 1-2, C in 3.
    assert _peaks([0.0, 1.2, 3.0], [0.5, 0.1, 0.05], [2.5, 0.9, 0.05], [5, 3, 1]) == (4.0, 2)
    m = bench_metrics(run(BenchSpec(num_prompts=60, random_input_len=200, random_output_len=300, max_concurrency=6)))
    assert m.duration_s > 3
    assert m.max_concurrent_requests >= 6  # six at a time, and a second also counts the ones that end or start in it
    # the busiest second holds at least the run's mean second, and no more than six streams at their fastest
    assert m.output_throughput * m.duration_s / math.ceil(m.duration_s + 1) <= m.max_output_tokens_per_s
    assert m.max_output_tokens_per_s <= 6 * 1000 / min(m.itl.median_ms, m.tpot.mean_ms) + 6


# vllm/benchmarks/serve.py prints these labels, in this order, each padded to 40 characters.
VLLM_LABELS = ["Successful requests:", "Failed requests:", "Maximum request concurrency:", "Request rate configured (RPS):",
               "Benchmark duration (s):", "Total input tokens:", "Total generated tokens:", "Request throughput (req/s):",
               "Output token throughput (tok/s):", "Peak output token throughput (tok/s):", "Peak concurrent requests:",
               "Total token throughput (tok/s):", "Mean TTFT (ms):", "Median TTFT (ms):",
               "P99 TTFT (ms):", "Mean TPOT (ms):", "Median TPOT (ms):", "P99 TPOT (ms):", "Mean ITL (ms):", "Median ITL (ms):",
               "P99 ITL (ms):"]
VLLM_KEYS = ["date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts", "request_rate", "burstiness",
             "max_concurrency", "duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
             "request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
             "max_output_tokens_per_s", "max_concurrent_requests"] + [
             f"{s}_{m}_ms" for m in ("ttft", "tpot", "itl", "e2el") for s in ("mean", "median", "std", "p99")]


def test_summary_block_has_vllms_labels_widths_and_rules():
    spec = BenchSpec(num_prompts=40, random_input_len=200, random_output_len=20, request_rate=5.0, max_concurrency=3)
    lines = summary_lines(bench_metrics(run(spec)), spec)
    assert lines[0] == "============ Serving Benchmark Result ============" and lines[-1] == "=" * 50
    assert "---------------Time to First Token----------------" in lines
    assert "-----Time per Output Token (excl. 1st token)------" in lines
    rows = [ln for ln in lines if not ln.startswith(("=", "-"))]
    assert [ln[:40].rstrip() for ln in rows] == VLLM_LABELS
    assert all(ln[40] == " " for ln in rows)
    assert rows[0].split()[-1] == "40" and float(rows[4].split()[-1]) > 0
    # without a cap or a rate, those two lines are left out, as vLLM leaves them out
    bare = summary_lines(bench_metrics(run(spec.with_(request_rate=None, max_concurrency=None))), spec.with_(
        request_rate=None, max_concurrency=None))
    assert not any(ln.startswith(("Maximum request concurrency", "Request rate configured")) for ln in bare)


def test_result_json_has_vllms_keys():
    spec = BenchSpec(num_prompts=20, random_input_len=100, random_output_len=10)
    d = result_json(bench_metrics(run(spec)), spec, model_id="qwen3-0.6b", date="20261204-000000", kvlab={"gpu": "h100-sxm"})
    assert set(VLLM_KEYS) <= set(d)
    assert d["request_rate"] == "inf" and d["completed"] == 20 and d["kvlab"] == {"gpu": "h100-sxm"}
    assert all(math.isfinite(d[k]) for k in VLLM_KEYS if k.endswith("_ms"))


# python/sglang/bench_serving.py (sgl-project/sglang at 0033168f) prints these labels, in this order.
SGLANG_LABELS = ["Backend:", "Traffic request rate:", "Max request concurrency:", "Successful requests:", "Benchmark duration (s):",
                 "Total input tokens:", "Total generated tokens:", "Total generated tokens (retokenized):",
                 "Request throughput (req/s):", "Input token throughput (tok/s):", "Output token throughput (tok/s):",
                 "Total token throughput (tok/s):", "Concurrency:", "Mean E2E Latency (ms):", "Median E2E Latency (ms):",
                 "Mean TTFT (ms):", "Median TTFT (ms):", "P99 TTFT (ms):", "Mean ITL (ms):", "Median ITL (ms):", "P95 ITL (ms):",
                 "P99 ITL (ms):", "Max ITL (ms):"]
# Its `result` dict, which it appends to a JSONL file, one run a line.
SGLANG_KEYS = ["backend", "dataset_name", "request_rate", "max_concurrency", "sharegpt_output_len", "random_input_len",
               "random_output_len", "random_range_ratio", "duration", "completed", "total_input_tokens", "total_output_tokens",
               "total_output_tokens_retokenized", "request_throughput", "input_throughput", "output_throughput",
               "mean_e2e_latency_ms", "median_e2e_latency_ms", "std_e2e_latency_ms", "p99_e2e_latency_ms", "mean_ttft_ms",
               "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "std_tpot_ms", "p99_tpot_ms",
               "mean_itl_ms", "median_itl_ms", "std_itl_ms", "p95_itl_ms", "p99_itl_ms", "concurrency", "accept_length"]


def test_sglang_block_has_its_labels_sections_and_figures():
    spec = BenchSpec(bench_tool="sglang", num_prompts=60, random_input_len=400, random_output_len=40, random_range_ratio=0.5,
                     request_rate=20.0)
    r = run(spec)
    m = bench_metrics(r)
    lines = summary_lines(m, spec)
    assert lines[0] == "============ Serving Benchmark Result ============" and lines[-1] == "=" * 50
    assert [ln for ln in lines if ln.startswith("-")] == [
        "----------------End-to-End Latency----------------", "---------------Time to First Token----------------",
        "---------------Inter-Token Latency----------------"]  # no TPOT section
    rows = {ln[:40].rstrip(): ln[41:].strip() for ln in lines if not ln.startswith(("=", "-"))}
    assert list(rows) == SGLANG_LABELS
    assert rows["Backend:"] == "kvlab" and rows["Traffic request rate:"] == "20.0" and rows["Max request concurrency:"] == "not set"
    q = r.requests
    # "Concurrency": summed latency over the duration; the input rate: prompt tokens over the duration
    assert float(rows["Concurrency:"]) == pytest.approx(sum(q["e2e_s"]) / m.duration_s, abs=0.006)
    assert float(rows["Input token throughput (tok/s):"]) == pytest.approx(sum(q["prompt_tokens"]) / m.duration_s, abs=0.006)
    # ITL's p95 is the engine's histogram quantile, between its p90 and p99; its max is the engine's
    assert m.itl.p95_ms == pytest.approx(r.itl_s.p95 * 1e3) and r.itl_s.p90 <= r.itl_s.p95 <= r.itl_s.p99
    assert m.itl.max_ms == pytest.approx(r.itl_s.max * 1e3)
    assert float(rows["Max ITL (ms):"]) == pytest.approx(m.itl.max_ms, abs=0.006)
    capped = summary_lines(m, spec.with_(request_rate=None, max_concurrency=8), accept_length=2.53)
    assert "Traffic request rate:                    inf       " in capped
    assert "Max request concurrency:                 8         " in capped
    labels = [ln[:40].rstrip() for ln in capped]
    after = capped[labels.index("Concurrency:") + 1]  # a speculative run's accept length follows the concurrency
    assert after.startswith("Accept length:") and after.split()[-1] == "2.53"


def test_sglang_result_line_has_its_keys_and_compare_reads_it_back(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    rc = engine_main(["--model", "qwen3-0.6b", "--gpu", "h100-sxm", "--bench-tool", "sglang", "--num-prompts", "30",
                      "--input-len", "300", "--output-len", "30", "--max-concurrency", "4", "--bench", "--save-result",
                      "--result-filename", str(out)])
    assert rc == 0
    assert "Max request concurrency:                 4" in capsys.readouterr().out
    text = out.read_text()
    assert text.endswith("\n") and text.count("\n") == 1  # one run, one line
    d = json.loads(text)
    assert list(d) == SGLANG_KEYS + ["kvlab"]
    assert d["request_rate"] == math.inf and d["accept_length"] is None and d["completed"] == 30
    assert d["concurrency"] == pytest.approx(d["mean_e2e_latency_ms"] / 1e3 * 30 / d["duration"])
    from kvlab.sim.engine.compare_cli import main as compare_main
    assert compare_main([str(out), "--gpu", "h100-sxm", "--model", "qwen3-0.6b"]) == 0
    assert "(sglang client)" in capsys.readouterr().out


def test_a_speculative_run_prints_sims_accept_length(capsys):
    rc = engine_main(["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--spec-method", "eagle", "--bench-tool", "sglang",
                      "--num-prompts", "20", "--input-len", "200", "--output-len", "20", "--bench"])
    assert rc == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("Accept length:"))
    expected = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm", engine="sglang", spec_method="eagle")).spec_tokens_per_step
    assert float(line.split()[-1]) == pytest.approx(expected, abs=0.005)


def test_invalid_specs_name_their_field():
    fields = {i.field for i in validate_spec(BenchSpec(num_prompts=0, random_range_ratio=1.5, bench_tool="x",
                                                        request_rate=-1.0, burstiness=0.0))}
    assert fields == {"num_prompts", "random_range_ratio", "bench_tool", "request_rate", "burstiness"}
    assert validate_spec(BenchSpec(bench_tool="sglang", random_range_ratio=1.0)) == []  # SGLang's r = 1 is fixed lengths
    assert {i.field for i in validate_spec(BenchSpec(num_prompts=3, input_lens=(5, 5), output_lens=(1, 0, 2)))} == {
        "input_lens", "output_lens"}


def test_engine_cli_prints_the_block_and_saves_the_keys(tmp_path, capsys):
    out = tmp_path / "r.json"
    rc = engine_main(["--model", "qwen3-0.6b", "--gpu", "h100-sxm", "--num-prompts", "30", "--input-len", "300",
                      "--output-len", "30", "--request-rate", "inf", "--max-concurrency", "4", "--bench", "--save-result",
                      "--result-filename", str(out)])
    text = capsys.readouterr().out
    assert rc == 0
    assert "============ Serving Benchmark Result ============" in text and "Maximum request concurrency:             4" in text
    assert "profile h100-published" in text  # the GPU's published profile, not the textbook one
    d = json.loads(out.read_text())
    assert set(VLLM_KEYS) <= set(d) and d["completed"] == 30 and d["max_concurrency"] == 4
    assert d["total_input_tokens"] == 30 * 300


@pytest.mark.parametrize(("argv", "expected"), [
    (["--num-prompts", "10", "--rate-per-s", "3"], "--rate-per-s: describes the preset's workload"),
    (["--request-rate", "fast"], "--request-rate: must be a number between 0.001 and 100,000, got 'fast' or inf"),
    (["--num-prompts", "0"], "--num-prompts: must be between 1 and 400,000, got 0"),
    (["--bench-tool", "genai"], "--bench-tool: must be one of vllm, sglang, got 'genai'"),
    (["--random-range-ratio", "1"], "--random-range-ratio: must be below 1 for vllm bench serve"),
    (["--bench", "--sweep", "1,2"], "--sweep: not with the benchmark client's options"),
    (["--bench", "--save-result", "--result-filename", "/nonexistent-dir/x.json", "--num-prompts", "2"],
     "--result-filename: cannot write"),
    (["--dataset-name", "sonnet", "--sonnet-prefix-len", "600"], "--sonnet-prefix-len: must be below sonnet_input_len (550), got 600"),
    (["--dataset-name", "custom"], "--dataset-path: the custom dataset needs a JSONL file of lengths"),
    (["--dataset-path", "/nonexistent/lengths.jsonl"], "--dataset-path: only with --dataset-name custom"),
    (["--dataset-name", "custom", "--dataset-path", "/nonexistent/lengths.jsonl"], "--dataset-path: cannot read"),
])
def test_engine_cli_refuses_bad_client_options(argv, expected, capsys):
    assert engine_main(["--model", "qwen3-0.6b", "--input-len", "64", "--output-len", "4", *argv]) == 2
    assert expected in capsys.readouterr().err


def test_drawn_lengths_scale_to_a_files_totals():
    spec = BenchSpec(num_prompts=10, random_input_len=1000, random_output_len=1000, bench_tool="sglang",
                     total_input_tokens=4_321, total_output_tokens=2_000)
    rows = workload(spec).trace
    # ten draws of SGLang's [0, L] would average near L/2; the file's totals win, within rounding
    assert abs(sum(r.prompt_tokens for r in rows) - 4_321) <= 5 and abs(sum(r.output_tokens for r in rows) - 2_000) <= 5
    unscaled = workload(spec.with_(total_input_tokens=None, total_output_tokens=None)).trace
    assert [r.prompt_tokens for r in rows] != [r.prompt_tokens for r in unscaled]
    assert {i.field for i in validate_spec(spec.with_(total_input_tokens=5, total_output_tokens=True))} == {
        "total_input_tokens", "total_output_tokens"}


def test_sharegpt_lengths_follow_the_shipped_distribution():
    import random

    from kvlab.sim.engine.bench import sharegpt, sharegpt_lengths
    prompts, outputs = sharegpt_lengths(20_000, random.Random(0))
    rule = sharegpt()["sampler"]
    assert min(prompts) >= rule["min_prompt_tokens"] and max(prompts) <= rule["max_prompt_tokens"]
    assert min(outputs) >= rule["min_output_tokens"]
    assert max(p + o for p, o in zip(prompts, outputs, strict=True)) <= rule["max_total_tokens"]
    # the data file's figures: prompt mean 230 from its quantile table (median 117), replies kept by the sampler average 198.3
    assert statistics.fmean(prompts) == pytest.approx(230, rel=0.03) and statistics.median(prompts) == pytest.approx(117, rel=0.05)
    assert statistics.fmean(outputs) == pytest.approx(198.3, rel=0.03)
    fixed = sharegpt_lengths(500, random.Random(1), output_len=256)[1]
    assert set(fixed) == {256}


def test_a_gpu_without_a_profile_gets_a_warning(capsys):
    assert engine_main(["--model", "qwen3-0.6b", "--gpu", "b300", "--num-prompts", "5", "--bench"]) == 0
    assert "note: no measured or published efficiency profile for b300" in capsys.readouterr().out


def test_sonnet_prompts_share_their_opening_and_keep_vllms_lengths():
    rows = workload(BenchSpec(dataset_name="sonnet", num_prompts=50)).trace
    # vllm/benchmarks/datasets/sonnet.py's defaults: 550 in (at most), 200 shared, 150 out
    assert {(r.prompt_tokens, r.output_tokens, r.prefix_tokens) for r in rows} == {(550, 150, 200)}
    assert len({r.prefix_id for r in rows}) == 1
    cached = run(BenchSpec(dataset_name="sonnet", num_prompts=50, sonnet_prefix_len=500))
    plain = run(BenchSpec(dataset_name="sonnet", num_prompts=50, sonnet_prefix_len=0))
    assert cached.prefix_hit_rate > 0.5 and plain.prefix_hit_rate == 0  # the shared opening is prefilled once
    assert cached.ttft_s.mean < plain.ttft_s.mean


LENGTHS = """{"prompt_tokens": 1000, "output_tokens": 100}

{"prompt_tokens": 3000}
{"prompt_tokens": 200, "output_tokens": 50}
"""


def test_a_custom_dataset_is_shuffled_and_made_up_to_num_prompts():
    rows, problems = read_lengths(LENGTHS)
    assert problems == [] and rows == [(1000, 100), (3000, None), (200, 50)]
    spec = custom_lengths(BenchSpec(dataset_name="custom", num_prompts=7, custom_output_len=64, seed=1), rows)
    pairs = list(zip(spec.input_lens, spec.output_lens, strict=True))
    assert sorted(set(pairs)) == [(200, 50), (1000, 100), (3000, 64)]  # every row, a missing output at custom_output_len
    assert len(pairs) == 7 and validate_spec(spec) == []
    cut = custom_lengths(BenchSpec(dataset_name="custom", num_prompts=2), rows)
    assert len(cut.input_lens) == 2 and len(set(cut.input_lens)) == 2  # two different rows, not one drawn twice


@pytest.mark.parametrize(("text", "expected"), [
    ('{"prompt_tokens": 0}', "line 1: prompt_tokens must be an integer of 1 to 2,097,152 tokens, got 0"),
    ('{"output_tokens": 5}', "line 1: prompt_tokens must be an integer of 1 to 2,097,152 tokens, got None"),
    ('{"prompt_tokens": 5, "output_tokens": "9"}', "line 1: output_tokens must be an integer"),
    ('[1, 2]', "line 1: not a JSON object"),
    ('\n<script>', "line 2: not a JSON object"),
    ('', "no rows"),
])
def test_a_bad_custom_dataset_names_its_line_and_field(text, expected):
    rows, problems = read_lengths(text)
    assert any(expected in p for p in problems), problems


def test_engine_cli_runs_a_custom_dataset(tmp_path, capsys):
    path = tmp_path / "lengths.jsonl"
    path.write_text(LENGTHS)
    assert engine_main(["--model", "qwen3-0.6b", "--dataset-name", "custom", "--dataset-path", str(path), "--num-prompts", "9",
                        "--bench"]) == 0
    out = capsys.readouterr().out
    assert "custom dataset" in out and "Successful requests:                     9" in out
