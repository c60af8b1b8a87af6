"""Assembles a profile from raw measurements: fits, provenance, and the human-readable summary."""

from __future__ import annotations

import json
import re
from pathlib import Path

from . import METHOD_VERSION
from .catalog import PROFILE_DIR, Datasheet, ModelShapes
from .fit import (
    Denominators,
    allreduce_fit,
    as_efficiency,
    attention_curve,
    gemm_model_curves,
    lm_head_curve,
    overhead_line,
    plateau_rate,
    round_sig,
)
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

    _fit_attention(measurements.get("attention", {}), denominators, fields, notes)
    _fit_mla(measurements.get("mla_attention"), denominators, fields, notes)
    _fit_gemm(measurements.get("gemm", {}), models, denominators, fields, notes, measurements.get("moe"))
    _fit_tp(measurements.get("tp"), denominators, fields, notes)
    _fit_overhead(measurements.get("overhead", {}), gpu_id, fields, notes)
    _note_telemetry(measurements.get("telemetry"), notes)
    host_bound = measurements.get("timing", {}).get("host_bound_batches", 0)
    if host_bound:
        notes.append(f"timing: {host_bound} timed batches were enqueued slower than the GPU ran them (the spin "
                     "adapted after each); their per-call times may include host time and read low")

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


def _fit_attention(att: dict, den: Denominators, fields: dict, notes: list[str]) -> None:
    layouts = [lay for lay in att.get("layouts", []) if lay.get("layout", "gqa") == "gqa"]
    if not layouts:
        notes.append("attention_kv_efficiency, kv_bandwidth_efficiency: not measured; sim falls back to "
                     "bandwidth_efficiency" + (f" ({att['error']})" if att.get("error") else ""))
        return
    primary = layouts[0]
    if not primary.get("check", {}).get("passed"):
        notes.append(f"attention_kv_efficiency, kv_bandwidth_efficiency: NOT fitted: the paged attention kernel failed its "
                     f"correctness check on {primary['model']} ({primary.get('check')}); sim falls back to bandwidth_efficiency")
        return
    curve = attention_curve(primary.get("points", []), den.hbm_bytes_per_s, notes)
    if not curve:
        notes.append(f"attention_kv_efficiency: no point measured on {primary['model']} (budget or memory); "
                     "sim falls back to bandwidth_efficiency")
        return
    fields["attention_kv_efficiency"] = curve
    fields["kv_bandwidth_efficiency"] = max(e for _, e in curve)
    if primary["check"].get("kernel_version") == "v1":
        notes.append("attention_kv_efficiency: kernel version 2 failed its correctness check; version 1 (slower) measured: "
                     f"{(primary.get('checks') or [{}])[0]}")
    version = primary["check"].get("kernel_version", "-")
    notes.append(f"attention_kv_efficiency: fused paged decode attention (kernel {version}) on {primary['model']} "
                 f"({primary['kv_heads']} KV heads, group {primary['q_heads_per_kv_head']}, head_dim {primary['head_dim']}, "
                 f"check max rel err {primary['check'].get('max_rel_err', float('nan')):.2e}), best over batch "
                 f"{sorted({p['batch'] for p in primary['points']})} at each context, over "
                 f"{den.hbm_bytes_per_s / 1e9:.0f} GB/s; kv_bandwidth_efficiency is its plateau")
    for other in layouts[1:]:
        pts = other.get("points", [])
        if pts:
            best = max(p["bytes_per_s"] for p in pts)
            notes.append(f"attention cross-check {other['model']} (group {other['q_heads_per_kv_head']}): best KV read "
                         f"{best / 1e9:.0f} GB/s = {best / den.hbm_bytes_per_s:.3f} of datasheet (not fitted)")


# Below this fraction of the GQA kernel's KV plateau, the MLA kernel is taken to be bound by its own
# arithmetic rather than by reading the cache (see _fit_mla), and its curve is not given to sim.
MLA_MIN_FRACTION_OF_GQA = 0.5


def _fit_mla(section: dict | None, den: Denominators, fields: dict, notes: list[str]) -> None:
    """mla_attention_kv_efficiency from the MLA layout (benchmarks/mla.py), when it was measured and
    its kernel passed the float64 check; otherwise a note says why sim keeps the GQA curve for MLA."""
    if section is None:
        return
    layouts = [lay for lay in section.get("layouts", []) if lay.get("layout") == "mla"]
    if not layouts:
        notes.append("mla_attention_kv_efficiency: not measured (" + (section.get("error") or "no MLA layout in the plan")
                     + "); sim uses the GQA attention curve for MLA models")
        return
    lay = layouts[0]
    if not lay.get("check", {}).get("passed"):
        notes.append(f"mla_attention_kv_efficiency: NOT fitted: the MLA kernel failed on {lay['model']} "
                     f"({lay.get('error') or lay.get('check')}); sim uses the GQA attention curve for MLA models")
        return
    curve = attention_curve(lay.get("points", []), den.hbm_bytes_per_s, notes)
    if not curve:
        notes.append(f"mla_attention_kv_efficiency: no point measured on {lay['model']} (budget or memory); sim uses "
                     "the GQA attention curve for MLA models")
        return
    best = max(lay["points"], key=lambda p: p["bytes_per_s"])
    measured = (f"absorbed MLA decode (paged_mla_kernel.py, CUDA cores, fp32 accumulate) on {lay['model']}, "
                f"{lay['q_heads']} heads per GPU (TP {lay['tp']}), latent {lay['latent_dim']} elements, check max rel err "
                f"{lay['check'].get('max_rel_err', float('nan')):.2e}; best {best['bytes_per_s'] / 1e9:.0f} GB/s at "
                f"B={best['batch']} L={best['context_tokens']} while doing {best.get('flops_per_s', 0.0) / 1e12:.1f} TFLOP/s")
    gqa = fields.get("kv_bandwidth_efficiency")
    mla_best = max(e for _, e in curve)
    if gqa is not None and mla_best < MLA_MIN_FRACTION_OF_GQA * gqa:
        # All heads of an MLA layer share one latent row, so its kernel does ~16x the arithmetic per
        # KV byte of a GQA kernel; ours does it on CUDA cores and is bound by that, not by reading KV.
        # Serving kernels (FlashMLA: ~3000 GB/s memory-bound on H800, github.com/deepseek-ai/FlashMLA
        # README) do it on tensor cores, so the GQA curve is the nearer estimate of their KV read.
        notes.append(f"mla_attention_kv_efficiency: NOT fitted: {measured}; its best {mla_best:.3f} of datasheet is under "
                     f"{MLA_MIN_FRACTION_OF_GQA:g} x the GQA kernel's {gqa:.3f}, so it measured its own CUDA-core arithmetic, "
                     "not the KV read; sim uses the GQA attention curve for MLA models (raw points kept in the measurements)")
        return
    fields["mla_attention_kv_efficiency"] = curve
    notes.append(f"mla_attention_kv_efficiency: {measured}; a kernel that is FLOP-limited there (tensor-core kernels such "
                 "as FlashMLA are not) makes this a lower bound")


def _alias_curves(per_model: dict, notes: list[str]) -> None:
    """Give catalog models with the same shapes as a measured one (DeepSeek-R1 = DeepSeek-V3) its curves."""
    from .catalog import load_models

    catalog = load_models()
    for other_id, other in catalog.items():
        if other_id in per_model:
            continue
        source = next((m for m in per_model if m in catalog and catalog[m].same_shapes(other)), None)
        if source is not None:
            per_model[other_id] = dict(per_model[source])
            notes.append(f"gemm_efficiency: {other_id} has {source}'s shapes; its curves are {source}'s")


def _fit_gemm(gemm: dict, models: list[ModelShapes], den: Denominators, fields: dict, notes: list[str],
              moe: dict | None = None) -> None:
    points = gemm.get("points", [])
    curves = gemm_model_curves(points, "bf16", den.bf16_flops, notes)
    if not curves:
        raise FitError("no model has all four projection GEMMs measured in bf16: compute_efficiency cannot be fitted")
    per_model: dict = {m: {"bf16": c} for m, c in curves.items()}
    if moe:
        moe_curves = gemm_model_curves(moe.get("points", []), "bf16", den.bf16_flops, notes, moe.get("model_shapes", {}))
        for m, c in moe_curves.items():
            per_model[m] = {"bf16": c}
        if moe_curves:
            notes.append(f"gemm_efficiency: MoE layers of {', '.join(moe_curves)}: attention projections and the routed "
                         f"experts' GEMMs at their token counts ({moe.get('routing')}; {moe.get('grouping')}), time-weighted")
        for skipped in moe.get("skipped_models", []):
            notes.append(f"gemm_efficiency: MoE {skipped['model']} not measured: {skipped['reason']}")
        if moe.get("error"):
            notes.append(f"gemm_efficiency: the MoE benchmark failed ({moe['error']}); MoE models use compute_efficiency")
    if den.fp8_flops:
        for m, c in gemm_model_curves(points, "fp8", den.fp8_flops, notes).items():
            per_model.setdefault(m, {})["fp8"] = c
    _alias_curves(per_model, notes)
    fields["gemm_efficiency"] = per_model
    order = [m.id for m in models if m.id in curves]
    if not order:  # measurements of another plan (--from-measurements with other --backend, --quick or --model)
        raise FitError(f"the measured GEMM models ({', '.join(sorted(curves))}) are none of this plan's "
                       f"({', '.join(m.id for m in models)}): fit with the options the measurements were taken with")
    default = order[0]
    fields["compute_efficiency"] = curves[default]
    notes.append(f"gemm_efficiency: bf16 projection GEMMs (qkv, o, gate_up, down; time-weighted) of {', '.join(order)} "
                 f"over {den.bf16_flops / 1e12:.1f} TFLOP/s; compute_efficiency (the default for other models) is "
                 f"{default}'s curve")
    for skipped in gemm.get("skipped_models", []):
        notes.append(f"gemm_efficiency: {skipped['model']} not measured: {skipped['reason']}")
    lm = lm_head_curve(points, default, den.bf16_flops, notes)
    if lm:
        fields["lm_head_efficiency"] = lm
    fp8 = per_model.get(default, {}).get("fp8")
    if fp8:
        fields["fp8_compute_efficiency"] = fp8
    else:
        notes.append(f"fp8_compute_efficiency: {gemm.get('fp8') or 'not measured'}")


def _fit_tp(section: dict | None, den: Denominators, fields: dict, notes: list[str]) -> None:
    """tp_gemm_efficiency[model][tp]["bf16"] from the TP-sharded sweep (benchmarks/tp.py)."""
    if section is None:
        return
    out: dict = {}
    for tp in section.get("sizes", []):
        pts = [p for p in section.get("points", []) if p.get("tp") == tp]
        for model, curve in gemm_model_curves(pts, "bf16", den.bf16_flops, notes, label=f"tp_gemm_efficiency tp={tp}").items():
            out.setdefault(model, {})[str(tp)] = {"bf16": curve}
    if out:
        fields["tp_gemm_efficiency"] = out
        measured = "; ".join(m + " (TP " + ", ".join(sorted(t, key=int)) + ")" for m, t in out.items())
        notes.append(f"tp_gemm_efficiency: per-rank projection GEMMs (qkv, gate_up split by columns; o, down by rows) of "
                     f"{measured}, bf16, over one GPU's "
                     f"{den.bf16_flops / 1e12:.1f} TFLOP/s; sim uses them when tensor_parallel matches")
    else:
        notes.append("tp_gemm_efficiency: not measured (" + (section.get("error") or "no TP point") + "); sim uses the "
                     "unsharded curves at every TP")
    for skipped in section.get("skipped", []):
        notes.append(f"tp_gemm_efficiency: {skipped['model']} TP {skipped['tp']} not measured: {skipped['reason']}")


def _published_step_overhead(gpu_id: str | None) -> tuple[float, str]:
    if gpu_id:
        path = PROFILE_DIR / f"{gpu_id}-published.json"
        if path.is_file():
            return float(json.loads(path.read_text()).get("step_overhead_s", 0.0)), f"the published profile {path.stem}'s value"
    return 0.0, "the textbook value 0 s"


def _fit_overhead(ov: dict, gpu_id: str | None, fields: dict, notes: list[str]) -> None:
    points = [p for p in ov.get("points", []) if p.get("variant") == "cuda-graph" and "time_s" in p]
    try:
        a, b = overhead_line(points)
    except ValueError as exc:
        value, source = _published_step_overhead(gpu_id)
        fields["step_overhead_s"] = value
        notes.append(f"step_overhead_s: NOT measured ({ov.get('graph') or exc}); {source} kept, no kernel_overhead_s "
                     "(no eager fallback)")
        return
    if a < 0:
        notes.append(f"step_overhead_s: the line's intercept {a * 1e6:.2f} us is negative; clamped to 0")
        a = 0.0
    if b < 0:
        notes.append(f"kernel_overhead_s: the line's slope {b * 1e9:.1f} ns is negative; clamped to 0")
        b = 0.0
    fields["step_overhead_s"] = round_sig(a)
    fields["kernel_overhead_s"] = round_sig(b)
    ns = [p["kernels"] for p in points]
    notes.append(f"step_overhead_s, kernel_overhead_s: least-squares line over CUDA-graph replays of {ns} empty kernels "
                 f"+ synchronise (host clock): {a * 1e6:.2f} us + n x {b * 1e9:.1f} ns")


def _note_telemetry(tel: dict | None, notes: list[str]) -> None:
    if not tel:
        return
    if tel.get("available") is False:
        notes.append(f"telemetry: NVML unavailable ({tel.get('reason')}); clocks and throttling not recorded")
        return
    if tel.get("throttled"):
        notes.append(f"telemetry: THROTTLING seen during the run ({', '.join(tel.get('throttle_reasons_seen', []))}); "
                     "figures may be low")


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
        "notes": notes,
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
    if "attention_kv_efficiency" in profile:
        lines.append("  attention_kv_efficiency  " + ", ".join(f"L={int(c)}: {e}" for c, e in profile["attention_kv_efficiency"]))
    for model, curves in profile.get("gemm_efficiency", {}).items():
        for dtype, curve in curves.items():
            lines.append(f"  gemm_efficiency {model} {dtype}: " + ", ".join(f"M={int(m)}: {e}" for m, e in curve))
    if "mla_attention_kv_efficiency" in profile:
        lines.append("  mla_attention_kv_efficiency  " + ", ".join(f"L={int(c)}: {e}" for c, e in profile["mla_attention_kv_efficiency"]))
    for model, by_tp in profile.get("tp_gemm_efficiency", {}).items():
        for tp, curves in by_tp.items():
            for dtype, curve in curves.items():
                lines.append(f"  tp_gemm_efficiency {model} tp={tp} {dtype}: " + ", ".join(f"M={int(m)}: {e}" for m, e in curve))
    if "lm_head_efficiency" in profile:
        lines.append("  lm_head_efficiency       " + ", ".join(f"M={int(m)}: {e}" for m, e in profile["lm_head_efficiency"]))
    if "kernel_overhead_s" in profile:
        lines.append(f"  kernel_overhead_s        {profile['kernel_overhead_s']}")
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
