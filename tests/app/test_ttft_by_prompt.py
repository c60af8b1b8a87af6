"""TTFT grouped by prompt length: every request lands in exactly one group, and each group's
percentiles are those of its own requests."""

import math

from kvlab.app.viewlayer.ttft_by_prompt import ttft_by_prompt_length, view_ttft_by_prompt
from kvlab.sim.engine import simulate
from kvlab.sim.engine.presets import preset


def test_groups_partition_the_requests_and_order_by_length():
    r = simulate(preset("long-prompts-light").with_(num_requests=300))
    rows = ttft_by_prompt_length(r.requests)
    assert sum(row["count"] for row in rows) == sum(1 for t in r.requests["ttft_s"] if not math.isnan(t))
    for row in rows:
        inside = sorted(t for p, t in zip(r.requests["prompt_tokens"], r.requests["ttft_s"], strict=True)
                        if p > row["low_tokens"] and (row["high_tokens"] is None or p <= row["high_tokens"]))
        assert row["max_s"] == inside[-1] and row["p50_s"] == inside[math.ceil(0.5 * len(inside)) - 1]
    assert [row["low_tokens"] for row in rows] == sorted(row["low_tokens"] for row in rows)


def test_by_hand():
    requests = {"prompt_tokens": [100, 200, 5000, 40000], "ttft_s": [0.1, 0.3, 1.0, 2.5]}
    rows = ttft_by_prompt_length(requests)
    assert [(r["label"], r["count"], r["p50_s"], r["max_s"]) for r in rows] == [
        ("1\u20131,024", 2, 0.1, 0.3), ("4,097\u20138,192", 1, 1.0, 1.0), ("over 32,768", 1, 2.5, 2.5)]


def test_view_is_empty_without_a_result():
    assert view_ttft_by_prompt(None) == {"pane": {"html": ""}}
