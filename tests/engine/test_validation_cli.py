"""Bad input never raises: it comes back naming the field and the allowed range. The CLI turns it
into one line and exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from kvlab.sim import Scenario
from kvlab.sim.engine import ENGINE_FIELDS, EngineConfig, simulate
from kvlab.sim.engine.cli import main
from kvlab.sim.userfile import shown_path

from .conftest import small


@pytest.mark.parametrize("field,value,needle", [
    ("rate_per_s", 0, "must be between 0.001 and 100,000, got 0"),
    ("num_requests", 2.5, "must be an integer between 1 and 2,000,000, got 2.5"),
    ("prompt_sigma", float("nan"), "must be a number between 0 and 4"),
    ("policy", "sjf", "must be one of fcfs, chunked, lanes, got 'sjf'"),
    ("preemption", None, "must be one of recompute, swap"),
    ("arrival", "trace", "arrival 'trace' needs at least one trace row"),
    ("prefix_caching", "yes", "must be true or false"),
    ("watermark_fraction", 0.9, "must be between 0 and 0.5, got 0.9"),
    ("itl_target_s", -1, "must be between 0.0001 and 60"),
])
def test_bad_fields_are_named_with_their_range(field, value, needle):
    r = simulate(small(**{field: value}))
    assert not r.ok and r.completed == 0
    expected_field = "trace" if field == "arrival" else field  # a trace run without rows is the trace's fault
    hit = [e for e in r.errors if e["field"] == expected_field]
    assert hit and needle in hit[0]["message"], r.errors


def test_all_problems_are_listed_at_once():
    r = simulate(small(rate_per_s=-1, policy="x", clients=0))
    assert {e["field"] for e in r.errors} == {"rate_per_s", "policy", "clients"}


def test_cross_field_checks():
    r = simulate(small(prompt_min_tokens=500, prompt_max_tokens=100))
    assert r.errors[0]["field"] == "prompt_max_tokens" and "at least prompt_min_tokens (500)" in r.errors[0]["message"]
    r = simulate(small(prefix_tokens=5000, prefix_fraction=0.5, prompt_min_tokens=100))
    assert r.errors[0]["field"] == "prefix_tokens"


def test_scenario_errors_pass_through_with_their_field():
    r = simulate(small(scenario=Scenario(model="nope")))
    assert r.errors[0]["field"] == "model"
    r = simulate(small(scenario=Scenario(model="qwen3-32b", gpu="h100-sxm", gpu_memory_utilization=0.5)))
    assert r.errors[0]["field"] == "gpu_memory_utilization" and "Model weights need" in r.errors[0]["message"]
    r = simulate(small(scenario=Scenario(max_num_seqs=512, max_num_batched_tokens=256)))
    assert r.errors[0]["field"] == "max_num_batched_tokens" and "at least max_num_seqs (512)" in r.errors[0]["message"]


def test_a_request_longer_than_the_pool_is_refused_with_the_longest_that_fits():
    r = simulate(small(prompt_max_tokens=200_000, prompt_dist="uniform", prompt_min_tokens=150_000))
    assert r.errors[0]["field"] == "prompt_max_tokens"
    assert "the longest prompt that fits" in r.errors[0]["message"]


def test_not_an_engine_config():
    r = simulate("qwen3-8b")
    assert r.errors == [{"field": "config", "message": "must be an EngineConfig"}]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(ENGINE_FIELDS)), st.one_of(st.none(), st.booleans(), st.text(max_size=5),
                                                        st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**12, 10**12)))
def test_no_value_of_any_field_raises(field, value):
    # A valid but huge run length is a legitimate long simulation (2M requests take minutes); the
    # engine benchmark covers scale, this property covers values that could make a run raise.
    assume(not (field == "num_requests" and isinstance(value, int) and 1_000 < value <= ENGINE_FIELDS[field].high))
    cfg = small(n=20, rate=5.0)
    try:
        cfg = cfg.with_(**{field: value})
    except TypeError:  # pragma: no cover - every ENGINE_FIELDS name is a config field
        raise
    r = simulate(cfg)
    assert r.ok or any(e["field"] for e in r.errors)


def test_with_rejects_unknown_names():
    with pytest.raises(TypeError, match="no field 'rate'"):
        EngineConfig().with_(rate=3)


# --------------------------------------------------------------------------------- CLI
def test_cli_runs_and_prints_a_summary(capsys):
    assert main(["--num-requests", "60", "--log", "vllm"]) == 0
    out = capsys.readouterr().out
    assert "Engine 000: Avg prompt throughput" in out and "TTFT  p50" in out


def test_cli_json(capsys):
    assert main(["--num-requests", "40", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["completed"] == 40 and "requests" not in d


def test_cli_sweep_and_compare(capsys):
    assert main(["--preset", "seed004-cliff", "--num-requests", "150", "--sweep", "0.5,2.5"]) == 0
    out = capsys.readouterr().out
    assert "knee" in out and out.count("\n") >= 4
    assert main(["--num-requests", "60", "--compare", "fcfs,lanes"]) == 0
    out = capsys.readouterr().out
    assert "== fcfs" in out and "== lanes" in out


def test_cli_trace_and_prometheus(tmp_path, capsys):
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,prompt_tokens,output_tokens\n0,100,5\n0.1,200,8\n")
    assert main(["--trace", str(path), "--prometheus"]) == 0
    assert 'vllm:request_success_total{engine="0",model_name="Qwen3-8B",finished_reason="length"} 2.0' in capsys.readouterr().out


@pytest.mark.parametrize("argv,needle", [
    (["--rate-per-s", "-3"], "kvlab engine: error: --rate-per-s: must be between 0.001 and 100,000, got -3"),
    (["--rate-per-s", "fast"], "kvlab engine: error: --rate-per-s: must be a number between 0.001 and 100,000, got 'fast'"),
    (["--policy", "sjf"], "kvlab engine: error: --policy: must be one of fcfs, chunked, lanes, got 'sjf'"),
    (["--model", "gpt-9"], "kvlab engine: error: --model: unknown model 'gpt-9'"),
    (["--sweep", "1,x"], "kvlab engine: error: --sweep: expected comma-separated request rates, each a number between 0.001 and "
                         "100,000; not 'x'"),
    (["--compare", "fcfs,sjf"], "kvlab engine: error: --compare: expected comma-separated policies from fcfs, chunked, lanes, "
                                "got 'sjf'"),
    (["--trace", "/no/such/trace.csv"], "kvlab engine: error: --trace: cannot read '/no/such/trace.csv' (No such file or directory)"),
    (["--num-requests", "9" * 401], "kvlab engine: error: --num-requests: must be between 1 and 2,000,000, got a 401-digit integer"),
])
def test_cli_errors_are_one_line_with_status_2(argv, needle, capsys):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith(needle), err


def test_cli_reports_every_problem_at_once(capsys):
    assert main(["--rate-per-s", "x", "--policy", "sjf", "--tp", "3", "--bogus", "--prompt-min-tokens", "500",
                 "--prompt-max-tokens", "100"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 5, err
    for option in ("'--bogus'", "--tp:", "--rate-per-s:", "--policy:", "--prompt-max-tokens:"):
        assert sum(option in line for line in err) == 1, (option, err)
    assert all(line.startswith("kvlab engine: error: ") for line in err)


def test_cli_bad_trace_file(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_text("arrival_s,prompt_tokens,output_tokens\n0,-5,1\n")
    assert main(["--trace", str(path)]) == 2
    assert "kvlab engine: error: --trace: " in (err := capsys.readouterr().err)
    assert "bad.csv: row 2: prompt_tokens must be between 1" in err  # the file named, then the row


def test_a_trace_request_too_long_for_the_pool_names_the_file(tmp_path, capsys):
    # Found by tests/fuzz/test_fuzz_user_files.py: a trace that parses but cannot run (one request
    # longer than the whole KV pool) is found by the engine, after the parser, and still names the file.
    path = tmp_path / "long.csv"
    path.write_text("arrival_s,prompt_tokens,output_tokens\n0,1,398176\n")
    assert main(["--trace", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kvlab engine: error: --trace: {shown_path(path)}: the longest request (prompt 1 + output 398,176 tokens)"), err


def test_old_option_name_works_with_a_notice(capsys):
    assert main(["--accounting", "vllm", "--num-requests", "20", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["config"]["scenario"]["engine"] == "vllm"
    assert err == "kvlab engine: note: --accounting is now --engine; the old name will be removed in the next release\n"


def test_kvlab_engine_subcommand_in_a_subprocess():
    out = subprocess.run([sys.executable, "-m", "kvlab.cli", "engine", "--num-requests", "30"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "30/30 requests" in out.stdout
