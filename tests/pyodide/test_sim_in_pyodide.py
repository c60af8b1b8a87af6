"""sim/ in real Pyodide: the grid of configurations and the engine runs give byte-identical JSON to CPython.

Runs the kvlab_sim wheel that the static site packs (app/site/wheels.py) in both Pyodide runtimes
(the newest on npm and the one the built site loads), each under Node and in headless Chromium,
and compares every `json.dumps(evaluate(s).to_dict(), sort_keys=True)` string with CPython's.
Exact equality, no tolerance: the simulator is pure Python and the same float operations must
give the same bits on wasm32 as on x86-64.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from kvlab.app.site.wheels import SIM_WHEEL, build_wheel
from kvlab.sim import gpu_ids, model_ids
from kvlab.sim.scenario import ALLOCATIONS, ENGINES, TP_SIZES
from kvlab.sim.units import KV_DTYPES, WEIGHT_DTYPES

from devtools import grid
from devtools import pyodide as harness
from tests.pyodide import engine_grid, grid_runner
from tests.pyodide.sum312 import compensated_sum

pytestmark = pytest.mark.pyodide
RUNNER = Path(__file__).resolve().parent / "grid_runner.py"


@pytest.fixture(scope="module")
def sim_wheel(tmp_path_factory):
    return build_wheel(SIM_WHEEL, tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def scenarios_json() -> str:
    return json.dumps(grid.scenarios())


@pytest.fixture(scope="module")
def cpython_results(scenarios_json) -> list[str]:
    return json.loads(grid_runner.evaluate_all(scenarios_json))["results"]


def test_grid_covers_the_catalog_and_every_choice():
    cases = grid.scenarios()
    assert len(cases) >= 200
    seen = {key: Counter(c.get(key) for c in cases) for key in ("model", "gpu", "allocation", "engine", "tp", "kv_dtype",
                                                                 "weight_dtype")}
    assert set(model_ids()) <= set(seen["model"])
    assert set(gpu_ids()) <= set(seen["gpu"])
    assert set(ALLOCATIONS) <= set(seen["allocation"])
    assert set(ENGINES) <= set(seen["engine"])
    assert set(TP_SIZES) <= set(seen["tp"])
    assert set(KV_DTYPES) <= set(seen["kv_dtype"])
    assert set(WEIGHT_DTYPES) <= set(seen["weight_dtype"])


def test_grid_exercises_the_numeric_paths(cpython_results):
    """Most cases must evaluate to real figures; a grid of error dicts would compare nothing of substance."""
    results = [json.loads(r) for r in cpython_results]
    ok = [r for r in results if not r["errors"]]
    decoding = [r for r in ok if r["batch"] > 0]
    assert len(ok) >= 150, f"only {len(ok)} of {len(results)} grid cases evaluate without input errors"
    assert len(decoding) >= 100, f"only {len(decoding)} grid cases admit a batch"
    assert {r["decode_bound"] for r in decoding} == {"memory", "compute"}
    assert any(r["errors"] for r in results), "the error path should be compared too"


def _show(diff: dict) -> str:
    """The differing fields, with long texts cut down to their differing lines."""
    parts = []
    for key, (x, y) in diff.items():
        if isinstance(x, str) and isinstance(y, str) and "\n" in x:
            lines = [f"-{p}\n+{q}" for p, q in zip(x.splitlines(), y.splitlines(), strict=False) if p != q]
            parts.append(f"{key}: " + "\n".join(lines[:6]))
        else:
            parts.append(f"{key}: CPython {str(x)[:200]} vs Pyodide {str(y)[:200]}")
    return "\n".join(parts)


def _compare(cpython: list[str], other: list[str], label: str, cases: list[dict], cpython_312_sum=None) -> None:
    """Exact comparison, string for string.

    On CPython 3.11 a mismatch gets one diagnosis before failing: `cpython_312_sum()` recomputes
    the reference with the built-in sum() of CPython 3.12+ (tests/pyodide/sum312.py). If that
    reproduces Pyodide's output byte for byte, float summation with sum() is proven to be the cause
    and the failure says where to look; any other difference fails with the first differing case.
    (It used to xfail there, which let a sum() in the step model hide that the browser and CPython
    had drifted apart.)
    """
    assert len(other) == len(cpython), f"{label}: {len(other)} results for {len(cpython)} cases"
    if other == cpython:
        return
    if cpython_312_sum is not None and sys.version_info < (3, 12) and other == cpython_312_sum():
        pytest.fail(f"{label}: equal to CPython 3.11 only up to the built-in sum() of floats, which CPython 3.12+ "
                    "(and so Pyodide) computes with compensated summation: with 3.12's sum() emulated, CPython 3.11 "
                    "matches byte for byte. Sum floats in sim with math.fsum, which gives the same bits on every Python.")
    for i, (a, b) in enumerate(zip(cpython, other, strict=True)):
        if a != b:
            da, db = json.loads(a), json.loads(b)
            diff = {k: (da.get(k), db.get(k)) for k in sorted(set(da) | set(db)) if da.get(k) != db.get(k)}
            pytest.fail(f"{label}: case {i} {str(cases[i])[:300]} differs from CPython in {len(diff)} fields: {_show(diff)}")


PLACES = [(role, where) for role in ("newest", "site") for where in ("node", "chromium")]


def _one_place(role: str, where: str, payload: str, wheel) -> dict | None:
    """One Pyodide session evaluates the grid and runs the engine cases (None: no such runtime)."""
    rt = harness.runtime(role)
    if rt is None:
        return None
    run = harness.run_in_node if where == "node" else harness.run_in_chromium
    reply, _ = run(rt, RUNNER, "run_all", payload, [wheel])
    return {"version": rt.version, **json.loads(reply)}


@pytest.fixture(scope="module", autouse=True)
def pyodide_runs(payload, sim_wheel):
    """The four sessions, started together when the module starts: each is a Node or Chromium
    process busy on one core while this process waits, so on two cores they take about half the
    time they took one after another, and the CPython references are computed meanwhile."""
    pool = ThreadPoolExecutor(max_workers=len(PLACES))
    futures = {place: pool.submit(_one_place, *place, payload, sim_wheel) for place in PLACES}
    yield futures
    pool.shutdown(wait=True, cancel_futures=True)


def _pyodide_run(runs: dict, role: str, where: str) -> dict:
    run = runs[(role, where)].result()
    if run is None:
        pytest.skip(harness.missing_reason(role))
    return run


@pytest.fixture(scope="module")
def payload(scenarios_json, engine_cases) -> str:
    return json.dumps({"scenarios": json.loads(scenarios_json), "engine_cases": engine_cases})


@pytest.fixture(scope="module")
def engine_cases() -> list[dict]:
    return engine_grid.cases()


@pytest.fixture(scope="module")
def cpython_engine_results(engine_cases) -> list[str]:
    return json.loads(grid_runner.simulate_all(json.dumps(engine_cases)))["results"]


def _with_312_sum(func, cases) -> list[str]:
    with compensated_sum():
        return json.loads(func(json.dumps(cases)))["results"]


def test_engine_cases_exercise_the_engine(cpython_engine_results):
    results = [json.loads(r) for r in cpython_engine_results]
    ran = [r for r in results if not r["errors"]]
    assert len(ran) >= 14 and all(r["completed"] > 0 for r in ran)
    assert any(r["preemptions"] > 0 for r in ran), "no case preempts: the swap/recompute paths would go unchecked"
    assert any(r["prefix_hit_rate"] > 0 for r in ran), "no case hits the prefix cache"
    assert any(r["errors"] for r in results)


@pytest.mark.slow
@pytest.mark.parametrize(("role", "where"), PLACES)
def test_grid_matches_cpython_exactly(role, where, pyodide_runs, scenarios_json, cpython_results):
    run = _pyodide_run(pyodide_runs, role, where)
    reply = run["evaluate"]
    assert reply["platform"] == "emscripten", f"not Pyodide: {reply['platform']}"
    assert "site-packages" in reply["sim_file"], f"sim was not imported from the wheel: {reply['sim_file']}"
    cases = json.loads(scenarios_json)
    _compare(cpython_results, reply["results"], f"Pyodide {run['version']} (Python {reply['python']}) in {where}",
             cases, lambda: _with_312_sum(grid_runner.evaluate_all, cases))


@pytest.mark.slow
@pytest.mark.parametrize(("role", "where"), PLACES)
def test_engine_matches_cpython_exactly(role, where, pyodide_runs, engine_cases, cpython_engine_results):
    run = _pyodide_run(pyodide_runs, role, where)
    reply = run["engine"]
    assert reply["platform"] == "emscripten"
    _compare(cpython_engine_results, reply["results"], f"engine in Pyodide {run['version']} in {where}",
             engine_cases, lambda: _with_312_sum(grid_runner.simulate_all, engine_cases))
