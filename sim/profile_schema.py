"""The efficiency-profile schema (versions 1 and 2), checked with the standard library only.

    validate_profile(profile) -> list of problems; empty when the profile is valid.

One rule in one place: sim's loader (sim/profiles.py) runs it on every profile file before using
it (a file that fails is never listed or loaded, and loading it by name says which file and which
problem), and the calibration suite (kvlab.calibration) runs it before writing one.

Each message starts with the field it is about and says what is allowed, e.g.
"bandwidth_efficiency: must be a number in (0, 1], got 1.3". The rules:

  schema_version           1 or 2 (2 allows the fields below marked v2)
  name                     non-empty string, equal to the file stem (when file_stem is given)
  gpu                      null or a catalog id (KNOWN_GPU_IDS, plus any id in sim/data/gpus.json)
  description              string
  bandwidth_efficiency     number in (0, 1]: large streaming HBM reads / datasheet bandwidth
  kv_bandwidth_efficiency  optional, number in (0, 1]: decode-attention KV reads / datasheet bandwidth
  compute_efficiency       non-empty list of [tokens, efficiency]: tokens >= 1, strictly increasing,
                           efficiency in (0, 1] (dense bf16 GEMM FLOP/s / datasheet bf16 peak)
  fp8_compute_efficiency   optional, same shape, against the fp8 peak
  step_overhead_s          number >= 0
  interconnect_efficiency  number in (0, 1]: all-reduce bus bandwidth / datasheet per-direction link
  host_link_efficiency     v2, optional: number in (0, 1]: all-reduce bus bandwidth over PCIe / the
                           datasheet host link, for a ring that leaves a card's NVLink-bridged pair
                           (interconnect_gpus); default interconnect_efficiency
  allreduce_latency_s      number >= 0
  gemm_efficiency          v2, optional: {model id: {"bf16"|"fp8": curve}}, curves as compute_efficiency
  lm_head_efficiency       v2, optional: curve
  attention_kv_efficiency  v2, optional: [[context_tokens, efficiency]], same rules as a curve
  prefill_attention_efficiency  v2, optional: number in (0, 1]
  moe_half_efficiency_width  v2, optional: number >= 0: the width of one routed expert's slice on a rank
                           (intermediate size / tp) at which the fused expert GEMMs reach half a dense
                           GEMM's bandwidth and rate (default 0: as efficient as a dense GEMM)
  kernel_overhead_s        v2, optional: number >= 0 (seconds per kernel inside a CUDA-graph replay)
  latency_kernel_s         v2, optional: number >= 0: seconds of each latency-bound kernel an MoE or MLA
                           layer runs beyond a dense layer's (Machine.extra_kernels_per_step; default 0)
  mla_attention_kv_efficiency  v2, optional: [[context_tokens, efficiency]] of an MLA (latent-cache)
                           decode kernel; sim uses it for MLA models, else attention_kv_efficiency
  tp_gemm_efficiency       v2, optional: {model id: {"2"|"4"|"8"...: {"bf16"|"fp8": curve}}}, one GPU's
                           share of the TP-sharded projection GEMMs, over one GPU's peak
  step_model               v2, optional: "whole_step" or "per_kernel" (sim's step model; default per_kernel)
  quantized_bandwidth_efficiency  v2, optional: {weight dtype: number in (0, 1]}
  notes                    v2, optional: list of strings (every clamp or fallback of the fit)
  provenance               object with "kind" in PROVENANCE_KINDS, plus what that kind requires
                           (a measured v2 profile also: gpu_uuid, mig, driver, cuda, cupy, clocks,
                           throttle, kvlab_version, git_commit, date)
  measurements             optional object (required for measured and cpu-pipeline-check profiles)

A CPU pipeline check must never pass for a GPU profile: its gpu is null and its name starts
with "cpu-check-".
"""

from __future__ import annotations

import math

from .catalog import gpu_ids as _catalog_gpu_ids

SCHEMA_VERSION = 2
SUPPORTED_SCHEMA_VERSIONS = (1, 2)
PROVENANCE_KINDS = ("measured", "published", "reference", "cpu-pipeline-check")
CPU_CHECK_PREFIX = "cpu-check-"

REQUIRED_FIELDS = (
    "schema_version", "name", "gpu", "description", "bandwidth_efficiency", "compute_efficiency",
    "step_overhead_s", "interconnect_efficiency", "allreduce_latency_s", "provenance",
)
OPTIONAL_FIELDS = ("kv_bandwidth_efficiency", "fp8_compute_efficiency", "measurements")
V2_FIELDS = ("gemm_efficiency", "lm_head_efficiency", "attention_kv_efficiency", "prefill_attention_efficiency",
             "kernel_overhead_s", "notes", "mla_attention_kv_efficiency", "tp_gemm_efficiency", "step_model",
             "quantized_bandwidth_efficiency", "moe_half_efficiency_width", "latency_kernel_s",
             "host_link_efficiency")
GEMM_DTYPES = ("bf16", "fp8")
STEP_MODELS = ("whole_step", "per_kernel")

# GPU ids the profile schema accepts (sim/data/gpus.json may list only some of them so far).
KNOWN_GPU_IDS = (
    "a100-80", "a100-40", "a100-pcie", "h100-sxm", "h100-pcie", "h200", "h20", "b200", "b300", "gb200", "gb300",
    "l40s", "l4", "a10", "rtx-4090", "rtx-pro-6000", "mi300x", "mi325x", "mi355x",
)

# What provenance must hold for each kind.
MEASURED_PROVENANCE = (
    "device_name", "nvidia_driver_version", "cuda_runtime_version", "cupy_version",
    "date_utc", "command", "method_version",
)
CPU_CHECK_PROVENANCE = ("device_name", "numpy_version", "date_utc", "command", "method_version")
MEASURED_V2_PROVENANCE = ("gpu_uuid", "mig", "driver", "cuda", "cupy", "clocks", "throttle", "kvlab_version",
                          "git_commit", "date")


def _gpu_ids() -> list[str]:
    ids = list(KNOWN_GPU_IDS)
    try:
        ids += [g for g in _catalog_gpu_ids() if g not in ids]
    except (OSError, ValueError, KeyError):  # the catalog is unreadable: the fixed list still applies
        pass
    return ids


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _check_fraction(profile: dict, field: str, errors: list[str]) -> None:
    x = profile[field]
    if not _is_number(x) or not 0 < x <= 1:
        errors.append(f"{field}: must be a number in (0, 1], got {x!r}")


def _check_nonnegative(profile: dict, field: str, errors: list[str]) -> None:
    x = profile[field]
    if not _is_number(x) or x < 0:
        errors.append(f"{field}: must be a number >= 0 (seconds), got {x!r}")


def _check_curve(curve, field: str, errors: list[str]) -> None:
    if not isinstance(curve, list) or not curve:
        errors.append(f"{field}: must be a non-empty list of [tokens, efficiency] pairs, got {curve!r}")
        return
    previous = None
    for i, point in enumerate(curve):
        where = f"{field}[{i}]"
        if not isinstance(point, (list, tuple)) or len(point) != 2:
            errors.append(f"{where}: must be a [tokens, efficiency] pair, got {point!r}")
            continue
        tokens, eff = point
        if not _is_number(tokens) or tokens < 1:
            errors.append(f"{where}: tokens must be a number >= 1, got {tokens!r}")
            continue
        if not _is_number(eff) or not 0 < eff <= 1:
            errors.append(f"{where}: efficiency must be a number in (0, 1], got {eff!r}")
        if previous is not None and tokens <= previous:
            errors.append(f"{where}: tokens must be strictly increasing, got {tokens!r} after {previous!r}")
        previous = tokens


def _check_provenance(profile: dict, errors: list[str]) -> None:
    prov = profile["provenance"]
    if not isinstance(prov, dict):
        errors.append(f"provenance: must be an object, got {type(prov).__name__}")
        return
    kind = prov.get("kind")
    if kind not in PROVENANCE_KINDS:
        errors.append(f"provenance.kind: must be one of {', '.join(PROVENANCE_KINDS)}, got {kind!r}")
        return
    required = {"measured": MEASURED_PROVENANCE, "cpu-pipeline-check": CPU_CHECK_PROVENANCE}.get(kind, ())
    if kind == "measured" and profile.get("schema_version") == 2:
        required = required + MEASURED_V2_PROVENANCE
    for key in required:
        if not prov.get(key):
            errors.append(f"provenance.{key}: required for a {kind} profile")
    if kind == "published":
        citations = prov.get("citations")
        if not isinstance(citations, dict) or not citations:
            errors.append("provenance.citations: a published profile needs a citation for each figure (a non-empty object)")
    if kind == "reference" and not prov.get("source"):
        errors.append("provenance.source: required for a reference profile")
    if kind in ("measured", "cpu-pipeline-check") and not isinstance(profile.get("measurements"), dict):
        errors.append(f"measurements: a {kind} profile must carry its raw measurements (an object)")
    name = profile.get("name")
    if kind == "cpu-pipeline-check":
        if profile.get("gpu") is not None:
            errors.append(f"gpu: must be null for a cpu-pipeline-check profile, got {profile.get('gpu')!r}")
        if isinstance(name, str) and not name.startswith(CPU_CHECK_PREFIX):
            errors.append(f"name: a cpu-pipeline-check profile's name must start with {CPU_CHECK_PREFIX!r}, got {name!r}")
    elif isinstance(name, str) and name.startswith(CPU_CHECK_PREFIX):
        errors.append(f"name: the prefix {CPU_CHECK_PREFIX!r} is reserved for cpu-pipeline-check profiles, got {name!r} of kind {kind!r}")
    if kind == "measured" and profile.get("gpu") is None:
        errors.append("gpu: a measured profile must name the catalog GPU it was measured on")


def _check_dtype_curves(curves, where: str, errors: list[str]) -> None:
    if not isinstance(curves, dict) or not curves:
        errors.append(f"{where}: must be a non-empty object of dtype -> curve")
        return
    for dtype, curve in curves.items():
        if dtype not in GEMM_DTYPES:
            errors.append(f"{where}.{dtype}: dtype must be one of {', '.join(GEMM_DTYPES)}")
        _check_curve(curve, f"{where}.{dtype}", errors)


def _check_v2(profile: dict, errors: list[str]) -> None:
    if "gemm_efficiency" in profile:
        per_model = profile["gemm_efficiency"]
        if not isinstance(per_model, dict) or not per_model:
            errors.append(f"gemm_efficiency: must be a non-empty object of model id -> {{dtype: curve}}, got {per_model!r}"[:200])
        else:
            for model, curves in per_model.items():
                _check_dtype_curves(curves, f"gemm_efficiency.{model}", errors)
    if "tp_gemm_efficiency" in profile:
        per_model = profile["tp_gemm_efficiency"]
        if not isinstance(per_model, dict) or not per_model:
            errors.append(f"tp_gemm_efficiency: must be a non-empty object of model id -> {{tp: {{dtype: curve}}}}, "
                          f"got {per_model!r}"[:200])
        else:
            for model, by_tp in per_model.items():
                if not isinstance(by_tp, dict) or not by_tp:
                    errors.append(f"tp_gemm_efficiency.{model}: must be a non-empty object of tensor-parallel size -> curves")
                    continue
                for tp, curves in by_tp.items():
                    if not (isinstance(tp, str) and tp.isdigit() and int(tp) >= 2):
                        errors.append(f"tp_gemm_efficiency.{model}.{tp}: the key must be a tensor-parallel size >= 2, "
                                      "written as a string")
                        continue
                    _check_dtype_curves(curves, f"tp_gemm_efficiency.{model}.{tp}", errors)
    if "step_model" in profile and profile["step_model"] not in STEP_MODELS:
        errors.append(f"step_model: must be one of {', '.join(STEP_MODELS)}, got {profile['step_model']!r}")
    if "quantized_bandwidth_efficiency" in profile:
        q = profile["quantized_bandwidth_efficiency"]
        if not isinstance(q, dict) or not all(_is_number(v) and 0 < v <= 1 for v in q.values()):
            errors.append("quantized_bandwidth_efficiency: must map weight dtypes to numbers in (0, 1]")
    for field in ("lm_head_efficiency", "attention_kv_efficiency", "mla_attention_kv_efficiency"):
        if field in profile:
            _check_curve(profile[field], field, errors)
    if "prefill_attention_efficiency" in profile:
        _check_fraction(profile, "prefill_attention_efficiency", errors)
    for field in ("kernel_overhead_s", "moe_half_efficiency_width", "latency_kernel_s"):
        if field in profile:
            _check_nonnegative(profile, field, errors)
    if "notes" in profile:
        notes = profile["notes"]
        if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
            errors.append("notes: must be a list of strings")


def validate_profile(profile, file_stem: str | None = None) -> list[str]:
    """Problems with `profile` (a parsed JSON object), each naming its field; [] when valid."""
    if not isinstance(profile, dict):
        return [f"profile: must be a JSON object, got {type(profile).__name__}"]
    errors: list[str] = []
    for key in REQUIRED_FIELDS:
        if key not in profile:
            errors.append(f"{key}: required field is missing")
    version = profile.get("schema_version")
    allowed = set(REQUIRED_FIELDS) | set(OPTIONAL_FIELDS) | (set(V2_FIELDS) if version == 2 else set())
    for key in profile:
        if key not in allowed:
            errors.append(f"{key}: unknown field (schema version {version!r} allows {', '.join(sorted(allowed))})")
    if "schema_version" in profile and (isinstance(version, bool) or version not in SUPPORTED_SCHEMA_VERSIONS):
        errors.append(f"schema_version: must be 1 or 2, got {profile['schema_version']!r}")
    if "name" in profile:
        name = profile["name"]
        if not isinstance(name, str) or not name:
            errors.append(f"name: must be a non-empty string, got {name!r}")
        elif file_stem is not None and name != file_stem:
            errors.append(f"name: must equal the file stem {file_stem!r}, got {name!r}")
    if "gpu" in profile:
        gpu = profile["gpu"]
        known = _gpu_ids()
        if gpu is not None and gpu not in known:
            errors.append(f"gpu: must be null or one of {', '.join(known)}, got {gpu!r}")
    if "description" in profile and not isinstance(profile["description"], str):
        errors.append(f"description: must be a string, got {profile['description']!r}")
    for field in ("bandwidth_efficiency", "interconnect_efficiency", "host_link_efficiency"):
        if field in profile:
            _check_fraction(profile, field, errors)
    if "kv_bandwidth_efficiency" in profile:
        _check_fraction(profile, "kv_bandwidth_efficiency", errors)
    for field in ("step_overhead_s", "allreduce_latency_s"):
        if field in profile:
            _check_nonnegative(profile, field, errors)
    if "compute_efficiency" in profile:
        _check_curve(profile["compute_efficiency"], "compute_efficiency", errors)
    if "fp8_compute_efficiency" in profile:
        _check_curve(profile["fp8_compute_efficiency"], "fp8_compute_efficiency", errors)
    if "measurements" in profile and not isinstance(profile["measurements"], dict):
        errors.append(f"measurements: must be an object, got {type(profile['measurements']).__name__}")
    if version == 2:
        _check_v2(profile, errors)
    if "provenance" in profile:
        _check_provenance(profile, errors)
    return errors
