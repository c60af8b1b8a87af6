"""How far kvlab's predictions have been from published measurements, in one sentence a page can show.

The figures live in sim/data/fidelity.json, in two sections written by the validation reports of
kvlab's repository (a test fails when either is stale):
- "served": the steady-state model (sim.evaluate) against the public serving records of
  tests/validation (tests/validation/report.py --write, profile "published");
- "replays": the time-domain engine replaying published benchmark runs whole
  (tests/validation/bench_report.py --write).
Each holds, per figure, the median |error| over all records and per model family (dense, moe, mla).
"""

from __future__ import annotations

import json
from functools import lru_cache

from .catalog import DATA_DIR

FIDELITY_PATH = DATA_DIR / "fidelity.json"
SERVED_LABELS = {"itl": "ITL", "tok_per_s": "output tok/s", "ttft": "TTFT"}
REPLAY_LABELS = {"duration_s": "duration", "output_throughput": "output tok/s", "mean_ttft_ms": "mean TTFT",
                 "p99_ttft_ms": "p99 TTFT", "mean_tpot_ms": "mean TPOT", "median_itl_ms": "median ITL"}
FAMILY_WORDS = {"dense": "dense models", "moe": "mixture-of-experts models", "mla": "MLA models"}


@lru_cache(maxsize=1)
def fidelity() -> dict:
    return json.loads(FIDELITY_PATH.read_text())


def _parts(section: dict, labels: dict, family: str) -> tuple[list[str], int]:
    parts, n = [], 0
    for figure, label in labels.items():
        entry = section["figures"].get(figure, {}).get(family)
        if entry:
            parts.append(f"{label} {entry['median_abs']:.0%}")
            n = max(n, entry["n"])
    return parts, n


def served_line(family: str) -> str:
    """How far the steady-state figures have been for a model of `family`, each with its count."""
    figures = fidelity()["served"]["figures"]
    parts = [f"{entry['median_abs']:.0%} for {label} ({entry['n']})" for figure, label in SERVED_LABELS.items()
             if (entry := figures.get(figure, {}).get(family))]
    if not parts:
        return ""
    return (f"Against published measurements of {FAMILY_WORDS.get(family, family)}, these figures have been off by a "
            f"median {', '.join(parts)}: kvlab's validation set.")


def replay_line(family: str) -> str:
    """How far the engine's replays of whole benchmark runs have been for a model of `family`."""
    parts, n = _parts(fidelity()["replays"], REPLAY_LABELS, family)
    if not parts:
        return f"kvlab has replayed no published run of {FAMILY_WORDS.get(family, family)} yet"
    return (f"how far such replays have been: on {n} published runs of {FAMILY_WORDS.get(family, family)}, median |error| "
            + ", ".join(parts) + " (tests/validation/bench_runs.json in kvlab's repository)")


def section(summary: dict[str, dict], figures, count: int, count_name: str) -> dict:
    """A section of the file from a report's summary ({"figure" or "figure/family": {n, median_abs}}):
    what the reports write, rounded so the file does not churn on float noise."""
    out = {count_name: count, "figures": {}}
    for figure in figures:
        entry = {}
        for family in ("all", "dense", "moe", "mla"):
            s = summary.get(figure if family == "all" else f"{figure}/{family}")
            if s:
                entry[family] = {"n": s["n"], "median_abs": round(s["median_abs"], 3)}
        out["figures"][figure] = entry
    return out


def write_section(name: str, value: dict) -> None:
    """Replace one section of sim/data/fidelity.json, keeping the other (the reports' --write)."""
    data = json.loads(FIDELITY_PATH.read_text()) if FIDELITY_PATH.is_file() else {}
    data["about"] = ("How far kvlab's predictions have been from published measurements: median |error| per figure, over "
                     "all records and per model family. 'served': sim.evaluate against tests/validation's serving records "
                     "(tests/validation/report.py --write); 'replays': the engine replaying published benchmark runs "
                     "(tests/validation/bench_report.py --write). tests/validation fails when either is stale.")
    data[name] = value
    FIDELITY_PATH.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    fidelity.cache_clear()
