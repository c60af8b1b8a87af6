"""NVML telemetry helpers, the MIG naming rule, the [gpu] install extra and the user profile folder."""

import tomllib
from pathlib import Path

from kvlab.calibration.provenance import contract_provenance
from kvlab.calibration.telemetry import Telemetry, mig_description, reason_names, summarize
from kvlab.sim import paths

ROOT = Path(__file__).resolve().parents[2]


def test_reason_bits_are_named():
    assert reason_names(0) == []
    assert reason_names(0x1) == ["gpu_idle"]
    assert reason_names(0x24) == ["sw_power_cap", "sw_thermal_slowdown"]
    assert reason_names(0x1000) == ["unknown_0x1000"]


def test_summary_flags_throttling_per_phase():
    samples = [
        {"phase": "hbm", "sm_mhz": 1980, "mem_mhz": 3201, "power_w": 500.0, "temp_c": 50, "reasons": []},
        {"phase": "gemm", "sm_mhz": 1755, "mem_mhz": 3201, "power_w": 700.0, "temp_c": 60, "reasons": ["sw_power_cap"]},
        {"phase": "gemm", "sm_mhz": 1980, "mem_mhz": 3201, "power_w": 650.0, "temp_c": 61, "reasons": ["gpu_idle"]},
    ]
    s = summarize(samples)
    assert s["throttled"] is True and s["throttle_reasons_seen"] == ["gpu_idle", "sw_power_cap"]
    assert s["phases"]["hbm"]["throttled"] is False and s["phases"]["gemm"]["throttled"] is True
    assert (s["phases"]["gemm"]["sm_mhz_min"], s["phases"]["gemm"]["sm_mhz_max"]) == (1755, 1980)
    assert not summarize(samples[:1])["throttled"]
    assert not summarize([dict(samples[2], phase="x")])["throttled"]  # idle is not throttling


def test_mig_is_named_as_a_slice():
    assert mig_description(None, "NVIDIA H200") == {"mode": "not supported", "whole_gpu": True}
    assert mig_description(0, "NVIDIA H200") == {"mode": "disabled", "whole_gpu": True}
    mig = mig_description(1, "NVIDIA H200 MIG 3g.71gb")
    assert mig["mode"] == "enabled" and not mig["whole_gpu"] and mig["slice"] == "NVIDIA H200 MIG 3g.71gb"
    assert mig_description(1, "NVIDIA H200", "MIG 1g.18gb")["slice"] == "MIG 1g.18gb"


def test_provenance_without_nvml_says_so():
    tel = Telemetry.__new__(Telemetry)  # no NVML on this machine or not: build the unavailable report
    tel.available, tel.reason = False, "NVMLError: no driver"
    prov = contract_provenance({"nvidia_driver_version": "580.1", "cupy_version": "14.2.0",
                                "cuda_runtime_version": "13.0"}, tel.report(), "2026-11-30T19:00:00+00:00")
    assert prov["driver"] == "580.1" and prov["cupy"] == "14.2.0" and prov["date"].startswith("2026-11-30")
    assert "not recorded" in prov["clocks"]["source"] and prov["throttle"]["throttled"] is None
    assert prov["git_commit"] and prov["kvlab_version"]


def test_git_commit_env_wins(monkeypatch):
    from kvlab.calibration import provenance

    monkeypatch.setenv("KVLAB_GIT_COMMIT", "0123abc")
    assert provenance.git_commit() == "0123abc"


def test_gpu_extra_brings_cupy_with_its_cuda_libraries_and_nvml():
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["gpu"]
    names = {r.split("[")[0].split(">")[0].split("=")[0].strip() for r in extra}
    assert names == {"cupy-cuda12x", "nvidia-ml-py"}
    cupy = next(r for r in extra if r.startswith("cupy-cuda12x"))
    assert "[ctk]" in cupy and ">=14" in cupy  # CuPy 14 wheels ship no CUDA libraries without [ctk]


def test_user_profile_dir_follows_platform_rules(monkeypatch, tmp_path):
    monkeypatch.setenv("KVLAB_DATA_DIR", str(tmp_path / "d"))
    assert paths.user_profile_dir() == tmp_path / "d" / "profiles"
    monkeypatch.delenv("KVLAB_DATA_DIR")
    monkeypatch.setattr(paths.sys, "platform", "linux")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert paths.user_profile_dir() == tmp_path / "xdg" / "kvlab" / "profiles"
    monkeypatch.setattr(paths.sys, "platform", "win32")
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "local"))
    assert paths.user_data_dir() == tmp_path / "local" / "kvlab"


def test_sim_searches_the_user_profile_dir_last(monkeypatch, tmp_path):
    from kvlab.sim import profiles

    monkeypatch.setenv("KVLAB_DATA_DIR", str(tmp_path))
    dirs = profiles._profile_dirs()
    assert dirs[0] == profiles.PROFILE_DIR and dirs[-1] == tmp_path / "profiles"
