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
    # schema v2 (all optional; see TEAM.md's profile contract and docs/sim.md)
    step_model: str = "whole_step"  # "whole_step": seed 002's max over the whole step; "per_kernel": sum of kernels
    gemm_efficiency: tuple[tuple[str, str, tuple[tuple[float, float], ...]], ...] = ()  # (model id, dtype, [(M, eff)])
    lm_head_efficiency_points: tuple[tuple[float, float], ...] = ()
    attention_kv_efficiency_points: tuple[tuple[float, float], ...] = ()  # (context tokens per sequence, eff)
    prefill_attention_efficiency: float | None = None
    kernel_overhead_s: float = 0.0
    # Fraction of HBM bandwidth a weight GEMM reaches when its weights are stored in this dtype
    # (weight-only INT4/INT8 dequantize in the kernel; block-scaled FP8 reads scales too).
    quantized_bandwidth_efficiency: tuple[tuple[str, float], ...] = ()
    notes: tuple[str, ...] = ()

    def compute_efficiency(self, tokens: float, fp8: bool = False) -> float:
        """Achieved fraction of the dense peak for a step of `tokens` tokens: piecewise linear in
        log2(tokens) between measured points, clamped at both ends."""
        points = self.fp8_compute_efficiency_points if fp8 and self.fp8_compute_efficiency_points else self.compute_efficiency_points
        return interpolate_log2(points, tokens)

    @property
    def per_kernel(self) -> bool:
        return self.step_model == "per_kernel"

    def gemm_points(self, model_id: str, fp8: bool) -> tuple[tuple[float, float], ...]:
        """The model's own projection-GEMM curve (v2), else the profile's generic curve."""
        want = "fp8" if fp8 else "bf16"
        for model, dtype, points in self.gemm_efficiency:
            if model == model_id and dtype == want:
                return points
        return self.fp8_compute_efficiency_points if fp8 and self.fp8_compute_efficiency_points else self.compute_efficiency_points

    def weight_bandwidth_efficiency(self, weight_dtype: str) -> float:
        for dtype, eff in self.quantized_bandwidth_efficiency:
            if dtype == weight_dtype:
                return eff
        return self.bandwidth_efficiency

    def attention_kv_efficiency(self, context_tokens: float | None) -> float:
        if context_tokens is None or not self.attention_kv_efficiency_points:
            return self.kv_bandwidth_efficiency
        return interpolate_log2(self.attention_kv_efficiency_points, max(context_tokens, 1.0))


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


def _fraction(raw: dict, field: str) -> float | None:
    value = raw.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise InputError(Issue(field, "must be a number in (0, 1]"))
    return float(value)


def _gemm_curves(raw) -> tuple:
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise InputError(Issue("gemm_efficiency", 'must map model ids to {"bf16": [[M, eff], ...], "fp8": [...]}'))
    curves = []
    for model, by_dtype in raw.items():
        if not isinstance(by_dtype, dict):
            raise InputError(Issue("gemm_efficiency", f"entry {str(model)[:40]!r} must map dtypes to [[M, eff], ...] lists"))
        for dtype, points in by_dtype.items():
            curves.append((str(model), str(dtype), _points(points, "gemm_efficiency")))
    return tuple(curves)


STEP_MODELS = ("whole_step", "per_kernel")


def from_dict(raw: dict) -> EfficiencyProfile:
    bw = float(raw["bandwidth_efficiency"])
    compute = _points(raw.get("compute_efficiency") or [], "compute_efficiency")
    if not compute:
        raise InputError(Issue("compute_efficiency", "needs at least one [tokens, efficiency] point"))
    # v1 profiles are seed 002's whole-step roofline; v2 profiles carry per-kernel efficiencies.
    default_model = "per_kernel" if int(raw.get("schema_version", 1)) >= 2 else "whole_step"
    step_model = raw.get("step_model", default_model)
    if step_model not in STEP_MODELS:
        raise InputError(Issue("step_model", f"must be one of {', '.join(STEP_MODELS)}"))
    quantized = raw.get("quantized_bandwidth_efficiency") or {}
    if not isinstance(quantized, dict) or not all(isinstance(v, int | float) and 0 < v <= 1 for v in quantized.values()):
        raise InputError(Issue("quantized_bandwidth_efficiency", "must map weight dtypes to fractions in (0, 1]"))
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
        step_model=step_model,
        gemm_efficiency=_gemm_curves(raw.get("gemm_efficiency")),
        lm_head_efficiency_points=_points(raw.get("lm_head_efficiency") or [], "lm_head_efficiency"),
        attention_kv_efficiency_points=_points(raw.get("attention_kv_efficiency") or [], "attention_kv_efficiency"),
        prefill_attention_efficiency=_fraction(raw, "prefill_attention_efficiency"),
        kernel_overhead_s=float(raw.get("kernel_overhead_s", 0.0)),
        quantized_bandwidth_efficiency=tuple((str(k), float(v)) for k, v in quantized.items()),
        notes=tuple(str(n) for n in raw.get("notes") or ()),
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
