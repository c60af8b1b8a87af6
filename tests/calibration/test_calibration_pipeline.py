"""The whole suite on the NumPy backend at tiny sizes: runs, fits, validates, and says it is a CPU check."""

import json
import time

import pytest
from kvlab.calibration import METHOD_VERSION, cli
from kvlab.calibration.catalog import PROFILE_DIR
from kvlab.calibration.schema import validate_profile


@pytest.fixture(scope="module")
def cpu_profile(tmp_path_factory):
    # one tiny run shared by the module's tests (it takes seconds; each test only reads it)
    tmp_path = tmp_path_factory.mktemp("cpu-run")
    out = tmp_path / "cpu-check-test.json"
    t0 = time.monotonic()
    status = cli.main(["--backend", "numpy", "--output", str(out), "--log", str(tmp_path / "run.log")])
    elapsed = time.monotonic() - t0
    assert status == 0
    return json.loads(out.read_text()), elapsed, tmp_path


def test_numpy_run_writes_a_valid_profile_in_seconds(cpu_profile):
    profile, elapsed, _ = cpu_profile
    assert validate_profile(profile, file_stem="cpu-check-test") == []
    assert elapsed < 20


def test_numpy_profile_says_cpu_and_no_gpu(cpu_profile):
    profile, _, _ = cpu_profile
    prov = profile["provenance"]
    assert prov["kind"] == "cpu-pipeline-check"
    assert profile["gpu"] is None
    assert profile["name"].startswith("cpu-check-")
    assert "CPU" in prov["device_name"]
    assert "not a GPU measurement" in prov["warning"]
    assert prov["denominators"]["source"].startswith("self-normalised")
    assert prov["method_version"] == METHOD_VERSION
    assert prov["command"].startswith("python -m kvlab.calibration --backend numpy")


def test_numpy_profile_carries_every_raw_curve(cpu_profile):
    profile, _, _ = cpu_profile
    m = profile["measurements"]
    assert {"overhead", "hbm", "gemm", "attention", "moe", "tp", "mla_attention", "allreduce", "telemetry"} <= set(m)
    assert len(m["hbm"]["read"]) >= 3 and len(m["hbm"]["copy"]) >= 3
    shapes = {p["shape"] for p in m["gemm"]["points"]}
    assert shapes == {"qkv", "o", "gate_up", "down", "lm_head"}
    assert {p["m"] for p in m["gemm"]["points"]} >= {1, 2, 3, 4, 16, 64}
    layout = m["attention"]["layouts"][0]
    assert layout["model"] == "qwen3-8b/32" and layout["check"]["passed"] and layout["points"]
    assert m["overhead"]["graph"].startswith("unavailable")  # no CUDA graphs on the CPU, and no eager stand-in
    assert m["telemetry"]["available"] is False
    assert "NCCL" in m["allreduce"]["skipped"]
    for p in m["gemm"]["points"]:
        assert p["time_p10_s"] <= p["time_s"] <= p["time_p90_s"]
        assert p["flops_per_s"] == pytest.approx(p["flops"] / p["time_s"])
    tokens = [t for t, _ in profile["compute_efficiency"]]
    assert tokens == sorted(tokens) and tokens[0] == 1


def test_numpy_run_writes_a_log_with_the_header(cpu_profile):
    _, _, tmp = cpu_profile
    log = (tmp / "run.log").read_text()
    for needle in ("kvlab calibration", METHOD_VERSION, "command:", "device:", "versions:", "plan:", "wrote"):
        assert needle in log


def test_quick_numpy_run(tmp_path):
    out = tmp_path / "cpu-check-quick.json"
    assert cli.main(["--backend", "numpy", "--quick", "--output", str(out)]) == 0
    profile = json.loads(out.read_text())
    assert profile["provenance"]["plan"] == "tiny-quick"
    assert validate_profile(profile, file_stem=out.stem) == []


def test_numpy_default_output_stays_out_of_sim(tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "CPU_OUTPUT_DIR", tmp_path / "out")
    assert cli.main(["--backend", "numpy", "--quick"]) == 0
    assert (tmp_path / "out" / "cpu-check-numpy.json").is_file()
    assert (tmp_path / "out" / "cpu-check-numpy.log").is_file()
    assert not list(PROFILE_DIR.glob("cpu-check-*"))


def test_numpy_refuses_a_name_that_could_pass_for_a_gpu_profile(tmp_path, capsys):
    status = cli.main(["--backend", "numpy", "--output", str(tmp_path / "h200.json")])
    assert status == 2
    assert "cpu-check-" in capsys.readouterr().err
    assert not (tmp_path / "h200.json").exists()


def test_unknown_model_is_a_clear_error(capsys):
    assert cli.main(["--backend", "numpy", "--model", "gpt-17"]) == 2
    assert "unknown model 'gpt-17'" in capsys.readouterr().err
