"""Trace uploads are read as a stream with a named limit on everything a file could inflate."""

from __future__ import annotations

import pytest
from kvlab.sim.engine import parse_trace
from kvlab.sim.engine import trace as T
from kvlab.sim.errors import InputError

HEAD = "arrival_s,prompt_tokens,output_tokens\n"


def _refusal(text) -> str:
    with pytest.raises(InputError) as e:
        parse_trace(text)
    assert all(i.field == "trace" for i in e.value.issues)
    return str(e.value)


@pytest.mark.parametrize("text, needle", [
    ("", "is empty"),
    ("   \n\n", "is empty"),
    (b"\x80\xff,1\n", "is not UTF-8 text"),
    (b"\xff\xfe", "is empty"),  # a UTF-16 byte-order mark and nothing after it
    (HEAD, "has a header but no rows"),
    (HEAD + "0," + "x" * 200_000 + ",5\n", f"at most {T.MAX_LINE_CHARS:,} are accepted per row"),
    (HEAD + '0,"' + "1" * 4000 + "\n" * 40 + '",5\n', "row 2: prompt_tokens must be an integer"),
    (HEAD + "0," + "9" * 4000 + ",5\n", "prompt_tokens must be an integer"),
    ('{"arrival_s": 0, "prompt_tokens": ' + "9" * 3000 + ', "output_tokens": 1}\n', f"(at most {T.MAX_NUMBER_CHARS})"),
    ('{"arrival_s": 0, "prompt_tokens": 5, "output_tokens": 1, "x": ' + "[" * 2000 + "]" * 2000 + "}\n", "flat JSON object"),
    ('{"a": ' + "[" * 100_000, "characters long"),
    ('{"arrival_s": NaN, "prompt_tokens": 5, "output_tokens": 1}\n', "NaN is not a number"),
    ('{"arrival_s": 1e300, "prompt_tokens": 5, "output_tokens": 1}\n', "at most 1e+10"),
    (HEAD + "1e11,5,5\n", "at most 1e+10"),
    (HEAD + "0,5,5,extra\n0,5\n", "row 3: output_tokens must be an integer"),
])
def test_each_limit_is_named(text, needle):
    assert needle in _refusal(text)


def test_row_count_limit(monkeypatch):
    monkeypatch.setattr(T, "MAX_ROWS", 3)
    assert "at most 3 are accepted" in _refusal(HEAD + "0,5,5\n" * 4)
    assert len(parse_trace(HEAD + "0,5,5\n" * 3)) == 3


def test_file_size_limit(monkeypatch):
    monkeypatch.setattr(T, "MAX_TRACE_BYTES", 40)
    big = HEAD + "0,5,5\n"  # 44 bytes
    for text in (big, big.encode(), bytearray(big.encode())):
        assert "is 44 bytes; files up to 4e-05 MB (40 bytes) are accepted" in _refusal(text)
    monkeypatch.setattr(T, "MAX_TRACE_BYTES", len(big))  # a file of exactly the limit is read
    assert len(parse_trace(big)) == 1


def test_a_reader_reads_in_slices_with_progress():
    text = HEAD + "".join(f"{i},10,5\n" for i in range(1000))
    r = T.TraceReader(text)
    steps = 0
    while not r.advance(100):
        steps += 1
        assert 0 < r.progress <= 1
    assert steps == 10 and len(r.rows) == 1000 and not r.issues
    assert r.rows == parse_trace(text) == parse_trace(text.encode())


def test_crlf_and_jsonl():
    rows = parse_trace("arrival_s,prompt_tokens,output_tokens\r\n0,5,5\r\n1,6,7\r\n")
    assert [(r.arrival_s, r.prompt_tokens, r.output_tokens) for r in rows] == [(0.0, 5, 5), (1.0, 6, 7)]
    rows = parse_trace('{"arrival_s": 0.5, "prompt_tokens": 5, "output_tokens": 2, "prefix_id": "s", "prefix_tokens": 2}\n')
    assert rows[0].prefix_id == "s" and rows[0].prefix_tokens == 2
