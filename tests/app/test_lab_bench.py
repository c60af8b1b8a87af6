"""The serving lab replays a benchmark client's result file uploaded as its trace: the run's
requests and concurrency cap, the file's model and engine, and what it measured beside the
prediction (app/viewlayer/lab_bench.py)."""

from __future__ import annotations

import json
from pathlib import Path

from kvlab.app.viewlayer.lab_session import LabSession
from kvlab.sim.engine.compare import METRICS

REAL = Path(__file__).parents[1] / "engine" / "data" / "vllm_append_result_l40s.jsonl"  # tests/engine/data/README.md


def finished(s: LabSession) -> LabSession:
    while s.busy:
        s.advance(200_000)
    return s


def test_a_result_file_is_replayed_with_measured_beside_predicted():
    s = finished(LabSession())
    assert 'data-kv="lab-bench"' in s.view_data("lab_bench")["pane"]["html"]  # the hint: how to use it
    assert "<table" not in s.view_data("lab_bench")["pane"]["html"]
    s.load_trace(REAL.read_bytes(), "results.json")
    finished(s)
    assert s.trace_note.startswith("Benchmark result results.json (run 1 of 3): 300 requests sent 10 per second")
    assert s.values["arrival"] == "trace" and s.values["engine"] == "vllm" and len(s.trace_rows) == 300
    assert s.result.completed == 300
    page = s.view_data("lab_bench")["pane"]["html"]
    for _, label in METRICS:
        assert f"<td>{label}</td>" in page
    assert "<td>35.84</td>" in page  # the file's duration, as measured
    assert "median |error|" in page and "999 in and 270 out" in page


def test_the_files_concurrency_cap_and_model_are_kept(tmp_path):
    run = {"model_id": "Qwen/Qwen3-8B", "num_prompts": 40, "request_rate": "inf", "max_concurrency": 4, "duration": 5.0,
           "completed": 40, "total_input_tokens": 40 * 300, "total_output_tokens": 40 * 30, "mean_tpot_ms": 8.0}
    s = LabSession(dict(LabSession().values, model="qwen3-0.6b"))
    s.load_trace(json.dumps(run, indent=2).encode(), "one.json")  # one object over several lines
    finished(s)
    assert s.values["model"] == "qwen3-8b" and s.config().workload.max_concurrency == 4
    q = s.result.requests
    assert max(sum(1 for a, e in zip(q["arrival_s"], q["e2e_s"], strict=True) if a <= t < a + e) for t in q["arrival_s"]) <= 4
    # a setting moved away from the trace hides the comparison; the cap goes with it
    s.update({"arrival": "poisson"})
    finished(s)
    assert "<table" not in s.view_data("lab_bench")["pane"]["html"] and s.config().workload.max_concurrency is None


def test_a_bad_result_file_is_refused_naming_its_keys_and_a_trace_replaces_it():
    s = finished(LabSession())
    s.load_trace(REAL.read_bytes(), "results.json")
    finished(s)
    s.load_trace(b'{"completed": 3, "duration": "long"}', "bad.json")
    assert s.trace_note.startswith("Benchmark result bad.json refused: total_input_tokens: missing")
    assert s.bench is not None  # the replayed run stays
    s.load_trace(b"arrival_s,prompt_tokens,output_tokens\n0,100,10\n0.5,200,20\n", "t.csv")
    finished(s)
    assert s.bench is None and "<table" not in s.view_data("lab_bench")["pane"]["html"]
    assert s.trace_note.startswith("2 requests from t.csv")


def test_a_file_of_several_runs_replays_the_one_chosen():
    """vLLM's --append-result file holds three runs: the chooser lists them, run 1 is replayed first, and
    choosing run 2 replays its requests with its own measured figures; a plain trace clears the choice."""
    s = finished(LabSession())
    s.load_trace(REAL.read_bytes(), "results.json")
    finished(s)
    choice = s.view_data("lab_bench")["w.lab-bench-run"]
    assert choice["visible"] and len(choice["options"]) == 3 and choice["value"] == choice["options"][0]
    first = s.bench
    s.choose_bench_run(choice["options"][1])
    finished(s)
    assert s.bench is s.bench_runs[1] and s.bench is not first
    assert s.trace_note.startswith("Benchmark result results.json (run 2 of 3): ")
    assert s.view_data("lab_bench")["w.lab-bench-run"]["value"] == choice["options"][1]
    page = s.view_data("lab_bench")["pane"]["html"]
    assert f"<td>{s.bench.measured['duration']:,.2f}</td>" in page
    assert s.result.completed == len(s.trace_rows) == s.bench.spec.num_prompts
    before = s.result
    s.choose_bench_run("Run 9: no such run")  # a label the file has not: nothing changes
    s.choose_bench_run(choice["options"][1])  # the run already replayed: nothing reruns
    assert s.result is before and not s.busy
    s.load_trace(b"arrival_s,prompt_tokens,output_tokens\n0,100,10\n", "t.csv")
    finished(s)
    assert s.bench_runs == [] and not s.view_data("lab_bench")["w.lab-bench-run"]["visible"]


def test_a_file_of_one_run_shows_no_chooser(tmp_path):
    run = {"model_id": "Qwen/Qwen3-8B", "num_prompts": 10, "request_rate": "inf", "duration": 5.0,
           "completed": 10, "total_input_tokens": 3000, "total_output_tokens": 300, "mean_tpot_ms": 8.0}
    s = LabSession()
    s.load_trace(json.dumps(run).encode(), "one.json")
    finished(s)
    choice = s.view_data("lab_bench")["w.lab-bench-run"]
    assert choice == {"options": ["Run 1: 10 requests, all at once"], "value": "Run 1: 10 requests, all at once",
                      "visible": False}
