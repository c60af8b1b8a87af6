"""Measured profile(s) against the shipped h200-published and textbook profiles, and what sim
predicts with each.

    python -m kvlab.calibration.compare PROFILE.json [PROFILE.json ...] [--gpu h200] [--json OUT]

Prints, for each measured profile: the HBM read plateau, bf16 GEMM TFLOP/s of Qwen3-8B's
projections by M, the decode-attention KV read efficiency by context, the step and per-kernel
overhead, the timing floor, throttling; then sim's decode step for Qwen3-8B at batch 1, 32 and
256 with a 4096-token context (and prefill of 4096 tokens) under textbook, <gpu>-published and each
measured profile. Needs no GPU: it reads JSON and runs sim.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
from pathlib import Path

BATCHES = (1, 32, 256)
CONTEXT_TOKENS = 4096
MODEL = "qwen3-8b"


def raw_measurements(profile: dict) -> dict:
    """The profile's measurements, read from its gzipped raw copy when the shipped file keeps only a
    compact summary (refit.py)."""
    m = profile.get("measurements", {})
    ref = m.get("raw")
    if ref and isinstance(m.get("gemm", {}).get("points"), str):
        for base in (Path.cwd(), Path(__file__).resolve().parent.parent):
            path = base / ref["path"]
            if path.is_file():
                return json.loads(gzip.decompress(path.read_bytes()))["measurements"]
    return m


def describe(profile: dict) -> list[str]:
    m = raw_measurements(profile)
    den = profile.get("provenance", {}).get("denominators", {})
    lines = [f"== {profile['name']} ({profile['provenance'].get('device_name')}, plan {profile['provenance'].get('plan')}, "
             f"measured in {profile['provenance'].get('duration_s')} s)"]
    reads = m.get("hbm", {}).get("read", [])
    if reads:
        big = max(reads, key=lambda p: p["bytes_per_s"])
        lines.append(f"  HBM read plateau {big['bytes_per_s'] / 1e9:.0f} GB/s at {big['size_bytes'] / 2**20:.0f} MiB "
                     f"= bandwidth_efficiency {profile['bandwidth_efficiency']}")
    copies = m.get("hbm", {}).get("copy", [])
    if copies:
        c = max(copies, key=lambda p: p["bytes_per_s"])
        lines.append(f"  D2D copy {c['bytes_per_s'] / 1e9:.0f} GB/s of traffic (read + write) at {c['size_bytes'] / 2**20:.0f} MiB")
    peak = den.get("bf16_flops") or 1.0
    pts = [p for p in m.get("gemm", {}).get("points", []) if p["dtype"] == "bf16"]
    models = sorted({p["model"] for p in pts})
    lines.append(f"  GEMM models measured: {', '.join(models) or 'none'}")
    mdl = MODEL if any(p["model"] == MODEL for p in pts) else (models[0] if models else None)
    if mdl:
        shapes = ("qkv", "o", "gate_up", "down", "lm_head")
        lines.append(f"  bf16 TFLOP/s of {mdl}'s GEMMs by M (per-call time in us in brackets):")
        lines.append("    " + "M".rjust(6) + "".join(s.rjust(20) for s in shapes))
        by = {(p["shape"], p["m"]): p for p in pts if p["model"] == mdl}
        for mm in sorted({p["m"] for p in pts if p["model"] == mdl}):
            cells = []
            for s in shapes:
                p = by.get((s, mm))
                cells.append(f"{p['flops_per_s'] / 1e12:8.2f} ({p['time_s'] * 1e6:8.1f})" if p else "-".rjust(20))
            lines.append("    " + str(mm).rjust(6) + "".join(c.rjust(20) for c in cells))
    for model, curves in profile.get("gemm_efficiency", {}).items():
        c = dict((int(a), b) for a, b in curves.get("bf16", []))
        pick = [k for k in (1, 8, 16, 64, 256, 1024, 4096, 16384) if k in c]
        lines.append(f"  gemm_efficiency {model} bf16: " + ", ".join(f"M={k} {c[k]:.4f} ({c[k] * peak / 1e12:.0f} TF)" for k in pick))
        if "fp8" in curves:
            c8 = dict((int(a), b) for a, b in curves["fp8"])
            lines.append(f"  gemm_efficiency {model} fp8: " + ", ".join(f"M={k} {c8[k]:.4f}" for k in pick if k in c8))
    for layout in m.get("attention", {}).get("layouts", []):
        lines.append(f"  attention {layout['model']} (kv heads {layout.get('kv_heads')}, group "
                     f"{layout.get('q_heads_per_kv_head')}, d {layout.get('head_dim')}): check {layout.get('check')}")
        for p in layout.get("points", []):
            lines.append(f"    B={p['batch']:4d} L={p['context_tokens']:6d}: {p['bytes_per_s'] / 1e9:7.0f} GB/s "
                         f"({p['time_s'] * 1e6:9.1f} us)")
    if "attention_kv_efficiency" in profile:
        lines.append("  attention_kv_efficiency " + ", ".join(f"L={int(a)} {b}" for a, b in profile["attention_kv_efficiency"]))
    for layout in (m.get("mla_attention") or {}).get("layouts", []):
        lines.append(f"  MLA attention {layout['model']} ({layout.get('q_heads')} heads, latent {layout.get('latent_dim')}): "
                     f"check {layout.get('check')}")
        for p in layout.get("points", []):
            lines.append(f"    B={p['batch']:4d} L={p['context_tokens']:6d}: {p['bytes_per_s'] / 1e9:7.0f} GB/s, "
                         f"{p.get('flops_per_s', 0.0) / 1e12:6.1f} TFLOP/s ({p['time_s'] * 1e6:9.1f} us)")
    if "mla_attention_kv_efficiency" in profile:
        lines.append("  mla_attention_kv_efficiency " + ", ".join(f"L={int(a)} {b}" for a, b in profile["mla_attention_kv_efficiency"]))
    for model, by_tp in profile.get("tp_gemm_efficiency", {}).items():
        for tp, curves in sorted(by_tp.items(), key=lambda kv: int(kv[0])):
            c = dict((int(a), b) for a, b in curves.get("bf16", []))
            lines.append(f"  tp_gemm_efficiency {model} TP {tp} bf16: "
                         + ", ".join(f"M={k} {c[k]:.4f}" for k in (1, 16, 64, 256, 1024, 4096, 16384) if k in c))
    ov = m.get("overhead", {})
    lines.append(f"  event floor {((ov.get('event_floor_s') or 0) * 1e6):.2f} us; host-bound batches "
                 f"{m.get('timing', {}).get('host_bound_batches')}; graph: {ov.get('graph')}")
    for p in ov.get("points", []):
        lines.append(f"    graph of {p['kernels']:5d} kernels: wall {p['time_s'] * 1e6:9.1f} us, device "
                     f"{p.get('device_time_s', float('nan')) * 1e6:9.1f} us per replay")
    lines.append(f"  step_overhead_s {profile.get('step_overhead_s')}, kernel_overhead_s {profile.get('kernel_overhead_s')}")
    tel = m.get("telemetry", {})
    if tel.get("available"):
        for name, ph in tel.get("phases", {}).items():
            lines.append(f"  telemetry {name:10s}: SM {ph.get('sm_mhz_min')}-{ph.get('sm_mhz_max')} MHz, mem "
                         f"{ph.get('mem_mhz_min')}-{ph.get('mem_mhz_max')} MHz, power max {ph.get('power_w_max')} W, "
                         f"temp max {ph.get('temp_c_max')} C, reasons {ph.get('reasons')}")
        lines.append(f"  throttled: {tel.get('throttled')} ({tel.get('throttle_reasons_seen')})")
    else:
        lines.append(f"  telemetry: {tel.get('reason', 'none')}")
    for n in profile.get("notes", []):
        if "pooled" not in n:
            lines.append(f"  note: {n}")
    pooled = [n for n in profile.get("notes", []) if "pooled" in n]
    if pooled:
        lines.append(f"  note: {len(pooled)} curves had points pooled to stay monotone (listed in the profile's notes); "
                     f"{MODEL}'s: " + " | ".join(n for n in pooled if f" {MODEL} " in n))
    return lines


def sim_steps(profile_names: list[str], gpu: str) -> dict:
    """{profile: {"decode B=.. L=4096": seconds, ..., "prefill 4096": seconds}} from sim's roofline."""
    from kvlab.sim import Scenario, resolve, roofline
    from kvlab.sim.profiles import load_profile

    resolved = resolve(Scenario(model=MODEL, gpu=gpu))
    arch, g = resolved.arch, resolved.gpu
    out = {}
    for name in profile_names:
        mach = roofline.Machine(arch, g, load_profile(name), 1, 2.0, 2.0, False)
        row = {f"decode B={b} L={CONTEXT_TOKENS}": roofline.decode_step(mach, b, CONTEXT_TOKENS).time_s for b in BATCHES}
        row[f"prefill {CONTEXT_TOKENS}"] = roofline.prefill(mach, CONTEXT_TOKENS).time_s
        out[name] = row
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kvlab.calibration.compare", description=__doc__.split("\n\n")[0])
    p.add_argument("profiles", nargs="+", type=Path)
    p.add_argument("--gpu", default="h200")
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args(argv)
    report: dict = {"profiles": {}}
    names = ["textbook", f"{args.gpu}-published"]
    dirs = []
    for path in args.profiles:
        if not path.is_file():
            print(f"(no profile at {path})")
            continue
        prof = json.loads(path.read_text())
        print("\n".join(describe(prof)))
        report["profiles"][prof["name"]] = {k: prof.get(k) for k in (
            "bandwidth_efficiency", "kv_bandwidth_efficiency", "attention_kv_efficiency", "compute_efficiency",
            "lm_head_efficiency", "step_overhead_s", "kernel_overhead_s", "fp8_compute_efficiency")}
        names.append(path.stem)
        dirs.append(str(path.resolve().parent))
    os.environ["KVLAB_PROFILE_PATH"] = os.pathsep.join(dirs + [os.environ.get("KVLAB_PROFILE_PATH", "")])
    try:
        steps = sim_steps(names, args.gpu)
    except Exception as exc:  # sim's API moved: say so, keep the rest of the report
        print(f"sim comparison failed: {type(exc).__name__}: {exc}")
        steps = {}
    if steps:
        cols = list(next(iter(steps.values())))
        print(f"\nsim, {MODEL} on {args.gpu}, TP 1, bf16 (ms):")
        print("  " + "profile".ljust(22) + "".join(c.rjust(20) for c in cols))
        for name, row in steps.items():
            print("  " + name.ljust(22) + "".join(f"{row[c] * 1e3:20.3f}" for c in cols))
    report["sim_step_s"] = steps
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
