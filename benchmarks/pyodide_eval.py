"""Runs inside Pyodide (and in CPython for reference): time sim.evaluate for benchmarks/pyodide_load.py.

`import sim` sits at module level on purpose: the driver's cold-load figure stops when this file
has been executed, so it includes importing the simulator.
"""

import json
import time

from kvlab.sim import Scenario, evaluate

from kvlab import sim


def _per_call_s(scenarios, batches: int, calls_per_batch: int) -> list[float]:
    # Browsers coarsen performance.now() (Chromium: 0.1 ms without cross-origin isolation), and
    # Pyodide's perf_counter reads it; timing batches of calls keeps that step out of the median.
    out = []
    n = len(scenarios)
    k = 0
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(calls_per_batch):
            evaluate(scenarios[k % n])
            k += 1
        out.append((time.perf_counter() - t0) / calls_per_batch)
    return out


def _quantiles(xs: list[float]) -> dict:
    s = sorted(xs)
    return {"median_s": s[len(s) // 2], "p10_s": s[len(s) // 10], "p90_s": s[(9 * len(s)) // 10], "n": len(s)}


def bench(payload: str) -> str:
    cfg = json.loads(payload)
    t0 = time.perf_counter()
    evaluate(Scenario())  # first call: reads the catalog JSON and the profile
    first_s = time.perf_counter() - t0
    grid = [Scenario(**kw) for kw in cfg["scenarios"]]
    for s in grid:  # warm-up
        evaluate(s)
    default = _per_call_s([Scenario()], cfg["batches"], cfg["calls_per_batch"])
    rotating = _per_call_s(grid, cfg["batches"], cfg["calls_per_batch"])
    ticks = []
    for _ in range(cfg["batches"]):
        a = time.perf_counter()
        evaluate(Scenario())
        ticks.append(time.perf_counter() - a)
    return json.dumps({"first_evaluate_s": first_s, "default": _quantiles(default), "grid": _quantiles(rotating),
                       "single_call_ticks": _quantiles(ticks), "sim_version": sim.__version__})
