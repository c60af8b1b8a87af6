"""Fuzz trace uploads: any text or bytes is rows or an InputError naming the trace, never a crash."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from kvlab.sim.engine import EngineConfig, parse_trace, simulate
from kvlab.sim.errors import InputError

from .support import batches, check_each, fuzz, hostile, measure_memory, peak_of

HEADERS = ["arrival_s,prompt_tokens,output_tokens", "arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens",
           "timestamp,input_tokens,output_len", "a,b,c", ""]
cell = st.one_of(st.integers(0, 3000).map(str), st.floats(0, 100).map(lambda x: f"{x:.3f}"), hostile.map(str),
                 st.text(max_size=12), st.just("9" * 5000), st.just('"'), st.just(""))
csv_line = st.lists(cell, min_size=0, max_size=6).map(",".join)
csv_text = st.tuples(st.sampled_from(HEADERS), st.lists(csv_line, max_size=12), st.sampled_from(["\n", "\r\n"])).map(
    lambda t: t[2].join([t[0], *t[1]]))
json_value = st.recursive(st.one_of(hostile.filter(lambda v: not isinstance(v, int) or abs(v) < 10**300),
                                    st.integers(0, 5000), st.floats(0, 50)),
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                          max_leaves=6)
json_row = st.dictionaries(st.sampled_from(["arrival_s", "prompt_tokens", "output_tokens", "prefix_id", "prefix_tokens", "x"]),
                           json_value, max_size=6)


def _dump(row) -> str:
    try:
        return json.dumps(row)
    except (ValueError, TypeError):
        return "{"


jsonl_text = st.lists(st.one_of(json_row.map(_dump), st.text(max_size=20), st.just("{" * 3000)), max_size=10).map("\n".join)
any_text = st.one_of(csv_text, jsonl_text, st.text(max_size=200), st.binary(max_size=200))


@fuzz("traces")
@given(batches(any_text))
def test_parse_trace_returns_rows_or_names_the_trace(batch):
    check_each(batch, _check_text)


def _check_text(text):
    try:
        rows = parse_trace(text)
    except InputError as e:
        assert e.issues and all(i.field == "trace" and len(i.message) < 600 for i in e.issues)
        return
    assert rows and all(r.prompt_tokens >= 1 and r.output_tokens >= 1 and 0 <= r.arrival_s <= 1e10 for r in rows)
    assert all(a.arrival_s <= b.arrival_s for a, b in zip(rows, rows[1:], strict=False))
    cfg = EngineConfig().with_(arrival="trace", trace=rows)
    r = simulate(cfg)
    if measure_memory(r):
        peak_of(lambda: simulate(cfg), r)
    assert r.errors or r.completed == len(rows)
