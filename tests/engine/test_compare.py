"""`kvlab compare`: result files of vllm bench serve and SGLang's bench_serving, read as untrusted
input and replayed in the engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kvlab.sim.engine.compare import METRICS, ResultFileProblem, error, largest_gap, read_runs
from kvlab.sim.engine.compare_cli import main

REAL = Path(__file__).parent / "data" / "vllm_append_result_l40s.jsonl"  # see data/README.md

VLLM_RUN = {"date": "20261201-101010", "backend": "vllm", "model_id": "Qwen/Qwen3-8B", "tokenizer_id": "Qwen/Qwen3-8B",
            "num_prompts": 64, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 8, "duration": 9.5,
            "completed": 64, "total_input_tokens": 64 * 512, "total_output_tokens": 64 * 64, "request_throughput": 6.7,
            "output_throughput": 431.0, "mean_ttft_ms": 60.0, "median_ttft_ms": 55.0, "p99_ttft_ms": 140.0,
            "mean_tpot_ms": 9.0, "median_tpot_ms": 9.0, "p99_tpot_ms": 10.5, "mean_itl_ms": 9.0, "median_itl_ms": 8.8,
            "p99_itl_ms": 20.0}
SGLANG_RUN = {"backend": "sglang", "dataset_name": "random", "request_rate": 4.0, "max_concurrency": None,
              "random_input_len": 1024, "random_output_len": 128, "random_range_ratio": 0.5, "duration": 30.0,
              "completed": 100, "total_input_tokens": 77000, "total_output_tokens": 9600, "total_output_tokens_retokenized": 9590,
              "request_throughput": 3.3, "input_throughput": 2566.0, "output_throughput": 320.0, "mean_e2e_latency_ms": 900.0,
              "median_ttft_ms": 50.0, "mean_ttft_ms": 55.0, "p99_ttft_ms": 120.0, "mean_tpot_ms": 7.0, "median_itl_ms": 7.0}


def test_reads_a_real_append_result_file():
    runs = read_runs(REAL.read_bytes())
    assert [r.spec.num_prompts for r in runs] == [300, 900, 900]
    assert [r.spec.request_rate for r in runs] == [10.0, 30.0, None]
    assert {r.bench_tool for r in runs} == {"vllm"} and {r.model_id for r in runs} == {"meta-llama/Llama-3.2-3B-Instruct"}
    # no per-request lengths in the file: the means, 299,700 / 300 in and 80,945 / 300 out
    assert (runs[0].spec.random_input_len, runs[0].spec.random_output_len) == (999, 270)
    assert runs[0].measured["p99_itl_ms"] == pytest.approx(34.48662216016601)
    assert len(runs[0].measured) == len(METRICS)


def test_compare_replays_each_run_of_the_real_file(capsys):
    assert main([str(REAL), "--gpu", "l40s", "--replicas", "4", "--model", "qwen3-4b"]) == 0
    out = capsys.readouterr().out
    assert out.count("run ") == 3 and "run 3 of 3: 900 requests at rate inf" in out
    assert "on 4 x NVIDIA L40S" in out and "profile l40s-published" in out
    assert out.count("Benchmark duration (s)") == 3 and out.count("largest gap:") == 3


def test_compare_json_gives_measured_predicted_and_signed_errors(tmp_path, capsys):
    path = tmp_path / "vllm.json"
    path.write_text(json.dumps(VLLM_RUN))
    assert main([str(path), "--gpu", "h100-sxm", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["model"] == "qwen3-8b" and d["bench_tool"] == "vllm"  # model_id matched to the catalog
    assert set(d["measured"]) == set(d["predicted"]) == set(d["error"]) == {k for k, _ in METRICS}
    for k, v in d["measured"].items():
        assert d["error"][k] == pytest.approx((d["predicted"][k] - v) / v)


def test_detailed_lengths_are_replayed_request_by_request():
    run = dict(VLLM_RUN, num_prompts=4, completed=3, input_lens=[100, 200, 300, 400], output_lens=[10, 0, 30, 40])
    (r,) = read_runs(json.dumps(run).encode())
    assert r.spec.input_lens == (100, 300, 400) and r.spec.output_lens == (10, 30, 40)  # the failed one (0 tokens) dropped
    assert r.lengths == "each request's lengths from the file"


def test_sglang_jsonl_uses_its_random_options_and_its_sampler():
    lines = "\n".join([json.dumps(SGLANG_RUN), "", json.dumps(dict(SGLANG_RUN, request_rate=8.0))]).encode()
    runs = read_runs(lines)
    assert [r.bench_tool for r in runs] == ["sglang", "sglang"] and runs[1].spec.request_rate == 8.0
    s = runs[0].spec
    assert (s.random_input_len, s.random_output_len, s.random_range_ratio) == (1024, 128, 0.5)
    assert runs[0].model_id is None


def test_sglang_file_without_a_model_asks_for_one(tmp_path, capsys):
    path = tmp_path / "sglang.jsonl"
    path.write_text(json.dumps(SGLANG_RUN) + "\n")
    assert main([str(path), "--gpu", "h200"]) == 2
    assert "--model: required: the file names no model" in capsys.readouterr().err
    assert main([str(path), "--gpu", "h200", "--model", "llama-3.1-8b"]) == 0


@pytest.mark.parametrize(("content", "expected"), [
    (b'{"completed": 3}', ["duration: missing", "total_input_tokens: missing", "total_output_tokens: missing"]),
    (b"[1, 2]", ["expected a JSON object, got list"]),
    (b"\xff\xfe", ["not UTF-8 text"]),
    (b"{\n", ["line 1: not JSON"]),
    (b"", ["no JSON object in the file"]),
    (json.dumps(dict(VLLM_RUN, completed=0)).encode(), ["completed: must be an integer of at least 1, got 0"]),
    (json.dumps(dict(VLLM_RUN, duration="long")).encode(), ["duration: must be a number"]),
    (json.dumps(dict(VLLM_RUN, request_rate=-3)).encode(), ["request_rate: must be between 0.001 and 100,000, got -3"]),
    (json.dumps(dict(VLLM_RUN, max_concurrency=2.5)).encode(), ["max_concurrency: must be an integer"]),
    (json.dumps(dict(VLLM_RUN, mean_ttft_ms=float("nan"))).encode(), ["mean_ttft_ms: must be a number"]),
    (json.dumps(dict(VLLM_RUN, completed=10**9, total_input_tokens=10**12, total_output_tokens=10**12)).encode(),
     ["completed: must be between 1 and 400,000"]),
    (json.dumps(dict(VLLM_RUN, completed=2, total_input_tokens=10**13)).encode(), ["total_input_tokens: must be between 1 and"]),
    (json.dumps(dict(VLLM_RUN, completed=2, input_lens=[5, 10**12], output_lens=[3, 4])).encode(),
     ["input_lens: must list 2 lengths of 1 to 2,097,152 tokens"]),
])
def test_bad_files_name_the_key(content, expected):
    with pytest.raises(ResultFileProblem) as e:
        read_runs(content)
    text = "\n".join(e.value.lines)
    for part in expected:
        assert part in text


def test_cli_reports_the_file_and_the_options_with_status_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"completed": 3}')
    assert main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert "--gpu: required" in err and "bad.json: duration: missing" in err
    assert main([str(tmp_path / "missing.json"), "--gpu", "h100-sxm"]) == 2
    assert "missing.json" in capsys.readouterr().err
    assert main([str(REAL), "--gpu", "h100-sxm", "--tp", "3"]) == 2
    assert "--tp: must be one of" in capsys.readouterr().err
    assert main([str(REAL), "--gpu", "h100-sxm"]) == 2  # Llama-3.2-3B is not in the catalog
    assert "--model: required: the file's model_id 'meta-llama/Llama-3.2-3B-Instruct' matches no catalog model" in (
        capsys.readouterr().err)


def test_error_and_largest_gap():
    assert error(110.0, 100.0) == pytest.approx(0.1) and error(90.0, 100.0) == pytest.approx(-0.1)
    assert largest_gap({"mean_tpot_ms": 0.4, "median_ttft_ms": 0.1, "p99_ttft_ms": 0.2}).startswith("the decode step")
    assert largest_gap({"mean_tpot_ms": 0.05, "median_ttft_ms": 0.5, "p99_ttft_ms": 0.6}).startswith("the prefill")
    assert largest_gap({"mean_tpot_ms": 0.05, "median_ttft_ms": 0.1, "p99_ttft_ms": 1.5}).startswith("queueing")
    assert largest_gap({}) == "the file has too few latency figures to say"


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-10**15, 10**15) | st.floats(allow_nan=True)
                           | st.text(max_size=8), lambda inner: st.lists(inner, max_size=4), max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["completed", "duration", "total_input_tokens", "total_output_tokens", "request_rate",
                                        "max_concurrency", "burstiness", "input_lens", "output_lens", "dataset_name",
                                        "random_input_len", "random_output_len", "random_range_ratio", "mean_ttft_ms",
                                        "model_id", "sharegpt_output_len"]), JSON_VALUES, max_size=16))
def test_any_object_is_read_or_refused_by_name(obj):
    """Whatever a file holds, the reader returns runs the engine accepts or refuses naming keys:
    never another exception, never a run outside the engine's bounds."""
    try:
        runs = read_runs(json.dumps(obj).encode())
    except ResultFileProblem as e:
        assert e.lines and all(isinstance(line, str) and line for line in e.lines)
        return
    from kvlab.sim.engine.bench import validate_spec, workload
    for run in runs:
        assert validate_spec(run.spec) == []
        assert len(workload(run.spec).trace) == run.spec.num_prompts
