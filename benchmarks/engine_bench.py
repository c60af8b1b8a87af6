"""Wall time of the time-domain engine on seed 000's workload shape, in CPython and in Pyodide.

    .venv/bin/python benchmarks/engine_bench.py                      # 10k and 100k requests, CPython
    .venv/bin/python benchmarks/engine_bench.py --pyodide newest     # and inside Pyodide under Node
    .venv/bin/python benchmarks/engine_bench.py --policies fcfs,chunked,lanes --sizes 10000
    .venv/bin/python benchmarks/engine_bench.py --workload sharegpt --sizes 10000   # a vllm bench serve run

Method (version 1): the `seed000-chunked` preset (Llama 3.1 70B, tp 8 on H100, prompts with a
median of 6k and a tail past 30k, outputs mostly under 300, Poisson arrivals at 2 requests/s,
about 90% of the shared queue's capacity), with `num_requests` set to each size. One timed run is
`simulate(config)`: workload generation, the event loop and the summary (percentiles, logs,
Prometheus text). Each size runs `--repeat` times after one untimed warm-up at 1,000 requests;
the median is reported with min and max. Targets (issue 5): 10,000 requests under 1 s in CPython,
100,000 under 12 s (near-linear). `--workload sharegpt` times instead what `kvlab engine --bench`
runs for `vllm bench serve --dataset-name sharegpt --request-rate 20`: Llama 3.1 8B on one H100
(its published profile), ShareGPT lengths (sim/data/datasets/sharegpt.json), gamma arrivals
rescaled as vLLM does; target (issue 32): 10,000 requests under 1 s. The Pyodide figures run the same function inside the npm
Pyodide build in app/site/node_modules (`npm ci --prefix app/site`), with `sim` installed
from a wheel built by app/site/wheels.py.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kvlab.sim import Scenario  # noqa: E402
from kvlab.sim.engine import simulate  # noqa: E402
from kvlab.sim.engine.bench import BenchSpec, engine_config  # noqa: E402
from kvlab.sim.engine.presets import seed000  # noqa: E402

METHOD_VERSION = 1
TARGETS_S = {10_000: 1.0, 100_000: 12.0}
PYODIDE_SCRIPT = Path(__file__).with_name("engine_bench_pyodide.py")


WORKLOADS = ("seed000", "sharegpt")


def config(policy: str, n: int, workload: str = "seed000"):
    if workload == "sharegpt":
        spec = BenchSpec(dataset_name="sharegpt", num_prompts=n, request_rate=20.0)
        scenario = Scenario(model="llama-3.1-8b", gpu="h100-sxm", engine="vllm", profile="h100-published")
        return engine_config(scenario, spec).with_(policy=policy)
    return seed000(policy, cpu_costs=False).with_(num_requests=n)


def time_run(policy: str, n: int, workload: str = "seed000") -> tuple[float, dict]:
    t0 = time.perf_counter()
    r = simulate(config(policy, n, workload))  # a bench run draws its requests in config(): timed too
    wall = time.perf_counter() - t0
    assert r.ok and r.completed == n, r.errors
    return wall, {"events": r.events, "sim_duration_s": r.duration_s, "ttft_p99_s": r.ttft_s.p99}


def cpython(policies: list[str], sizes: list[int], repeat: int, workload: str = "seed000") -> list[dict]:
    rows = []
    for policy in policies:
        time_run(policy, 1000, workload)  # warm-up: imports, catalog JSON, clock coefficients
        for n in sizes:
            walls, info = [], {}
            for _ in range(repeat if n <= 20_000 else max(1, repeat // 3)):
                w, info = time_run(policy, n, workload)
                walls.append(w)
            rows.append({"runtime": f"CPython {platform.python_version()}", "workload": workload, "policy": policy, "requests": n,
                         "median_s": statistics.median(walls), "min_s": min(walls), "max_s": max(walls), "runs": len(walls), **info})
    return rows


def pyodide(role: str, policies: list[str], sizes: list[int], repeat: int) -> list[dict]:
    from kvlab.app.site.wheels import SIM_WHEEL, build_wheel

    from devtools.pyodide import missing_reason, run_in_node, runtime

    rt = runtime(role)
    if rt is None:
        raise SystemExit(f"engine_bench: {missing_reason(role)}")
    with tempfile.TemporaryDirectory(prefix="kvlab-engine-bench-") as tmp:
        wheel = build_wheel(SIM_WHEEL, Path(tmp))
        payload = json.dumps({"policies": policies, "sizes": sizes, "repeat": repeat})
        out, timings = run_in_node(rt, PYODIDE_SCRIPT, "bench", payload, [wheel], timeout_s=1800)
    rows = json.loads(out)
    for row in rows:
        row["runtime"] = f"Pyodide {rt.version} (Node {timings.get('node', '')})".replace(" (Node )", " under Node")
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="10000,100000", help="comma-separated request counts")
    p.add_argument("--policies", default="chunked", help="comma-separated scheduling policies")
    p.add_argument("--repeat", type=int, default=3, help="timed runs per size (100k and up: a third as many)")
    p.add_argument("--workload", choices=WORKLOADS, default="seed000", help="seed 000's shape, or a ShareGPT bench run")
    p.add_argument("--pyodide", choices=("newest", "site", "both"), help="also run inside Pyodide under Node (seed000)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",")]
    policies = [x.strip() for x in args.policies.split(",")]
    rows = cpython(policies, sizes, args.repeat, args.workload)
    if args.pyodide and args.workload == "seed000":
        for role in (("newest", "site") if args.pyodide == "both" else (args.pyodide,)):
            rows += pyodide(role, policies, sizes, args.repeat)
    if args.json:
        print(json.dumps(rows))
        return 0
    print(f"# kvlab engine benchmark, method v{METHOD_VERSION}")
    print(f"# {platform.platform()}, {platform.processor() or platform.machine()}, CPython {platform.python_version()}")
    print(f"# command: {' '.join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])])}")
    print(f"{'runtime':34} {'policy':8} {'requests':>9} {'median':>8} {'min':>8} {'max':>8} {'events':>8} {'us/req':>7} {'target':>7}")
    for r in rows:
        target = TARGETS_S.get(r["requests"])
        mark = "" if target is None or not r["runtime"].startswith("CPython") else ("ok" if r["median_s"] < target else "MISSED")
        print(f"{r['runtime']:34} {r['policy']:8} {r['requests']:9,} {r['median_s']:7.3f}s {r['min_s']:7.3f}s {r['max_s']:7.3f}s "
              f"{r['events']:8,} {r['median_s'] / r['requests'] * 1e6:7.1f} {mark:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
