"""The provenance fields of the profile contract (schema 2) for a measured profile.

    gpu_uuid, mig, driver, cuda, cupy, clocks, throttle, kvlab_version, git_commit, date

They come from the CuPy backend's device_info, the NVML telemetry (telemetry.py) and the source
tree. git_commit is `git rev-parse HEAD` of the tree the suite runs from, unless KVLAB_GIT_COMMIT is set
(a copied working tree on a device machine has no .git); "unknown" when neither exists.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parent.parent


def kvlab_version() -> str:
    try:
        from importlib.metadata import version

        return version("kvlab")
    except Exception:
        pass
    try:  # a source tree that is not installed: read pyproject.toml
        for line in (SOURCE_ROOT / "pyproject.toml").read_text().splitlines():
            if line.strip().startswith("version"):
                return line.split("=", 1)[1].strip().strip('"') + " (source tree)"
    except OSError:
        pass
    return "unknown"


def git_commit() -> str:
    if os.environ.get("KVLAB_GIT_COMMIT"):
        return os.environ["KVLAB_GIT_COMMIT"]
    try:
        out = subprocess.run(["git", "-C", str(SOURCE_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10, check=False)
        if out.returncode == 0 and out.stdout.strip():
            dirty = subprocess.run(["git", "-C", str(SOURCE_ROOT), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=10, check=False).stdout.strip()
            return out.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def contract_provenance(info: dict, telemetry: dict, date_utc: str) -> dict:
    static = telemetry.get("static", {}) if telemetry.get("available") else {}
    phases = telemetry.get("phases", {})
    sm = [v for ph in phases.values() for v in (ph.get("sm_mhz_min"), ph.get("sm_mhz_max")) if v is not None]
    mem = [v for ph in phases.values() for v in (ph.get("mem_mhz_min"), ph.get("mem_mhz_max")) if v is not None]
    power = [ph["power_w_max"] for ph in phases.values() if ph.get("power_w_max") is not None]
    clocks = {
        "max_mhz": static.get("clocks_max_mhz"),
        "applications_mhz": static.get("clocks_applications_mhz"),
        "during_run_sm_mhz": [min(sm), max(sm)] if sm else None,
        "during_run_mem_mhz": [min(mem), max(mem)] if mem else None,
        "power_max_w": max(power) if power else None,
        "power_limit_w": static.get("power_limit_w"),
        "source": f"NVML, sampled every {telemetry['period_s']:.2f} s" if telemetry.get("available")
        else f"not recorded: {telemetry.get('reason', 'no telemetry')}",
    }
    return {
        "gpu_uuid": static.get("uuid") or info.get("gpu_uuid") or "unknown",
        "mig": static.get("mig") or {"mode": "unknown (NVML unavailable)"},
        "driver": info.get("nvidia_driver_version") or static.get("driver") or "unknown",
        "cuda": {"runtime": info.get("cuda_runtime_version"), "driver_api": info.get("cuda_driver_api_version")},
        "cupy": info.get("cupy_version"),
        "clocks": clocks,
        "throttle": {"throttled": telemetry.get("throttled"), "reasons_seen": telemetry.get("throttle_reasons_seen", [])}
        if telemetry.get("available") else {"throttled": None, "reasons_seen": [], "why": "NVML unavailable"},
        "kvlab_version": kvlab_version(),
        "git_commit": git_commit(),
        "date": date_utc,
    }
