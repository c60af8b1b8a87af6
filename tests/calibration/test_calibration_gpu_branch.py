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
    monkeypatch.setenv("KVLAB_DATA_DIR", str(tmp_path))  # sim/paths.py: the user's data folder

    def run(argv, device_name="NVIDIA H200"):
        monkeypatch.setattr(cli, "load_backend", lambda name, index: StandInGPU(device_name))
        return cli.main(argv)

    return run, tmp_path


def test_gpu_run_writes_a_measured_profile_named_after_the_gpu(gpu_run):
    from kvlab.sim import clear_caches, profiles

    run, tmp = gpu_run
    assert run(["--quick"]) == 0
    # kvlab ships a measured h200.json, which sim lists first: the user's run is h200-local
    path = tmp / "profiles" / "h200-local.json"
    profile = json.loads(path.read_text())
    assert validate_profile(profile, file_stem="h200-local") == []
    assert profile["gpu"] == "h200" and profile["name"] == "h200-local"
    clear_caches()
    assert profiles.load_profile("h200-local").provenance_kind == "measured"
    prov = profile["provenance"]
    assert prov["kind"] == "measured"
    assert prov["denominators"]["hbm_bytes_per_s"] == 4.8e12
    assert prov["cupy_version"] == "13.3.0" and prov["nvidia_driver_version"] == "560.35.03"
    # One GPU: the interconnect comes from the published H200 profile, and the notes say why.
    assert profile["interconnect_efficiency"] == 1.0
    assert any("h200-published" in n and "one GPU visible" in n for n in prov["fit_notes"])
    # No CUDA graphs on the stand-in: no eager fallback; the published value is kept and the notes say so.
    assert any("step_overhead_s: NOT measured" in n and "no eager fallback" in n for n in profile["notes"])
    assert "kernel_overhead_s" not in profile
    # schema 2 provenance, even without NVML (the stand-in has none)
    assert profile["schema_version"] == 2
    for key in ("gpu_uuid", "mig", "driver", "cuda", "cupy", "clocks", "throttle", "kvlab_version", "git_commit", "date"):
        assert prov[key], key
    assert prov["driver"] == "560.35.03" and prov["cupy"] == "13.3.0"
    log = (tmp / "profiles" / "h200-local.log").read_text()
    assert "NVIDIA driver 560.35.03" in log and "CuPy 13.3.0" in log


def test_the_user_profile_folder_is_where_sim_looks(gpu_run):
    from kvlab.sim import clear_caches, profiles

    run, tmp = gpu_run
    assert run(["--quick", "--output", str(tmp / "profiles" / "h200-mine.json")]) == 0
    clear_caches()
    assert "h200-mine" in profiles.profile_names()  # listed without a restart
    assert profiles.load_profile("h200-mine").provenance_kind == "measured"


def test_a_mig_slice_is_not_called_a_whole_gpu(gpu_run, monkeypatch, capsys):
    from kvlab.calibration import telemetry

    class MigTelemetry(telemetry.Telemetry):
        def __init__(self, index):
            super().__init__(index)
            self.available, self.static = True, {"mig": telemetry.mig_description(1, "NVIDIA H200 MIG 3g.71gb")}

    monkeypatch.setattr(cli, "Telemetry", MigTelemetry)
    run, _ = gpu_run
    assert run(["--quick"], device_name="NVIDIA H200 MIG 3g.71gb") == 2
    err = capsys.readouterr().err
    assert "MIG slice (NVIDIA H200 MIG 3g.71gb)" in err and "not a whole GPU" in err


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
