"""Refit a measured profile from its raw measurements, on any machine, and ship it small.

    python -m kvlab.calibration.refit RAW.json --output sim/data/profiles/h200.json \
        --raw-copy docs/calibration/runs/2026-11-30-h200/h200-raw.json.gz

The fit is a pure function of the measurements (profile.fit_profile, then the PyTorch
cross-check's merge), so a profile written on a GPU box can be refitted here after a fit rule
changes, without the GPU. The written profile keeps the efficiency fields, the notes, the
provenance (plus a "refit" entry naming this command, the date and the raw file's SHA-256) and a
compact copy of the measurements (HBM, attention, overhead, timing, telemetry summary, the list of
GEMM models); the full raw measurements (every GEMM point, the telemetry samples) go to the
gzipped --raw-copy, which is what a reader checks the fit against. The shipped file stays small
because sim loads it and the static site downloads it.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path

from kvlab.sim.userfile import FileProblem, read_bytes, shown_path

from . import METHOD_VERSION
from .catalog import datasheet, load_models
from .checkpoint import MAX_MEASUREMENTS_BYTES, RAW_PROFILE
from .plan import full_plan, quick_plan
from .profile import build_profile, datasheet_denominators, fit_profile, write_json
from .schema import validate_profile
from .torch_crosscheck import merge


def compact_measurements(measurements: dict, raw_ref: dict | None) -> dict:
    """What the shipped profile keeps of the raw measurements."""
    out = {k: measurements[k] for k in ("hbm", "attention", "mla_attention", "overhead", "timing", "allreduce")
           if k in measurements}
    gemm = measurements.get("gemm", {})
    out["gemm"] = {k: gemm.get(k) for k in ("models", "skipped_models", "dtypes", "fp8", "layout")}
    out["gemm"]["points"] = f"{len(gemm.get('points', []))} points in the raw measurements"
    for name in ("moe", "tp"):  # every GEMM point stays in the raw copy; the summary says what was measured
        if name in measurements:
            section = measurements[name]
            out[name] = {k: v for k, v in section.items() if k != "points"}
            out[name]["points"] = f"{len(section.get('points', []))} points in the raw measurements"
    tel = dict(measurements.get("telemetry") or {})
    if "samples_kept" in tel:
        tel["samples_kept"] = f"{len(tel['samples_kept'])} samples in the raw measurements"
    out["telemetry"] = tel
    torch_section = measurements.get("torch_crosscheck")
    if torch_section:
        out["torch_crosscheck"] = {k: v for k, v in torch_section.items() if k != "fp8_points"}
        out["torch_crosscheck"]["fp8_points"] = f"{len(torch_section.get('fp8_points', []))} points in the raw measurements"
    if raw_ref:
        out["raw"] = raw_ref
    return out


def refit(raw: dict, name: str, raw_ref: dict | None, command: str) -> tuple[dict, list[str]]:
    """(profile, validation errors) refitted from a measured profile's raw measurements."""
    prov = raw["provenance"]
    measurements = raw["measurements"]
    catalog = load_models()
    models = [catalog[m] for m in prov["models"]]
    plan = quick_plan(tuple(prov["models"])) if prov.get("plan") == "quick" else full_plan(tuple(prov["models"]))
    sheet = datasheet(raw["gpu"])
    den = datasheet_denominators(sheet)
    fields, notes = fit_profile({k: v for k, v in measurements.items() if k != "torch_crosscheck"}, plan, models, den,
                                raw["gpu"])
    device_info = {k: v for k, v in prov.items() if k not in ("kind", "date_utc", "command", "method_version", "plan",
                                                               "budget_s", "duration_s", "models", "denominators",
                                                               "fit_notes", "skipped", "refit")}
    profile = build_profile(
        name=name, gpu_id=raw["gpu"], kind="measured", description=raw["description"], fields=fields, notes=notes,
        measurements={}, device_info=device_info, denominators=den, plan=plan, models=models,
        command=prov["command"], date_utc=prov["date_utc"], duration_s=prov.get("duration_s", 0.0),
        skipped=prov.get("skipped", []),
    )
    profile["provenance"]["budget_s"] = prov.get("budget_s", plan.budget_s)
    if "torch_crosscheck" in measurements:
        profile, _ = merge(profile, measurements["torch_crosscheck"], sheet)
    profile["measurements"] = compact_measurements(measurements, raw_ref)
    profile["provenance"]["refit"] = {
        "date_utc": datetime.now(UTC).isoformat(timespec="seconds"), "command": command,
        "method_version": METHOD_VERSION, "measured_with": prov.get("method_version"),
    }
    return profile, validate_profile(profile, file_stem=name)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(prog="python -m kvlab.calibration.refit", description=__doc__.split("\n\n")[0])
    p.add_argument("raw", type=Path, help="a measured profile as written on the GPU box (with every raw measurement)")
    p.add_argument("--output", type=Path, required=True, help="the refitted profile (its stem is the profile name)")
    p.add_argument("--raw-copy", type=Path, help="write the raw profile here, gzipped, and reference it by SHA-256")
    args = p.parse_args(argv)
    try:  # sim.userfile: size limit while reading, text rules, RAW_PROFILE's shape
        raw_text = read_bytes(args.raw, MAX_MEASUREMENTS_BYTES)
        raw = RAW_PROFILE.parse(raw_text, shown_path(args.raw))
    except FileProblem as e:
        print(*(f"refit: {line}" for line in e.lines()), sep="\n", file=sys.stderr)
        return 2
    unknown = [m for m in raw["provenance"]["models"] if m not in load_models()]
    if raw["provenance"]["kind"] != "measured" or unknown:
        why = f"names models the catalog lacks ({', '.join(unknown)})" if unknown else "is not a measured profile"
        print(f"refit: {shown_path(args.raw)}: {why}", file=sys.stderr)
        return 2
    ref = None
    if args.raw_copy:
        args.raw_copy.parent.mkdir(parents=True, exist_ok=True)
        args.raw_copy.write_bytes(gzip.compress(raw_text, 9, mtime=0))
        ref = {"path": args.raw_copy.as_posix(), "sha256_of_uncompressed": hashlib.sha256(raw_text).hexdigest(),
               "bytes_uncompressed": len(raw_text)}
    profile, errors = refit(raw, args.output.stem, ref, "python -m kvlab.calibration.refit " + shlex.join(argv))
    if errors:
        bad = args.output.with_name(args.output.stem + ".json.invalid")
        write_json(bad, profile)
        print("refit: the refitted profile does not validate; kept at " + str(bad), *errors, sep="\n  ", file=sys.stderr)
        return 1
    write_json(args.output, profile)
    print(f"wrote {args.output} ({args.output.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
