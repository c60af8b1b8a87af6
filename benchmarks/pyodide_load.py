"""Benchmark: Pyodide cold load with sim, and one sim.evaluate inside Pyodide.

    .venv/bin/python benchmarks/pyodide_load.py              # 5 cold loads per runtime, Chromium and Node
    .venv/bin/python benchmarks/pyodide_load.py --runs 3 --where chromium

Method (v1):
- Cold load: each run launches a fresh headless Chromium (empty cache) on a page served from
  127.0.0.1, and measures from navigation start (performance.now() origin) to the moment
  benchmarks/pyodide_eval.py has executed: loadPyodide(), unpacking the kvlab_sim wheel the site
  packs, and `import sim`. Under Node the origin is process start. The figure is the median of
  the runs. Targets (issue 4): under 3 s in Chromium.
- Evaluate: inside the same Pyodide, sim.evaluate() timed in batches of calls (browser clocks are
  coarsened to 0.1 ms), for the default scenario and rotating through the first 40 scenarios of
  the Pyodide test grid (different models, GPUs, engines); median, p10, p90 of the per-call
  means. Target: under 1 ms median. CPython on this machine is printed for reference.
Figures depend on the machine's load (2 shared cores here); compare runs from one session only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kvlab.app.site.wheels import SIM_WHEEL, build_wheel  # noqa: E402

from devtools import grid  # noqa: E402
from devtools import pyodide as harness  # noqa: E402

METHOD_VERSION = 1
EVAL_SCRIPT = Path(__file__).resolve().parent / "pyodide_eval.py"


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _chromium_version() -> str:
    try:
        out = subprocess.run([harness.CHROMIUM, "--version"], capture_output=True, text=True, timeout=30).stdout
        return out.strip().splitlines()[-1]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def _fmt_ms(x: float) -> str:
    return f"{x * 1e3:.3f} ms"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="cold loads per runtime and place (default: %(default)s)")
    ap.add_argument("--where", choices=["chromium", "node", "both"], default="both")
    ap.add_argument("--batches", type=int, default=41, help="timed batches of evaluate() (default: %(default)s)")
    ap.add_argument("--calls-per-batch", type=int, default=50, help="evaluate() calls per batch (default: %(default)s)")
    args = ap.parse_args(argv)
    if args.runs < 1 or args.batches < 1 or args.calls_per_batch < 1:
        ap.error("--runs, --batches and --calls-per-batch: must be at least 1")

    payload = json.dumps({"scenarios": grid.scenarios()[:40], "batches": args.batches, "calls_per_batch": args.calls_per_batch})
    print(f"kvlab benchmark pyodide_load, method v{METHOD_VERSION}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {_cpu()}, {os.cpu_count()} cores, load average {load}; {_chromium_version()}; node {node}")
    print(f"CPython {platform.python_version()} (reference)")

    sys.path.insert(0, str(EVAL_SCRIPT.parent))
    import pyodide_eval

    ref = json.loads(pyodide_eval.bench(payload))
    print(f"  CPython evaluate(): default median {_fmt_ms(ref['default']['median_s'])}, "
          f"grid median {_fmt_ms(ref['grid']['median_s'])}; first call {_fmt_ms(ref['first_evaluate_s'])}")

    places = ["chromium", "node"] if args.where == "both" else [args.where]
    with tempfile.TemporaryDirectory(prefix="kvlab-bench-") as tmp:
        wheel = build_wheel(SIM_WHEEL, Path(tmp))
        for role in ("site", "newest"):
            rt = harness.runtime(role)
            if rt is None:
                print(f"error: {harness.missing_reason(role)}", file=sys.stderr)
                return 1
            for where in places:
                run = harness.run_in_chromium if where == "chromium" else harness.run_in_node
                loads, cores, results = [], [], []
                for _ in range(args.runs):
                    reply, timings = run(rt, EVAL_SCRIPT, "bench", payload, [wheel])
                    loads.append(timings["ready_s"])
                    cores.append(timings["pyodide_s"])
                    results.append(json.loads(reply))
                r = results[-1]
                print(f"Pyodide {rt.version} ({role}) in {where}:")
                print(f"  cold load of Pyodide + kvlab_sim wheel + import sim: median {statistics.median(loads):.2f} s "
                      f"(min {min(loads):.2f}, max {max(loads):.2f}, {len(loads)} runs); "
                      f"loadPyodide() alone {statistics.median(cores):.2f} s")
                print(f"  first evaluate() after import: {_fmt_ms(statistics.median(x['first_evaluate_s'] for x in results))}")
                for key, label in (("default", "default scenario"), ("grid", "40 grid scenarios, rotating")):
                    q = r[key]
                    print(f"  evaluate(), {label}: median {_fmt_ms(q['median_s'])} (p10 {_fmt_ms(q['p10_s'])}, "
                          f"p90 {_fmt_ms(q['p90_s'])}; {q['n']} batches of {args.calls_per_batch})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
