"""Evaluate a list of scenarios and return each Result as canonical JSON.

The same file runs in CPython (imported by the tests) and in Pyodide (its source is executed by
run_grid.mjs under Node and by grid.html in Chromium), so both sides serialise identically:
`json.dumps(..., sort_keys=True)` of `Result.to_dict()`, one string per scenario. The reply also
says which Python ran and where `sim` was imported from, so a test can prove it was the wheel.
"""

import json
import sys


def evaluate_all(scenarios_json: str) -> str:
    from kvlab.sim import Scenario, evaluate

    from kvlab import sim

    results = [json.dumps(evaluate(Scenario(**kw)).to_dict(), sort_keys=True) for kw in json.loads(scenarios_json)]
    return json.dumps({"python": sys.version.split()[0], "platform": sys.platform, "sim_file": sim.__file__,
                       "results": results})


def simulate_all(cases_json: str) -> str:
    """Run each {"preset", "changes"} case of tests/pyodide/engine_grid.py through sim.engine."""
    from kvlab.sim.engine import preset, simulate

    results = [json.dumps(simulate(preset(c["preset"]).with_(**c["changes"])).to_dict(), sort_keys=True)
               for c in json.loads(cases_json)]
    return json.dumps({"python": sys.version.split()[0], "platform": sys.platform, "results": results})


def run_all(payload_json: str) -> str:
    """Both sets in one Pyodide session: {"scenarios": [...], "engine_cases": [...]}."""
    payload = json.loads(payload_json)
    return json.dumps({"evaluate": json.loads(evaluate_all(json.dumps(payload["scenarios"]))),
                       "engine": json.loads(simulate_all(json.dumps(payload["engine_cases"])))})
