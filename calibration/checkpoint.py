"""The measurements files calibration reads from a user: the one `kvlab calibrate
--from-measurements` fits (a checkpoint a run leaves after each benchmark, <output>.partial.json,
or a profile a run wrote: it carries them too), and the raw profile refit.py refits.

Read through sim.userfile (the one reader of every file a user hands kvlab: size limit while
reading, encoding, byte-order mark, line endings), then checked against MEASUREMENTS_FILE's shape:
every field the fit reads (calibration/profile.py, calibration/fit.py) with its type, so a file of
the wrong shape is refused with the field named, before anything is fitted.
"""

from __future__ import annotations

from kvlab.sim.userfile import AllOf, JsonFormat, ListOf, MapOf, Nullable, Num, Obj, Str, When

# A full H200 run's raw measurements are 2.2 MB (docs/calibration/runs/2026-12-01-h200/h200-raw.json.gz,
# every GEMM point and the telemetry samples): 64 MB leaves room for bigger plans.
MAX_MEASUREMENTS_BYTES = 64_000_000

_NUM = Num()
_COUNT = Num(0, 2**53, integer=True)
_RATE = Num(0, above=True)  # times and rates: the fit divides by them
_BANDWIDTH_POINT = Obj({"size_bytes": _RATE, "bytes_per_s": _RATE})
_GEMM_POINT = Obj({"model": Str(), "shape": Str(), "dtype": Str(), "m": _COUNT, "flops": _RATE, "time_s": _RATE,
                   "flops_per_s": _RATE},
                  {"tp": _COUNT})
_ATTENTION_POINT = Obj({"batch": _COUNT, "context_tokens": _COUNT, "bytes_per_s": _RATE}, {"flops_per_s": _RATE})
_CHECK = Obj({}, {"max_rel_err": _NUM, "kernel_version": Str()})
_LAYOUT = Obj({"model": Str()}, {"layout": Str(), "check": _CHECK, "points": ListOf(_ATTENTION_POINT), "checks": ListOf(Obj({})),
                                 "error": Nullable(Str())})


def _passed(kind: str):
    """A layout of `kind` whose kernel passed its check: the fit describes it by its dimensions."""
    return lambda lay: lay.get("layout", "gqa") == kind and lay.get("check", {}).get("passed")


def _layouts(kind: str, dimensions: tuple[str, ...]) -> Obj:
    passed = Obj({"points": ListOf(_ATTENTION_POINT), **{d: _COUNT for d in dimensions}})
    return Obj({}, {"layouts": ListOf(AllOf((_LAYOUT, When(_passed(kind), passed)))), "error": Nullable(Str())})


_SKIPPED_MODELS = ListOf(Obj({"model": Str(), "reason": Str()}, {"tp": _COUNT}))
_GEMMS = {"points": ListOf(_GEMM_POINT), "skipped_models": _SKIPPED_MODELS, "error": Nullable(Str())}
MEASUREMENTS = Obj({}, {
    "hbm": Obj({}, {"read": ListOf(_BANDWIDTH_POINT), "copy": ListOf(Obj({"bytes_per_s": _RATE}))}),
    "attention": _layouts("gqa", ("kv_heads", "q_heads_per_kv_head", "head_dim")),
    "mla_attention": Nullable(_layouts("mla", ("q_heads", "tp", "latent_dim"))),
    "gemm": Obj({}, _GEMMS),
    "moe": Nullable(Obj({}, {**_GEMMS, "model_shapes": MapOf(ListOf(Str()))})),
    "tp": Nullable(Obj({}, {"sizes": ListOf(_COUNT), "points": ListOf(_GEMM_POINT), "skipped": _SKIPPED_MODELS,
                            "error": Nullable(Str())})),
    "overhead": Obj({}, {"points": ListOf(Obj({"kernels": _COUNT}, {"variant": Str(), "time_s": _RATE}))}),
    "allreduce": Obj({}, {"points": ListOf(Obj({"size_bytes": _RATE, "busbw_bytes_per_s": _RATE, "time_s": _RATE})),
                          "skipped": Str()}),
    "timing": Obj({}, {"host_bound_batches": _COUNT}),
    "telemetry": Nullable(Obj({}, {"throttle_reasons_seen": ListOf(Str())})),
})
MEASUREMENTS_FILE = JsonFormat(
    "a checkpoint or profile of kvlab calibrate (a JSON object with its measurements)", MAX_MEASUREMENTS_BYTES,
    Obj({"measurements": MEASUREMENTS}, {"date_utc": Str(), "duration_s": Num(0), "skipped": ListOf(Str())}),
)


# What `python -m kvlab.calibration.refit` refits: a profile a GPU run wrote, with every raw measurement.
RAW_PROFILE = JsonFormat(
    "a measured profile with its raw measurements, as a GPU run writes it", MAX_MEASUREMENTS_BYTES,
    Obj({"measurements": MEASUREMENTS, "gpu": Str(), "description": Str(),
         "provenance": Obj({"kind": Str(), "models": ListOf(Str()), "command": Str(), "date_utc": Str()},
                           {"plan": Str(), "duration_s": Num(0), "skipped": ListOf(Str())})}),
)


def read_measurements(path) -> dict:
    """The checked contents of a measurements file, or sim.userfile.FileProblem naming the field."""
    return MEASUREMENTS_FILE.read(path)
