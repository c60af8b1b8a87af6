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
from .profile_schema import validate_profile

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
    # Seconds of each small kernel an MoE or MLA layer adds to a dense layer's (router top-k, block
    # alignment, expert sum; MLA's norms, latent batched GEMMs, concat, split-KV combine): too small
    # to reach any bandwidth or rate, so each costs a fixed time. A dense layer's own small kernels
    # sit inside the GEMM efficiencies fitted on dense steps. See Machine.extra_kernels_per_step.
    latency_kernel_s: float = 0.0
    # All-reduce bus bandwidth over PCIe / the datasheet host link, where a ring leaves a card's
    # NVLink-bridged pair (GPU.interconnect_gpus); None: interconnect_efficiency.
    host_link_efficiency: float | None = None
    # Width of one routed expert's slice on a rank (its intermediate size / tp) at which the fused
    # expert GEMMs reach half of a dense GEMM's bandwidth and rate: efficiency = w / (w + this).
    # 0: as efficient as a dense GEMM (the textbook). See Machine.moe_gemm_efficiency.
    moe_half_efficiency_width: float = 0.0
    # (context tokens, eff) of an MLA latent-cache decode kernel; MLA models use it when present
    mla_attention_kv_efficiency_points: tuple[tuple[float, float], ...] = ()
    # (model id, tp, dtype, [(M, eff)]): one GPU's TP-sharded projection GEMMs
    tp_gemm_efficiency: tuple[tuple[str, int, str, tuple[tuple[float, float], ...]], ...] = ()
    # Fraction of HBM bandwidth a weight GEMM reaches when its weights are stored in this dtype
    # (weight-only INT4/INT8 dequantize in the kernel; block-scaled FP8 reads scales too).
    quantized_bandwidth_efficiency: tuple[tuple[str, float], ...] = ()
    notes: tuple[str, ...] = ()
    provenance_date: str = ""  # YYYY-MM-DD of a measured profile's run (its provenance's date_utc)

    def compute_efficiency(self, tokens: float, fp8: bool = False) -> float:
        """Achieved fraction of the dense peak for a step of `tokens` tokens: piecewise linear in
        log2(tokens) between measured points, clamped at both ends."""
        points = self.fp8_compute_efficiency_points if fp8 and self.fp8_compute_efficiency_points else self.compute_efficiency_points
        return interpolate_log2(points, tokens)

    @property
    def per_kernel(self) -> bool:
        return self.step_model == "per_kernel"

    def gemm_points(self, model_id: str, fp8: bool, tp: int = 1) -> tuple[tuple[float, float], ...]:
        """The model's own TP-sharded curve at this tp (v2), else its own unsharded curve, else the
        profile's generic curve."""
        want = "fp8" if fp8 else "bf16"
        if tp > 1:
            for model, size, dtype, points in self.tp_gemm_efficiency:
                if model == model_id and size == tp and dtype == want:
                    return points
        for model, dtype, points in self.gemm_efficiency:
            if model == model_id and dtype == want:
                return points
        return self.fp8_compute_efficiency_points if fp8 and self.fp8_compute_efficiency_points else self.compute_efficiency_points

    def weight_bandwidth_efficiency(self, weight_dtype: str) -> float:
        for dtype, eff in self.quantized_bandwidth_efficiency:
            if dtype == weight_dtype:
                return eff
        return self.bandwidth_efficiency

    def attention_kv_efficiency(self, context_tokens: float | None, mla: bool = False) -> float:
        """Fraction of HBM bandwidth the decode-attention kernel reaches reading the cache at this
        context length: the MLA kernel's curve for an MLA model when the profile has one."""
        points = self.mla_attention_kv_efficiency_points if mla and self.mla_attention_kv_efficiency_points \
            else self.attention_kv_efficiency_points
        if context_tokens is None or not points:
            return self.kv_bandwidth_efficiency
        return interpolate_log2(points, max(context_tokens, 1.0))


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
    """Every profile a user can choose: read afresh on each call (a profile written by
    `kvlab calibrate` appears without a restart), skipping files that fail the schema check."""
    names: list[str] = []
    for d in _profile_dirs():
        for p in sorted(d.glob("*.json")):
            if p.stem not in names and not _file_problems(p):
                names.append(p.stem)
    return names


def published_profile(gpu_id: str) -> str:
    """The profile built from published measurements that fits `gpu_id`: the GPU's own
    (a100-pcie-published), else its chip's (a100-40 -> a100-published), else "textbook"."""
    names = profile_names()
    for key in (gpu_id, gpu_id.split("-")[0]):
        if f"{key}-published" in names:
            return f"{key}-published"
    return "textbook"


def best_profile(gpu_id: str) -> str:
    """The profile a prediction for `gpu_id` should use: one measured on that GPU (`kvlab
    calibrate` names it after the GPU), else the published one (published_profile)."""
    return gpu_id if gpu_id in profile_names() else published_profile(gpu_id)


_CHECKED: dict[Path, tuple[tuple[int, int], tuple[str, ...]]] = {}  # path -> ((mtime_ns, size), problems)


def _file_problems(path: Path) -> tuple[str, ...]:
    """What is wrong with the profile file at `path` (profile_schema's rules, plus unreadable or
    not JSON); () when it is valid. Remembered per (mtime, size), so listing stays a stat per file."""
    try:
        st = path.stat()
    except OSError as exc:
        return (f"cannot be read: {exc.strerror}",)
    key = (st.st_mtime_ns, st.st_size)
    known = _CHECKED.get(path)
    if known is not None and known[0] == key:
        return known[1]
    try:
        raw = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        problems: tuple[str, ...] = (f"cannot be read: {exc}",)
    except ValueError as exc:
        problems = (f"is not JSON: {exc}",)
    else:
        problems = tuple(validate_profile(raw, file_stem=path.stem))
    _CHECKED[path] = (key, problems)
    return problems


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


def _tp_curves(raw) -> tuple:
    if raw is None:
        return ()
    shape = 'must map model ids to {"2": {"bf16": [[M, eff], ...]}, ...}'
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        raise InputError(Issue("tp_gemm_efficiency", shape))
    curves = []
    for model, by_tp in raw.items():
        for tp, by_dtype in by_tp.items():
            if not (str(tp).isdigit() and isinstance(by_dtype, dict)):
                raise InputError(Issue("tp_gemm_efficiency", shape))
            for dtype, points in by_dtype.items():
                curves.append((str(model), int(tp), str(dtype), _points(points, "tp_gemm_efficiency")))
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
        provenance_date=str(raw.get("provenance", {}).get("date_utc") or "")[:10],
        step_model=step_model,
        gemm_efficiency=_gemm_curves(raw.get("gemm_efficiency")),
        lm_head_efficiency_points=_points(raw.get("lm_head_efficiency") or [], "lm_head_efficiency"),
        attention_kv_efficiency_points=_points(raw.get("attention_kv_efficiency") or [], "attention_kv_efficiency"),
        prefill_attention_efficiency=_fraction(raw, "prefill_attention_efficiency"),
        kernel_overhead_s=float(raw.get("kernel_overhead_s", 0.0)),
        moe_half_efficiency_width=float(raw.get("moe_half_efficiency_width", 0.0)),
        latency_kernel_s=float(raw.get("latency_kernel_s", 0.0)),
        host_link_efficiency=_fraction(raw, "host_link_efficiency"),
        mla_attention_kv_efficiency_points=_points(raw.get("mla_attention_kv_efficiency") or [], "mla_attention_kv_efficiency"),
        tp_gemm_efficiency=_tp_curves(raw.get("tp_gemm_efficiency")),
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
            # A file that fails the schema (profile_schema.py: one rule for sim and calibration) is
            # never used: the message names the file and its first problems.
            problems = _file_problems(path)
            if problems:
                more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
                raise InputError(Issue("profile", f"{path} is not a valid efficiency profile: "
                                                  + "; ".join(problems[:3]) + more))
            return from_dict(json.loads(path.read_text()))
    raise InputError(Issue("profile", f"unknown profile {str(name)[:40]!r}; choose one of {', '.join(profile_names())}"))
