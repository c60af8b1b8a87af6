"""GPU clocks, power, temperature and throttle reasons during a run, read through NVML.

A sampler thread reads NVML (the `nvidia-ml-py` package, imported as pynvml) every
SAMPLE_PERIOD_S while the suite runs; each sample carries the phase (benchmark) it fell in. The
summary lists, per phase, the SM and memory clock range, peak power and temperature, and the
throttle ("clocks event") reasons seen. Reasons that lower clocks below what the card would
otherwise run (software power cap, thermal or hardware slowdown, power brake) flag the run: the
profile's notes say so, because a throttled run understates the GPU.

Nothing here changes a GPU setting. Without NVML (no package, no driver, the NumPy backend) the
summary says why and the run goes on.
"""

from __future__ import annotations

import threading
import time

SAMPLE_PERIOD_S = 0.1
MAX_KEPT_SAMPLES = 300  # the profile keeps at most this many raw samples (evenly thinned)

# NVML clocks-event reason bits (nvml.h, nvmlClocksEventReason*).
REASONS = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting",
}
THROTTLING = {"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}


def reason_names(mask: int) -> list[str]:
    """Names of the bits set in an NVML clocks-event mask. Example: 0x24 -> sw_power_cap, sw_thermal_slowdown."""
    names = [name for bit, name in REASONS.items() if mask & bit]
    rest = mask & ~sum(REASONS)
    return names + ([f"unknown_0x{rest:x}"] if rest else [])


def mig_description(mode_current: int | None, device_name: str, slice_name: str | None = None) -> dict:
    """The MIG state for provenance. A MIG slice is named as a slice, never as the whole GPU.

    mode_current: NVML's current MIG mode (1 enabled, 0 disabled, None when not supported)."""
    if mode_current is None:
        return {"mode": "not supported", "whole_gpu": True}
    if not mode_current and "MIG" not in device_name.upper():
        return {"mode": "disabled", "whole_gpu": True}
    return {"mode": "enabled", "whole_gpu": False, "slice": slice_name or device_name}


def summarize(samples: list[dict]) -> dict:
    """Per-phase and overall ranges of the samples, and whether throttling was seen."""
    phases: dict[str, dict] = {}
    for s in samples:
        ph = phases.setdefault(s["phase"], {"samples": 0, "reasons": set()})
        ph["samples"] += 1
        for key in ("sm_mhz", "mem_mhz", "power_w", "temp_c"):
            v = s.get(key)
            if v is None:
                continue
            ph[key + "_min"] = min(ph.get(key + "_min", v), v)
            ph[key + "_max"] = max(ph.get(key + "_max", v), v)
        ph["reasons"].update(s.get("reasons", []))
    seen: set[str] = set()
    for ph in phases.values():
        seen |= ph["reasons"]
        ph["reasons"] = sorted(ph["reasons"])
        ph["throttled"] = bool(THROTTLING & set(ph["reasons"]))
    return {"phases": phases, "throttle_reasons_seen": sorted(seen), "throttled": bool(THROTTLING & seen),
            "samples": len(samples)}


class Telemetry:
    """Background NVML sampler. Use as a context manager; set .phase as the run moves on."""

    def __init__(self, device_index: int = 0, period_s: float = SAMPLE_PERIOD_S) -> None:
        self.period_s = period_s
        self.phase = "setup"
        self.samples: list[dict] = []
        self.static: dict = {}
        self.available = False
        self.reason = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = time.monotonic()
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nv = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(device_index)
            self.available = True
        except Exception as exc:  # no package, no driver, no device
            self.reason = f"{type(exc).__name__}: {exc}"
            return
        self.static = self._static()

    def _try(self, fn, *args):
        try:
            v = fn(*args)
            return v.decode() if isinstance(v, bytes) else v
        except Exception:
            return None

    def _static(self) -> dict:
        nv, h = self.nv, self.handle
        name = self._try(nv.nvmlDeviceGetName, h) or ""
        mig = self._try(nv.nvmlDeviceGetMigMode, h)
        mig_current = mig[0] if isinstance(mig, (list, tuple)) else None
        return {
            "name": name,
            "uuid": self._try(nv.nvmlDeviceGetUUID, h),
            "driver": self._try(nv.nvmlSystemGetDriverVersion),
            "cuda_driver": self._try(nv.nvmlSystemGetCudaDriverVersion_v2),
            "mig": mig_description(mig_current, name),
            "clocks_max_mhz": {"sm": self._try(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_SM),
                               "mem": self._try(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_MEM)},
            "clocks_applications_mhz": {"sm": self._try(nv.nvmlDeviceGetApplicationsClock, h, nv.NVML_CLOCK_SM),
                                        "mem": self._try(nv.nvmlDeviceGetApplicationsClock, h, nv.NVML_CLOCK_MEM)},
            "power_limit_w": (self._try(nv.nvmlDeviceGetEnforcedPowerLimit, h) or 0) / 1000 or None,
            "persistence_mode": self._try(nv.nvmlDeviceGetPersistenceMode, h),
            "ecc_mode": self._try(nv.nvmlDeviceGetEccMode, h),
        }

    def sample(self) -> dict:
        nv, h = self.nv, self.handle
        reasons_fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or nv.nvmlDeviceGetCurrentClocksThrottleReasons
        mask = self._try(reasons_fn, h)
        power = self._try(nv.nvmlDeviceGetPowerUsage, h)
        return {"t_s": round(time.monotonic() - self._t0, 3), "phase": self.phase,
                "sm_mhz": self._try(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM),
                "mem_mhz": self._try(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_MEM),
                "power_w": None if power is None else round(power / 1000, 1),
                "temp_c": self._try(nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU),
                "reasons": reason_names(mask) if mask is not None else []}

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            try:
                self.samples.append(self.sample())
            except Exception:  # a failed read loses one sample, not the run
                pass

    def __enter__(self) -> Telemetry:
        if self.available:
            self._thread = threading.Thread(target=self._loop, name="kvlab-nvml", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def report(self) -> dict:
        if not self.available:
            return {"available": False, "reason": self.reason}
        kept = self.samples
        if len(kept) > MAX_KEPT_SAMPLES:
            step = len(kept) / MAX_KEPT_SAMPLES
            kept = [kept[int(i * step)] for i in range(MAX_KEPT_SAMPLES)]
        return {"available": True, "period_s": self.period_s, "static": self.static, **summarize(self.samples),
                "samples_kept": kept}
