"""python -m kvlab.calibration [--quick] [--backend cupy|numpy] [--gpu ID] [--output PATH]

Runs the suite (HBM, launch overhead, paged GQA decode attention, every dense model's projection
GEMMs, MoE layers at their experts' token counts, TP-sharded projections at TP 2/4/8, MLA decode
attention), fits the efficiencies, validates the profile and writes it with a raw log. A GPU profile
goes to the user's profile folder (sim/paths.py: ~/.local/share/kvlab/profiles on Linux,
KVLAB_DATA_DIR overrides) as <gpu>.json, or <gpu>-local.json when kvlab ships a profile of that
name; sim searches that folder after its shipped profiles, and the panels' profile selector lists
it in the next session, without a restart (sim loads only profiles that pass the schema). fp8 GEMMs
need PyTorch (torch._scaled_mm, cuBLASLt; CuPy has no fp8 GEMM binding): see
python -m kvlab.calibration.torch_crosscheck. Install the GPU dependencies with
pip install "kvlab[gpu]" (CuPy for CUDA 12 with the CUDA libraries it loads, and nvidia-ml-py for
clocks and throttling).
Exit status: 0 written; 1 the run or the fit failed (a profile that fails validation is kept
as <name>.json.invalid, a name sim never lists or loads); 2 it could not start (no CuPy, no GPU, unknown GPU
or model, a MIG slice without --gpu, bad arguments), or the --from-measurements file cannot be read
(calibration/checkpoint.py: missing, too big, not JSON, a field of the wrong type, each problem one
line naming the file and the field), fitted or validated.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from kvlab.sim.cliargs import Parser, parse, report
from kvlab.sim.fields import Bound
from kvlab.sim.paths import user_data_dir, user_profile_dir
from kvlab.sim.userfile import FileProblem, shown_path

from . import METHOD_VERSION
from .backend import Backend, BackendUnavailable, NumpyBackend
from .catalog import PROFILE_DIR, CatalogError, datasheet, identify_gpu, load_models
from .checkpoint import read_measurements
from .plan import make_plan
from .profile import (
    FitError,
    build_profile,
    cpu_check_name,
    datasheet_denominators,
    fit_profile,
    self_denominators,
    summary_lines,
    write_json,
)
from .progress import RunLog
from .provenance import contract_provenance
from .schema import CPU_CHECK_PREFIX, validate_profile
from .suite import run_suite
from .telemetry import Telemetry

PROG = "kvlab calibrate"
# Bounds of the numeric arguments (sim.fields.Bound: one checker for every kvlab command line).
DEVICE = Bound(0, 1023, True, "CUDA device index to measure")
BUDGET_S = Bound(1, 7 * 86_400, False, "override the plan's measurement budget, seconds", optional=True)
SEED = Bound(0, 2**32 - 1, True, "seed of the random input data")

# Never inside the installed package: the user's kvlab folder (sim/paths.py), beside, not in, profiles/.
CPU_OUTPUT_DIR = user_data_dir() / "cpu-checks"


def load_backend(name: str, device_index: int = 0) -> Backend:
    """The backend called `name` ("cupy" or "numpy"), or BackendUnavailable with a clear reason."""
    if name == "numpy":
        return NumpyBackend()
    if name == "cupy":
        from .backend_cupy import CupyBackend  # imports CuPy only when asked for

        return CupyBackend(device_index)
    raise BackendUnavailable(f"unknown backend {name!r}: choose cupy (a GPU) or numpy (a CPU pipeline check)")


def build_parser() -> Parser:
    # sim.cliargs: every bad argument reported at once, one line each, exit status 2.
    p = Parser(prog=PROG, description=__doc__.split("\n\n")[1])
    p.add_argument("--quick", action="store_true", help="a smaller grid: under 1 minute on an H200")
    p.add_option("backend", choices=("cupy", "numpy"), default="cupy",
                 help="cupy measures a GPU; numpy checks the pipeline on the CPU at tiny sizes")
    p.add_argument("--gpu", help="catalog GPU id (sim/data/gpus.json) when the device name is not recognised")
    p.add_option("device", bound=DEVICE, default=0)
    p.add_argument("--model", action="append", dest="models",
                   help="dense model id from sim/data/models whose GEMM shapes to measure (repeatable; the MoE, "
                        "TP and MLA sweeps keep their own model lists, calibration/plan.py)")
    p.add_argument("--output", type=Path, help="profile path (default: <user profile folder>/<gpu>.json, or "
                   "<gpu>-local.json when kvlab ships a profile named <gpu> (h200), "
                   f"here {user_profile_dir()}; for the numpy backend {CPU_OUTPUT_DIR / 'cpu-check-numpy.json'})")
    p.add_argument("--log", type=Path, help="raw log path (default: beside the profile, <name>.log)")
    p.add_option("budget_s", bound=BUDGET_S)
    p.add_option("seed", bound=SEED, default=1234)
    p.add_argument("--eager-overhead", action="store_true",
                   help="also time eager kernel launches (recorded only; the fit uses CUDA-graph replay)")
    p.add_argument("--checkpoint", type=Path, help="write the raw measurements here after each benchmark "
                   "(default: <output>.partial.json), so a run killed later still leaves them")
    p.add_argument("--from-measurements", type=Path, metavar="CHECKPOINT",
                   help="measure nothing: fit and write a profile from a checkpoint of an earlier run on this GPU")
    return p


def default_stem(gpu_id: str) -> str:
    """The profile name a run on `gpu_id` gets without --output: the GPU id, or <gpu>-local when a
    shipped profile already has that name (sim searches the shipped folder first, so a user file of
    the same name would be hidden; kvlab ships a measured h200.json)."""
    return f"{gpu_id}-local" if (PROFILE_DIR / f"{gpu_id}.json").is_file() else gpu_id


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = build_parser()
    parsed = parse(p, argv)
    report(p.prog, parsed.notices, "note")
    if parsed.problems:
        report(p.prog, parsed.problems)
        raise SystemExit(2)
    return parsed.args


def _fail(message: str, status: int = 2) -> int:
    print(f"calibration: {message}", file=sys.stderr)
    return status


def _bad_measurements(path: Path, message: str) -> int:
    report(PROG, [f"--from-measurements: {shown_path(path)}: {message}"])
    return 2


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    saved = None
    if args.from_measurements:  # read first: a bad file is refused before any backend loads
        try:
            saved = read_measurements(args.from_measurements)
        except FileProblem as e:
            report(PROG, [f"--from-measurements: {line}" for line in e.lines()])
            return 2
    command = "python -m kvlab.calibration" + ("" if not argv else " " + shlex.join(argv))
    date_utc = datetime.now(UTC).isoformat(timespec="seconds")

    try:
        backend = load_backend(args.backend, args.device)
    except BackendUnavailable as exc:
        return _fail(str(exc))

    all_models = load_models()
    for model_id in args.models or []:
        if model_id not in all_models:
            return _fail(f"unknown model {model_id!r}; sim/data/models has {', '.join(all_models)}")
    plan = make_plan(backend.name, args.quick, tuple(args.models) if args.models else None, tuple(all_models))
    if args.budget_s is not None:
        plan = replace(plan, budget_s=args.budget_s)
    if args.eager_overhead:
        plan = replace(plan, eager_overhead=True)
    info = backend.device_info()
    telemetry = Telemetry(args.device) if backend.is_gpu else None
    mig = telemetry.static.get("mig") if telemetry is not None and telemetry.available else None

    if backend.is_gpu:
        if mig and not mig.get("whole_gpu", True) and not args.gpu:
            return _fail(f"this device is a MIG slice ({mig.get('slice')}), not a whole GPU: the catalog's datasheet "
                         "peaks do not apply; pass --gpu ID only if you mean to divide by a whole GPU's figures")
        gpu_id = args.gpu or identify_gpu(info["device_name"])
        if gpu_id is None:
            return _fail(f"cannot tell which catalog GPU {info['device_name']!r} is; pass --gpu ID "
                         f"(an id from sim/data/gpus.json)")
        try:
            sheet = datasheet(gpu_id)
        except CatalogError as exc:
            return _fail(str(exc))
        kind = "measured"
        output = args.output or user_profile_dir() / f"{default_stem(gpu_id)}.json"
        name = output.stem
        if args.output is None and name != gpu_id:
            print(f"calibration: writing {name}.json: a shipped profile is called {gpu_id!r}, and sim lists shipped "
                  "profiles first, so a user profile of that name would never be chosen", file=sys.stderr)
        if name.startswith(CPU_CHECK_PREFIX):
            return _fail(f"the name prefix {CPU_CHECK_PREFIX!r} is reserved for CPU pipeline checks; choose another --output")
        log_path = args.log or output.with_suffix(".log")
    else:
        if args.gpu:
            print("calibration: --gpu is ignored by the numpy backend: a CPU run describes no GPU", file=sys.stderr)
        gpu_id, sheet, kind = None, None, "cpu-pipeline-check"
        output = args.output or CPU_OUTPUT_DIR / "cpu-check-numpy.json"
        name = output.stem
        if not name.startswith(CPU_CHECK_PREFIX):
            return _fail(f"a numpy-backend profile must be named {CPU_CHECK_PREFIX}*.json so it is never taken "
                         f"for a GPU profile; try --output {output.with_name(cpu_check_name(name) + '.json')}")
        log_path = args.log or output.with_suffix(".log")

    models = [all_models[m] for m in plan.models]
    if plan.width_divisor > 1:
        models = [m.scaled_down(plan.width_divisor) for m in models]

    log = RunLog()
    log(f"kvlab calibration ({METHOD_VERSION})")
    log(f"command:  {command}")
    log(f"date:     {date_utc}")
    where = f"GPU {info.get('device_index', 0)} of {info.get('device_count', 1)}, catalog id {gpu_id}" if backend.is_gpu else "CPU"
    log(f"device:   {info['device_name']} ({where})")
    if backend.is_gpu:
        log(f"versions: NVIDIA driver {info['nvidia_driver_version']}, CUDA runtime {info['cuda_runtime_version']} "
            f"(driver API {info['cuda_driver_api_version']}), CuPy {info['cupy_version']}, cuBLAS {info['cublas_version']}, "
            f"NumPy {info['numpy_version']}, Python {info['python_version']}")
    else:
        log(f"versions: NumPy {info['numpy_version']}, Python {info['python_version']}")
        log("NOTE:     NumPy backend: a CPU pipeline check at tiny sizes, not a GPU measurement")
    log(f"plan:     {plan.name}, budget {plan.budget_s:.0f} s, models {', '.join(m.id for m in models)}")
    log(f"output:   {output}")
    log()

    checkpoint_path = args.checkpoint or output.with_suffix(".partial.json")
    if saved is not None:
        measurements, duration_s, skipped = saved["measurements"], saved.get("duration_s", 0.0), saved.get("skipped", [])
        log(f"fitting the measurements of {args.from_measurements} (measured {saved.get('date_utc')}); nothing measured now")
        command += f"  # measurements from a run started {saved.get('date_utc')}"
    else:
        def checkpoint(so_far: dict) -> None:
            write_json(checkpoint_path, {"date_utc": date_utc, "command": command, "measurements": so_far,
                                         "telemetry": telemetry.report() if telemetry is not None else None})

        if telemetry is not None:
            with telemetry:
                measurements, duration_s, skipped = run_suite(backend, plan, models, args.seed, log,
                                                              telemetry=telemetry, checkpoint=checkpoint)
            measurements["telemetry"] = telemetry.report()
        else:
            measurements, duration_s, skipped = run_suite(backend, plan, models, args.seed, log, checkpoint=checkpoint)
            measurements["telemetry"] = {"available": False, "reason": "the NumPy backend measures no GPU"}
    log(f"measured in {duration_s:.1f} s" + (f"; {len(skipped)} points skipped" if skipped else ""))
    for line in skipped:
        log(f"  skipped: {line}")

    try:
        denominators = datasheet_denominators(sheet) if sheet else self_denominators(measurements)
        fields, notes = fit_profile(measurements, plan, models, denominators, gpu_id)
    except FitError as exc:
        if saved is not None:  # the user's file holds too little to fit: bad input
            return _bad_measurements(args.from_measurements, f"cannot be fitted: {exc}")
        log(f"fit failed: {exc}")
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text(log.text())
        return _fail(f"fit failed: {exc} (log: {log_path})", 1)

    if backend.is_gpu:
        description = (f"Measured on {info['device_name']} (driver {info['nvidia_driver_version']}, CUDA "
                       f"{info['cuda_runtime_version']}, CuPy {info['cupy_version']}) on {date_utc[:10]} by "
                       f"python -m kvlab.calibration ({plan.name} plan).")
    else:
        description = ("CPU pipeline check of the calibration suite (NumPy backend, tiny sizes, self-normalised). "
                       "It describes this code path, not any GPU: do not use it to predict serving performance.")
    profile = build_profile(
        name=name, gpu_id=gpu_id, kind=kind, description=description, fields=fields, notes=notes,
        measurements=measurements, device_info=info, denominators=denominators, plan=plan, models=models,
        command=command, date_utc=date_utc, duration_s=duration_s, skipped=skipped,
    )
    if backend.is_gpu:
        profile["provenance"].update(contract_provenance(info, measurements.get("telemetry") or {}, date_utc))
    errors = validate_profile(profile, file_stem=output.stem)
    log()
    for line in summary_lines(profile):
        log(line)
    for note in notes:
        log(f"  note: {note}")
    if errors:
        # beside the output but not named *.json, so sim never lists or loads it
        rejected = output.with_name(f"{name}.json.invalid")
        write_json(rejected, profile)
        for e in errors:
            log(f"  INVALID: {e}")
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text(log.text())
        if saved is not None:  # from a user's file it is that file's fault (bad input); from a run, the run's
            return _bad_measurements(args.from_measurements, f"fits a profile that does not validate "
                                                             f"({len(errors)} problems; kept at {rejected})")
        return _fail(f"the fitted profile does not validate ({len(errors)} problems); kept at {rejected}", 1)
    write_json(output, profile)
    if checkpoint_path.is_file() and not args.from_measurements:
        checkpoint_path.unlink()  # the profile carries every measurement now
    log(f"wrote {output}")
    log(f"log   {log_path}")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_text(log.text())
    return 0
