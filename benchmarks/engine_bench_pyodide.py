"""Runs inside Pyodide for benchmarks/engine_bench.py: the same timed `simulate` calls as in CPython."""

import json
import statistics
import time

from kvlab.sim.engine import simulate
from kvlab.sim.engine.presets import seed000


def _once(policy: str, n: int) -> tuple[float, dict]:
    t0 = time.perf_counter()
    r = simulate(seed000(policy, cpu_costs=False).with_(num_requests=n))
    wall = time.perf_counter() - t0
    if not r.ok or r.completed != n:
        raise RuntimeError(f"run failed: {r.errors}")
    return wall, {"events": r.events, "sim_duration_s": r.duration_s, "ttft_p99_s": r.ttft_s.p99}


def bench(payload: str) -> str:
    cfg = json.loads(payload)
    rows = []
    for policy in cfg["policies"]:
        _once(policy, 1000)
        for n in cfg["sizes"]:
            walls, info = [], {}
            for _ in range(cfg["repeat"] if n <= 20_000 else max(1, cfg["repeat"] // 3)):
                w, info = _once(policy, n)
                walls.append(w)
            rows.append({"policy": policy, "requests": n, "median_s": statistics.median(walls), "min_s": min(walls),
                         "max_s": max(walls), "runs": len(walls), **info})
    return json.dumps(rows)
