"""kvlab's speculative speed-ups against the published ones (tests/validation/spec_records.json): every
record cites its source with a quote, and each speed-up lands within the issue's 20% at the stated
acceptance (docs/benchmarks/2026-12-04-spec-validation.md has the figures)."""

from __future__ import annotations

import pytest
from kvlab.sim.speculative import acceptance_for_tokens_per_step, expected_tokens_per_step

from . import spec_report


def test_every_record_cites_its_source_and_states_the_acceptance_and_the_speedup():
    data = spec_report.load()
    for rec in data["records"]:
        assert rec["source_url"].startswith("https://") and len(rec["quote"]) > 20, rec["id"]
        assert 1.0 <= rec["accepted_tokens_per_step"] <= rec["spec_tokens"] + 1 and rec["speedup"] > 0, rec["id"]
    assert all(s["reason"] and s["quote"] for s in data["skipped"])


@pytest.mark.parametrize(("k", "tokens"), [(1, 1.92), (3, 2.25), (5, 3.01), (3, 1.0), (3, 4.0)])
def test_the_accepted_length_converts_to_the_acceptance_that_yields_it(k, tokens):
    a = acceptance_for_tokens_per_step(k, tokens)
    assert 0.0 <= a <= 1.0 and expected_tokens_per_step(k, a) == pytest.approx(tokens, abs=1e-9)
    assert acceptance_for_tokens_per_step(1, 1.92) == pytest.approx(0.92)  # k = 1: the series is 1 + a


@pytest.mark.parametrize("profile", ["published", "textbook"])
def test_each_speedup_is_within_20_percent_of_the_published_one(profile):
    rows = spec_report.rows(profile)
    assert len(rows) == len(spec_report.load()["records"]) >= 6
    worst = max(rows, key=lambda r: abs(r.error))
    assert abs(worst.error) <= 0.20, (worst.id, worst.predicted, worst.measured)


def test_the_report_prints_every_record_and_the_skipped_ones(capsys):
    assert spec_report.main([]) == 0
    out = capsys.readouterr().out
    assert all(r["id"] in out for r in spec_report.load()["records"])
    assert "skipped deepseek-v3-report-mtp" in out and "within 20%" in out
