"""sim/ in real Pyodide: the grid of configurations gives byte-identical JSON to CPython.

Runs the kvlab_sim wheel that the static site packs (app/site_wheel.py) in both Pyodide runtimes
(the newest on npm and the one the built site loads), each under Node and in headless Chromium,
and compares every `json.dumps(evaluate(s).to_dict(), sort_keys=True)` string with CPython's.
Exact equality, no tolerance: the simulator is pure Python and the same float operations must
give the same bits on wasm32 as on x86-64.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from app.site_wheel import SIM_WHEEL, build_wheel
from sim import gpu_ids, model_ids
from sim.scenario import ALLOCATIONS, ENGINES, TP_SIZES
from sim.units import KV_DTYPES, WEIGHT_DTYPES
from tests.pyodide import grid, grid_runner, harness

pytestmark = pytest.mark.pyodide
RUNNER = harness.HERE / "grid_runner.py"


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


def _compare(cpython: list[str], other: list[str], label: str, cases: list[dict]) -> None:
    assert len(other) == len(cpython), f"{label}: {len(other)} results for {len(cpython)} scenarios"
    for i, (a, b) in enumerate(zip(cpython, other, strict=True)):
        if a != b:
            da, db = json.loads(a), json.loads(b)
            diff = {k: (da.get(k), db.get(k)) for k in sorted(set(da) | set(db)) if da.get(k) != db.get(k)}
            pytest.fail(f"{label}: scenario {i} {cases[i]} differs from CPython in {len(diff)} fields: {diff}")


@pytest.mark.slow
@pytest.mark.parametrize("where", ["node", "chromium"])
@pytest.mark.parametrize("role", ["newest", "site"])
def test_grid_matches_cpython_exactly(role, where, sim_wheel, scenarios_json, cpython_results):
    rt = harness.runtime(role)
    if rt is None:
        pytest.skip(harness.missing_reason(role))
    run = harness.run_in_node if where == "node" else harness.run_in_chromium
    reply, _ = run(rt, RUNNER, "evaluate_all", scenarios_json, [sim_wheel])
    reply = json.loads(reply)
    assert reply["platform"] == "emscripten", f"not Pyodide: {reply['platform']}"
    assert "site-packages" in reply["sim_file"], f"sim was not imported from the wheel: {reply['sim_file']}"
    _compare(cpython_results, reply["results"], f"Pyodide {rt.version} (Python {reply['python']}) in {where}",
             json.loads(scenarios_json))
