"""The validation report runs over every public record and its medians stay where they were
measured when the step model, the engine rules and the published profiles were last changed
(docs/sim.md, "Validation"). A change that makes kvlab worse against public measurements fails here."""

from __future__ import annotations

import pytest

from . import report

# Median |error| measured on this set (docs/sim.md) plus a small margin: a regression fails.
BOUNDS = {
    "published": {"itl": 0.105, "tok_per_s": 0.11, "ttft": 0.22, "kv_pool": 0.03},
    "textbook": {"itl": 0.16, "tok_per_s": 0.15, "ttft": 0.28, "kv_pool": 0.03},
}


@pytest.mark.parametrize("profile", sorted(BOUNDS))
def test_medians_stay_within_their_measured_bounds(profile):
    rows, skipped, summary = report.run(profile)
    assert {r.metric for r in rows} == set(report.METRICS)
    for metric, bound in BOUNDS[profile].items():
        assert summary[metric]["n"] >= 10, metric
        assert summary[metric]["median_abs"] <= bound, (metric, summary[metric])
    # Every record is either compared or listed with its reason.
    assert all(why for _, why in skipped)


def test_report_prints_every_record_and_the_summary(capsys):
    assert report.main(["--profile", "published"]) == 0
    out = capsys.readouterr().out
    assert "skipped" in out and "median |err|" in out
    records = {r["id"] for name in ("perf_records.json", "memory_records.json") for r in report.load(name)}
    compared = {line.split()[0] for line in out.splitlines() if line.split() and line.split()[0] in records}
    skipped_block = out.split("skipped ")[1].split("\n\n")[0].splitlines()[1:]
    skipped = {line.strip().split(":")[0] for line in skipped_block}
    assert compared | skipped == records
