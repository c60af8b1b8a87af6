"""`python -m kvlab.sim` and `kvlab`: the JSON contract, --config PATH, and bad input as exit status 2 with one line
that names the option and what it allows."""

import json
import subprocess
import sys

import pytest
from kvlab.sim.catalog import model_entry
from kvlab.sim.cli import main

JSON_KEYS = [
    "kv_bytes_per_token", "params_total", "params_active", "weight_bytes", "usable_bytes", "activation_reserve_bytes",
    "kv_pool_bytes", "kv_pool_tokens", "max_sequences", "batch", "decode_step_s", "itl_s", "ttft_s", "decode_tokens_per_s",
    "per_stream_tokens_per_s", "weight_share", "decode_bound", "prefill_bound", "tensor_duty", "max_concurrency", "log", "errors",
]


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_is_one_object_with_every_documented_key(capsys):
    code, out, err = cli(capsys, "--json", "--prompt-tokens", "32768")
    assert code == 0 and err == ""
    assert out.count("\n") == 1  # one line, one object
    d = json.loads(out)
    assert set(JSON_KEYS) <= set(d)
    assert (d["max_sequences"], d["batch"], d["kv_bytes_per_token"]) == (12, 12, 147_456)
    assert d["errors"] == [] and isinstance(d["log"], list) and d["log"]


def test_plain_output_has_the_log_and_a_summary(capsys):
    code, out, _ = cli(capsys, "--engine", "vllm")
    assert code == 0
    assert "GPU KV cache size:" in out and "Maximum concurrency for 40,960 tokens per request:" in out
    assert "sequences fit" in out


def test_config_path_reads_a_hugging_face_config(capsys, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(model_entry("mixtral-8x7b")["config"]))
    code, out, _ = cli(capsys, "--config", str(path), "--json", "--gpu", "h200")
    assert code == 0
    d = json.loads(out)
    assert d["kv_bytes_per_token"] == 2 * 32 * 8 * 128 * 2
    assert d["params_active"] < d["params_total"]


@pytest.mark.parametrize(("argv", "option", "allowed"), [
    (["--prompt-tokens", "abc"], "--prompt-tokens", "between 1 and 2,097,152"),
    (["--prompt-tokens", "0"], "--prompt-tokens", "between 1 and 2,097,152"),
    (["--prompt-tokens", "1.5"], "--prompt-tokens", "an integer"),
    (["--output-tokens", "99999999"], "--output-tokens", "between 1 and 1,048,576"),
    (["--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization", "between 0.05 and 1"),
    (["--gpu-memory-utilization", "nan"], "--gpu-memory-utilization", "between 0.05 and 1"),
    (["--concurrency", "-3"], "--concurrency", "between 1 and 1,000,000"),
    (["--mem-fraction-static", "0"], "--mem-fraction-static", "between 0.05 and 1"),
    (["--block-size-tokens", "0"], "--block-size-tokens", "between 1 and 1,024"),
    (["--tp", "3"], "--tp", "1, 2, 4, 8"),
    (["--kv-dtype", "fp4"], "--kv-dtype", "bf16, fp16, fp8, int8"),
    (["--engine", "trt"], "--engine", "textbook, vllm, sglang"),
    (["--gpu", "v100"], "--gpu", "h100-sxm"),
    (["--model", "gpt-5"], "--model", "qwen3-8b"),
    (["--profile", "nope"], "--profile", "textbook"),
    (["--force-mha", "--model", "deepseek-v3"], "--force-mha", "MLA"),
    (["--max-model-len", "1000"], "--prompt-tokens", "allowed prompt: 1 to 744"),
])
def test_bad_input_exits_2_with_one_line(capsys, argv, option, allowed):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("kvlab: error:")
    assert option in err and allowed in err, err


def test_config_path_errors_exit_2(capsys, tmp_path):
    missing = tmp_path / "missing.json"
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{not json")
    bad_field = tmp_path / "field.json"
    bad_field.write_text(json.dumps({**model_entry("qwen3-8b")["config"], "num_key_value_heads": 5}))
    for path, expect in ((missing, "cannot read"), (bad_json, "bad.json: is not valid JSON"),
                         (bad_field, "--config (num_key_value_heads)")):
        assert main(["--config", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and expect in err, err


def test_module_entry_point_runs_in_a_fresh_interpreter():
    ok = subprocess.run([sys.executable, "-m", "kvlab.sim", "--json", "--model", "qwen3-14b"], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and json.loads(ok.stdout)["params_total"] > 14e9
    bad = subprocess.run([sys.executable, "-m", "kvlab.sim", "--gpu-memory-utilization", "7"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip() == "kvlab: error: --gpu-memory-utilization: must be between 0.05 and 1, got 7"


def test_every_problem_is_reported_at_once_one_line_each(capsys):
    assert main(["--prompt-tokens", "abc", "--gpu-memory-utilization", "7", "--model", "gpt-5", "--tp", "3", "--foo"]) == 2
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and len(lines) == 5 and all(line.startswith("kvlab: error: ") for line in lines), err
    for needle in ("'--foo'", "--prompt-tokens: must be an integer", "--gpu-memory-utilization: must be between",
                   "--tp: must be one of 1, 2, 4, 8, got 3", "--model: unknown model 'gpt-5'"):
        assert sum(needle in line for line in lines) == 1, (needle, err)


@pytest.mark.parametrize(("old", "new", "value"), [("--prompt", "--prompt-tokens", "8192"), ("--output", "--output-tokens", "100"),
                                                   ("--gpu-util", "--gpu-memory-utilization", "0.8"),
                                                   ("--block-size", "--block-size-tokens", "32"), ("--alloc", "--allocation", "paged")])
def test_old_option_names_still_work_with_a_notice(capsys, old, new, value):
    assert main([old, value, "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == (main([new, value, "--json"]) == 0 and json.loads(capsys.readouterr().out))
    assert err == f"kvlab: note: {old} is now {new}; the old name will be removed in the next release\n"


def test_no_abbreviations(capsys):
    # `--prompt` is an old name of --prompt-tokens, never a prefix match of some other option.
    assert main(["--max-num", "4"]) == 2
    assert "unrecognized option '--max-num'" in capsys.readouterr().err


def test_help_shows_human_numbers_and_current_names(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines anywhere
    assert "1 to 4,194,304" in text and "1 to 2,097,152" in text and "e+06" not in text
    assert "--prompt-tokens" in text and "--gpu-util" not in text and "--alloc " not in text
