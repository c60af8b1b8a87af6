"""Efficiency profiles: what fraction of a datasheet peak a real kernel reaches.

A profile is a data file in `sim/data/profiles/` (written by hand from published figures, or by
`python -m kvlab.calibration` from measurements). The textbook profile is seed 002's pair of constants;
measured profiles add the curve of GEMM efficiency against tokens per step, because a decode step
of 8 tokens cannot reach the rate of an 8192-token prefill.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .catalog import DATA_DIR
from .errors import InputError, Issue
from .fields import check_name
from .paths import user_profile_dir

PROFILE_DIR = DATA_DIR / "profiles"
DEFAULT_PROFILE = "textbook"


@dataclass(frozen=True)
class EfficiencyProfile:
    name: str
    gpu: str | None
    description: str
    bandwidth_efficiency: float
    kv_bandwidth_efficiency: float
    compute_efficiency_points: tuple[tuple[float, float], ...]  # (tokens per step, efficiency)
    fp8_compute_efficiency_points: tuple[tuple[float, float], ...]
    step_overhead_s: float
    interconnect_efficiency: float
    allreduce_latency_s: float
    provenance_kind: str

    def compute_efficiency(self, tokens: float, fp8: bool = False) -> float:
        """Achieved fraction of the dense peak for a step of `tokens` tokens: piecewise linear in
        log2(tokens) between measured points, clamped at both ends."""
        points = self.fp8_compute_efficiency_points if fp8 and self.fp8_compute_efficiency_points else self.compute_efficiency_points
        return interpolate_log2(points, tokens)


def interpolate_log2(points: tuple[tuple[float, float], ...], x: float) -> float:
    if len(points) == 1 or x <= points[0][0]:
        return points[0][1]
    if x >= points[-1][0]:
        return points[-1][1]
    lx = math.log2(x)
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        if x <= x1:
            t = (lx - math.log2(x0)) / (math.log2(x1) - math.log2(x0))
            return y0 + t * (y1 - y0)
    return points[-1][1]


def _profile_dirs() -> list[Path]:
    """Shipped profiles first (a user file never shadows a cited one), then KVLAB_PROFILE_PATH's
    folders, then the user's own (`kvlab calibrate` writes there, never into the package)."""
    extra = os.environ.get("KVLAB_PROFILE_PATH", "")
    dirs = [PROFILE_DIR] + [Path(p) for p in extra.split(os.pathsep) if p]
    try:
        dirs.append(user_profile_dir())
    except RuntimeError:  # no home directory to search (a bare container, some Pyodide hosts)
        pass
    return dirs


def profile_names() -> list[str]:
    names: list[str] = []
    for d in _profile_dirs():
        for p in sorted(d.glob("*.json")):
            if p.stem not in names:
                names.append(p.stem)
    return names


def _points(raw, field: str) -> tuple[tuple[float, float], ...]:
    try:
        pts = tuple(sorted((float(t), float(e)) for t, e in raw))
    except (TypeError, ValueError):
        raise InputError(Issue(field, "must be a list of [tokens, efficiency] pairs")) from None
    if not all(t >= 1 and 0 < e <= 1 for t, e in pts):
        raise InputError(Issue(field, "needs tokens >= 1 and efficiencies in (0, 1]"))
    return pts


def from_dict(raw: dict) -> EfficiencyProfile:
    bw = float(raw["bandwidth_efficiency"])
    compute = _points(raw.get("compute_efficiency") or [], "compute_efficiency")
    if not compute:
        raise InputError(Issue("compute_efficiency", "needs at least one [tokens, efficiency] point"))
    return EfficiencyProfile(
        name=raw["name"],
        gpu=raw.get("gpu"),
        description=raw.get("description", ""),
        bandwidth_efficiency=bw,
        kv_bandwidth_efficiency=float(raw.get("kv_bandwidth_efficiency") or bw),
        compute_efficiency_points=compute,
        fp8_compute_efficiency_points=_points(raw.get("fp8_compute_efficiency") or [], "fp8_compute_efficiency"),
        step_overhead_s=float(raw.get("step_overhead_s", 0.0)),
        interconnect_efficiency=float(raw.get("interconnect_efficiency", 0.8)),
        allreduce_latency_s=float(raw.get("allreduce_latency_s", 0.0)),
        provenance_kind=str(raw.get("provenance", {}).get("kind", "unknown")),
    )


def load_profile(name: str = DEFAULT_PROFILE) -> EfficiencyProfile:
    # A profile is a name from the catalog, never a path: '../models/x' or '/etc/x' would join
    # onto the folder and read any JSON file.
    issue = check_name("profile", name, "an efficiency profile name")
    if issue is not None:
        raise InputError(issue)
    return _load_profile(name)


@cache
def _load_profile(name: str) -> EfficiencyProfile:
    for d in _profile_dirs():
        path = d / f"{name}.json"
        if path.is_file():
            return from_dict(json.loads(path.read_text()))
    raise InputError(Issue("profile", f"unknown profile {str(name)[:40]!r}; choose one of {', '.join(profile_names())}"))
