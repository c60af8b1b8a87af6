"""kvlab calibration: measure a GPU and write the efficiency profile `sim` loads.

    python -m kvlab.calibration              # full suite on GPU 0, under 5 minutes on an H200
    python -m kvlab.calibration --quick      # a smaller grid, under 1 minute
    python -m kvlab.calibration --backend numpy   # no GPU: checks the pipeline on the CPU

Every efficiency is an achieved rate divided by the datasheet peak in `sim/data/gpus.json`, so a
profile says "this GPU reaches 93% of its nameplate HBM bandwidth", not an absolute number that
would silently disagree with the catalog.

CuPy is imported lazily, only by the CuPy backend, so this package imports on any machine.
See docs/calibration.md for what each measurement means.
"""

# Bump when a measurement or a fit changes meaning, so profiles from different methods are told apart.
METHOD_VERSION = "kvlab-calibration/1"
