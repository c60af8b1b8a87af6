"""The GPU branch of the command (catalog lookup, datasheet denominators, measured provenance,
default paths), driven by a stand-in backend that computes with NumPy but reports a GPU.

The numbers it writes are meaningless (CPU rates over H200 peaks); what is checked is that a GPU
owner's run goes through the same code to a profile that validates as `measured`.
"""

import json

import pytest
from kvlab.calibration import cli
from kvlab.calibration.backend import NumpyBackend
from kvlab.calibration.schema import validate_profile


class StandInGPU(NumpyBackend):
    is_gpu = True

    def __init__(self, device_name="NVIDIA H200"):
        super().__init__()
        self.device_name = device_name

    def device_info(self):
        return {**super().device_info(), "device_name": self.device_name, "device_kind": "gpu",
                "device_index": 0, "device_count": 1, "nvidia_driver_version": "560.35.03",
                "cuda_runtime_version": "12.6", "cuda_driver_api_version": "12.6", "cupy_version": "13.3.0",
                "cublas_version": "120604"}


@pytest.fixture
def gpu_run(tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "GPU_PROFILE_DIR", tmp_path / "profiles")
    monkeypatch.setattr(cli, "LOG_DIR", tmp_path / "logs")

    def run(argv, device_name="NVIDIA H200"):
        monkeypatch.setattr(cli, "load_backend", lambda name, index: StandInGPU(device_name))
        return cli.main(argv)

    return run, tmp_path


def test_gpu_run_writes_a_measured_profile_named_after_the_gpu(gpu_run):
    run, tmp = gpu_run
    assert run(["--quick"]) == 0
    path = tmp / "profiles" / "h200.json"
    profile = json.loads(path.read_text())
    assert validate_profile(profile, file_stem="h200") == []
    assert profile["gpu"] == "h200" and profile["name"] == "h200"
    prov = profile["provenance"]
    assert prov["kind"] == "measured"
    assert prov["denominators"]["hbm_bytes_per_s"] == 4.8e12
    assert prov["cupy_version"] == "13.3.0" and prov["nvidia_driver_version"] == "560.35.03"
    # One GPU: the interconnect comes from the published H200 profile, and the notes say why.
    assert profile["interconnect_efficiency"] == 1.0
    assert any("h200-published" in n and "one GPU visible" in n for n in prov["fit_notes"])
    # No CUDA graphs on the stand-in: the eager skeleton is used, and says so.
    assert any("eager skeleton" in n for n in prov["fit_notes"])
    log = (tmp / "logs" / "h200.log").read_text()
    assert "NVIDIA driver 560.35.03" in log and "CuPy 13.3.0" in log


def test_unrecognised_gpu_asks_for_gpu_flag(gpu_run, capsys):
    run, _ = gpu_run
    assert run(["--quick"], device_name="Tesla V100-SXM2-16GB") == 2
    assert "pass --gpu ID" in capsys.readouterr().err


def test_gpu_missing_from_the_catalog_is_explained(gpu_run, capsys):
    run, _ = gpu_run
    assert run(["--quick", "--gpu", "h300"]) == 2
    assert "not in sim/data/gpus.json" in capsys.readouterr().err


def test_gpu_run_refuses_the_cpu_prefix(gpu_run, tmp_path, capsys):
    run, _ = gpu_run
    assert run(["--quick", "--output", str(tmp_path / "cpu-check-h200.json")]) == 2
    assert "reserved" in capsys.readouterr().err
