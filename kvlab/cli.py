"""`kvlab` dispatches to a subcommand, or evaluates a scenario (the `python -m kvlab.sim` options).

    kvlab --model qwen3-8b --prompt 32768 --json     # one evaluation (sim.cli)
    kvlab serve                                      # the panels and lessons, locally
    kvlab build-site                                 # the static Pyodide site into static/
    kvlab calibrate --quick                          # the GPU benchmark suite

Subcommands import their packages lazily, so `kvlab --json` works without Panel installed.
"""

from __future__ import annotations

import importlib
import sys

SUBCOMMANDS = {
    "serve": ("kvlab.app.serve", "main"),
    "build-site": ("kvlab.app.build_site", "main"),
    "calibrate": ("kvlab.calibration.cli", "main"),
    "engine": ("kvlab.sim.engine.cli", "main"),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        module, func = SUBCOMMANDS[argv[0]]
        return getattr(importlib.import_module(module), func)(argv[1:]) or 0
    from kvlab.sim.cli import main as sim_main

    return sim_main(argv)


if __name__ == "__main__":
    sys.exit(main())
