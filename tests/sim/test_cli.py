"""`python -m sim`: the JSON contract, --config PATH, and bad input as exit status 2 with one line
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
    code, out, err = cli(capsys, "--json", "--prompt", "32768")
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
    (["--prompt", "abc"], "--prompt", "between 1 and 2,097,152"),
    (["--prompt", "0"], "--prompt", "between 1 and 2,097,152"),
    (["--prompt", "1.5"], "--prompt", "an integer"),
    (["--output", "99999999"], "--output", "between 1 and 1,048,576"),
    (["--gpu-util", "1.5"], "--gpu-util", "between 0.05 and 1"),
    (["--gpu-util", "nan"], "--gpu-util", "between 0.05 and 1"),
    (["--concurrency", "-3"], "--concurrency", "between 1 and 1,000,000"),
    (["--mem-fraction-static", "0"], "--mem-fraction-static", "between 0.05 and 1"),
    (["--block-size", "0"], "--block-size", "between 1 and 1,024"),
    (["--tp", "3"], "--tp", "1, 2, 4, 8"),
    (["--kv-dtype", "fp4"], "--kv-dtype", "'bf16', 'fp16', 'fp8', 'int8'"),
    (["--engine", "trt"], "--engine", "'textbook', 'vllm', 'sglang'"),
    (["--gpu", "v100"], "--gpu", "h100-sxm"),
    (["--model", "gpt-5"], "--model", "qwen3-8b"),
    (["--profile", "nope"], "--profile", "textbook"),
    (["--mha", "--model", "deepseek-v3"], "--mha", "MLA"),
    (["--max-model-len", "1000"], "--prompt", "allowed prompt: 1 to 744"),
])
def test_bad_input_exits_2_with_one_line(capsys, argv, option, allowed):
    with pytest.raises(SystemExit) as e:
        code = main(argv)
        raise SystemExit(code)
    assert e.value.code == 2
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
    for path, expect in ((missing, "cannot read"), (bad_json, "cannot read"), (bad_field, "--config (num_key_value_heads)")):
        with pytest.raises(SystemExit) as e:
            raise SystemExit(main(["--config", str(path)]))
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and expect in err, err


def test_module_entry_point_runs_in_a_fresh_interpreter():
    ok = subprocess.run([sys.executable, "-m", "kvlab.sim", "--json", "--model", "qwen3-14b"], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and json.loads(ok.stdout)["params_total"] > 14e9
    bad = subprocess.run([sys.executable, "-m", "kvlab.sim", "--gpu-util", "7"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip() == "kvlab: error: --gpu-util: must be between 0.05 and 1, got 7"
