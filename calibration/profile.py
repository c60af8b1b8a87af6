"""Assembles a profile from raw measurements: fits, provenance, and the human-readable summary."""

from __future__ import annotations

import json
import re
from pathlib import Path

from . import METHOD_VERSION
from .catalog import PROFILE_DIR, Datasheet, ModelShapes
from .fit import Denominators, allreduce_fit, as_efficiency, compute_curve, plateau_rate, round_sig, step_overhead_s
from .plan import Plan
from .schema import CPU_CHECK_PREFIX, SCHEMA_VERSION

TEXTBOOK_INTERCONNECT_EFFICIENCY = 0.80  # sim/data/profiles/textbook.json
TEXTBOOK_ALLREDUCE_LATENCY_S = 0.0


class FitError(RuntimeError):
    """The run lacks a measurement the profile cannot do without."""


def datasheet_denominators(sheet: Datasheet) -> Denominators:
    return Denominators(
        hbm_bytes_per_s=sheet.hbm_bandwidth_bytes_per_s,
        bf16_flops=sheet.bf16_dense_flops,
        fp8_flops=sheet.fp8_dense_flops,
        interconnect_bytes_per_s=sheet.interconnect_bytes_per_s,
        source=f"datasheet figures of {sheet.id} ({sheet.name}) in sim/data/gpus.json",
    )


def self_denominators(measurements: dict) -> Denominators:
    """The CPU check's denominators: the best rates it measured (so efficiencies land in (0, 1])."""
    hbm = measurements.get("hbm", {})
    rates = [p["bytes_per_s"] for key in ("read", "copy") for p in hbm.get(key, [])]
    rates += [p["bytes_per_s"] for p in measurements.get("attention", {}).get("points", [])]
    flops = [p["flops_per_s"] for p in measurements.get("gemm", {}).get("points", [])]
    if not rates or not flops:
        raise FitError("the CPU check measured no bandwidth or no GEMM: nothing to normalise by")
    return Denominators(max(rates), max(flops), None, 1.0,
                        "self-normalised: the best rate this CPU run measured (no datasheet applies)")


def _published_fallback(gpu_id: str | None) -> tuple[float, float, str]:
    """Interconnect figures for a run that could not measure them (one GPU, or the CPU check)."""
    if gpu_id:
        path = PROFILE_DIR / f"{gpu_id}-published.json"
        if path.is_file():
            raw = json.loads(path.read_text())
            return (raw["interconnect_efficiency"], raw["allreduce_latency_s"],
                    f"not measured here; taken from the published profile {path.stem}")
    return (TEXTBOOK_INTERCONNECT_EFFICIENCY, TEXTBOOK_ALLREDUCE_LATENCY_S,
            "not measured here; the textbook profile's values (0.80, 0 s) are kept")


def fit_profile(measurements: dict, plan: Plan, models: list[ModelShapes], denominators: Denominators,
                gpu_id: str | None) -> tuple[dict, list[str]]:
    """The profile's efficiency fields and the notes that explain each."""
    notes: list[str] = []
    fields: dict = {}

    read = measurements.get("hbm", {}).get("read", [])
    if not read:
        raise FitError("no HBM read measurement: bandwidth_efficiency cannot be fitted")
    rate, sizes = plateau_rate(read, "size_bytes", "bytes_per_s", plan.hbm_plateau_min_bytes)
    fields["bandwidth_efficiency"], cap = as_efficiency(rate, denominators.hbm_bytes_per_s)
    notes.append(f"bandwidth_efficiency: best streaming read {rate / 1e9:.1f} GB/s over sizes "
                 f"{sizes[0]}..{sizes[-1]} B / {denominators.hbm_bytes_per_s / 1e9:.1f} GB/s")
    notes += [f"bandwidth_efficiency: {cap}"] if cap else []

    attention_points = measurements.get("attention", {}).get("points", [])
    if attention_points:
        best = max(attention_points, key=lambda p: p["bytes_per_s"])
        fields["kv_bandwidth_efficiency"], cap = as_efficiency(best["bytes_per_s"], denominators.hbm_bytes_per_s)
        notes.append(f"kv_bandwidth_efficiency: best decode-attention KV read {best['bytes_per_s'] / 1e9:.1f} GB/s "
                     f"(batch {best['batch']}, {best['context_tokens']} tokens)")
        notes += [f"kv_bandwidth_efficiency: {cap}"] if cap else []
    else:
        notes.append("kv_bandwidth_efficiency: not measured; sim falls back to bandwidth_efficiency")

    gemm_points = measurements.get("gemm", {}).get("points", [])
    curve = compute_curve(gemm_points, models, "bf16", denominators.bf16_flops)
    if not curve:
        raise FitError("no bf16 GEMM measurement: compute_efficiency cannot be fitted")
    fields["compute_efficiency"] = curve
    notes.append(f"compute_efficiency: bf16 GEMMs of {', '.join(m.id for m in models)}, aggregated per layer "
                 f"(fit.layer_weights), over {denominators.bf16_flops / 1e12:.1f} TFLOP/s")
    if denominators.fp8_flops:
        fp8 = compute_curve(gemm_points, models, "fp8", denominators.fp8_flops)
        if fp8:
            fields["fp8_compute_efficiency"] = fp8
    if "fp8_compute_efficiency" not in fields:
        notes.append(f"fp8_compute_efficiency: {measurements.get('gemm', {}).get('fp8') or 'not measured'}")

    try:
        fields["step_overhead_s"], basis = step_overhead_s(measurements.get("overhead", {}).get("points", []))
        notes.append(f"step_overhead_s: {basis}")
    except ValueError:
        fields["step_overhead_s"] = 0.0
        notes.append("step_overhead_s: not measured; 0 s kept (the textbook value)")

    ar_points = measurements.get("allreduce", {}).get("points", [])
    if ar_points and denominators.interconnect_bytes_per_s > 1.0:
        eff, latency, ar_notes = allreduce_fit(ar_points, denominators.interconnect_bytes_per_s)
        fields["interconnect_efficiency"], fields["allreduce_latency_s"] = eff, latency
        notes += [f"interconnect: {n}" for n in ar_notes]
    else:
        eff, latency, why = _published_fallback(gpu_id)
        fields["interconnect_efficiency"], fields["allreduce_latency_s"] = eff, latency
        reason = measurements.get("allreduce", {}).get("skipped", "no all-reduce points")
        notes.append(f"interconnect_efficiency, allreduce_latency_s: {why} ({reason})")
    return fields, notes


def build_profile(*, name: str, gpu_id: str | None, kind: str, description: str, fields: dict,
                  notes: list[str], measurements: dict, device_info: dict, denominators: Denominators,
                  plan: Plan, models: list[ModelShapes], command: str, date_utc: str, duration_s: float,
                  skipped: list[str]) -> dict:
    provenance = {
        "kind": kind,
        **device_info,
        "date_utc": date_utc,
        "command": command,
        "method_version": METHOD_VERSION,
        "plan": plan.name,
        "budget_s": plan.budget_s,
        "duration_s": round_sig(duration_s, 3),
        "models": [m.id for m in models],
        "denominators": {
            "source": denominators.source,
            "hbm_bytes_per_s": denominators.hbm_bytes_per_s,
            "bf16_flops": denominators.bf16_flops,
            "fp8_flops": denominators.fp8_flops,
            "interconnect_bytes_per_s": denominators.interconnect_bytes_per_s,
        },
        "fit_notes": notes,
        "skipped": skipped,
    }
    if kind == "cpu-pipeline-check":
        provenance["warning"] = ("CPU pipeline check: tiny sizes on the NumPy backend, self-normalised. "
                                 "It checks the code and the schema; it is not a GPU measurement.")
    profile = {
        "schema_version": SCHEMA_VERSION,
        "name": name,
        "gpu": gpu_id,
        "description": description,
        **fields,
        "provenance": provenance,
        "measurements": measurements,
    }
    return profile


def cpu_check_name(stem: str) -> str:
    return stem if stem.startswith(CPU_CHECK_PREFIX) else CPU_CHECK_PREFIX + stem


def summary_lines(profile: dict) -> list[str]:
    lines = [f"profile {profile['name']} (gpu: {profile['gpu']}, kind: {profile['provenance']['kind']})",
             f"  bandwidth_efficiency     {profile['bandwidth_efficiency']}"]
    if "kv_bandwidth_efficiency" in profile:
        lines.append(f"  kv_bandwidth_efficiency  {profile['kv_bandwidth_efficiency']}")
    lines.append("  compute_efficiency       " + ", ".join(f"M={int(m)}: {e}" for m, e in profile["compute_efficiency"]))
    if "fp8_compute_efficiency" in profile:
        lines.append("  fp8_compute_efficiency   " + ", ".join(f"M={int(m)}: {e}" for m, e in profile["fp8_compute_efficiency"]))
    lines += [f"  step_overhead_s          {profile['step_overhead_s']}",
              f"  interconnect_efficiency  {profile['interconnect_efficiency']}",
              f"  allreduce_latency_s      {profile['allreduce_latency_s']}"]
    return lines


_FLAT_LIST = re.compile(r"\[\s+([-0-9.eE+,\s]*?)\s+\]")


def dumps(data: dict) -> str:
    """JSON with two-space indentation, but lists of plain numbers (the [tokens, efficiency] pairs)
    on one line so a curve reads as a column of points."""
    text = json.dumps(data, indent=2)
    return _FLAT_LIST.sub(lambda m: "[" + re.sub(r"\s*\n\s*", " ", m.group(1)) + "]", text) + "\n"


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(data))
