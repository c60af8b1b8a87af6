"""`kvlab` dispatches to a subcommand, or evaluates a scenario (the `python -m kvlab.sim` options).

    kvlab --model qwen3-8b --prompt-tokens 32768 --json   # one evaluation (sim.cli)
    kvlab serve                                           # the panels and lessons, locally
    kvlab build-site                                      # the static Pyodide site into ./site
    kvlab engine --preset seed004-cliff                   # the time-domain engine
    kvlab compare RESULT.json --gpu h100-sxm              # a vllm bench serve run, measured and predicted
    kvlab calibrate --quick                               # the GPU benchmark suite
    kvlab answer-key --lesson E3                          # the lessons' answer key, for instructors
    kvlab help [COMMAND]                                  # this list, or a command's options

Subcommands import their packages lazily, so `kvlab --json` works without Panel installed.
"""

from __future__ import annotations

import importlib
import sys

# name: (module, function, one line for the list in `kvlab --help`)
SUBCOMMANDS = {
    "serve": ("kvlab.app.server.serve", "main", "serve the panels and lessons on 127.0.0.1"),
    "build-site": ("kvlab.app.site.cli", "main", "write the static site (Python runs in the browser)"),
    "engine": ("kvlab.sim.engine.cli", "main", "simulate a serving engine over time: queues, tails, cliffs"),
    "compare": ("kvlab.sim.engine.compare_cli", "main", "replay a vllm bench serve result file and print measured beside predicted"),
    "calibrate": ("kvlab.calibration.cli", "main", "measure a GPU and write an efficiency profile"),
    "answer-key": ("kvlab.lessons.answer_key", "main", "print the lessons' answer key, for instructors"),
    "help": (None, None, "list the commands, or show one command's options: kvlab help engine"),
}


def epilog() -> str:
    width = max(map(len, SUBCOMMANDS))
    lines = [f"  {name:<{width}}  {text}" for name, (_, _, text) in SUBCOMMANDS.items()]
    return ("commands (kvlab COMMAND --help for each one's options):\n" + "\n".join(lines)
            + "\n\nWith no command, kvlab evaluates one configuration with the options below.")


def _help(topics: list[str]) -> int:
    from kvlab.sim.cli import main as sim_main

    if not topics:
        return sim_main(["--help"], epilog=epilog())
    name = topics[0]
    if name not in SUBCOMMANDS or name == "help" or len(topics) > 1:
        print(f"kvlab: error: no command {' '.join(topics)[:60]!r}; commands: {', '.join(SUBCOMMANDS)}", file=sys.stderr)
        return 2
    return main([name, "--help"])


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "help":
            return _help(argv[1:])
        if argv and argv[0] in SUBCOMMANDS:
            module, func, _ = SUBCOMMANDS[argv[0]]
            return getattr(importlib.import_module(module), func)(argv[1:]) or 0
        if argv and not argv[0].startswith("-"):
            print(f"kvlab: error: no command {argv[0][:40]!r}; commands: {', '.join(SUBCOMMANDS)} "
                  f"(or options only, to evaluate one configuration: kvlab --help)", file=sys.stderr)
            return 2
        from kvlab.sim.cli import main as sim_main

        return sim_main(argv, epilog=epilog())
    except BrokenPipeError:  # `kvlab ... | head`: the reader left; no traceback about it
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except SystemExit as e:  # --help and argparse's own exits, as a status for callers of main()
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        raise


if __name__ == "__main__":
    sys.exit(main())
