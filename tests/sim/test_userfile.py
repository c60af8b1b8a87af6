"""sim.userfile, the reader of every file a user hands kvlab: limits while reading, text rules,
shapes and their messages."""

from __future__ import annotations

import codecs

import pytest
from kvlab.sim.userfile import (
    CONFIG_JSON,
    AllOf,
    FileProblem,
    JsonFormat,
    ListOf,
    MapOf,
    Nullable,
    Num,
    Obj,
    Str,
    When,
    decode,
    read_bytes,
    shown_path,
)


def test_read_bytes_reads_up_to_the_limit_and_not_past_it(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    assert read_bytes(path, 100) == b"x" * 100  # exactly the limit is read
    with pytest.raises(FileProblem, match=r"is 100 bytes; files up to 99 bytes are accepted"):
        read_bytes(path, 99)
    with pytest.raises(FileProblem, match=r"/dev/zero: is more than 1,000 bytes"):
        read_bytes("/dev/zero", 1000)


@pytest.mark.parametrize(("data", "text"), [
    (b"a\r\nb\rc\n", "a\nb\nc\n"),
    (codecs.BOM_UTF8 + "é".encode(), "é"),
    (codecs.BOM_UTF16_LE + "é\r".encode("utf-16-le"), "é\n"),
    (codecs.BOM_UTF16_BE + "é".encode("utf-16-be"), "é"),
    (codecs.BOM_UTF32_LE + "é".encode("utf-32-le"), "é"),
    ("\ufeffpasted\r\n", "pasted\n"),
])
def test_decode_text_rules(data, text):
    assert decode(data) == text


def test_decode_refuses_what_is_not_text():
    with pytest.raises(FileProblem) as e:
        decode(b"ab\xff", "f.csv")
    assert e.value.lines() == ["f.csv: is not UTF-8 text (byte 2 cannot be read)"]
    with pytest.raises(FileProblem, match="nor UTF-16"):
        decode(codecs.BOM_UTF16_LE + b"\x00", "f.csv")


def test_shown_path_keeps_the_tail_and_escapes():
    assert shown_path("short.json") == "short.json"
    long = "/" + "d" * 200 + "/name.json"
    assert shown_path(long) == "\u2026" + long[-60:]
    assert shown_path("a\nb\x1b.json") == "a\\nb\\x1b.json"


SHAPE = Obj({"points": ListOf(Obj({"t_s": Num(0, above=True), "n": Num(0, 10, integer=True)}))},
            {"name": Str(), "extra": Nullable(MapOf(Str())),
             "layouts": ListOf(AllOf((Obj({"ok": Num()}), When(lambda v: v["ok"] > 0, Obj({"size": Num()})))))})
FORMAT = JsonFormat("a test file", 10_000, SHAPE)


@pytest.mark.parametrize(("text", "problems"), [
    ('{"points": []}', []),
    ('{}', ["points: is missing"]),
    ('{"points": [{"t_s": 0, "n": 1.5}]}', ["points[0].t_s: must be a number > 0, got 0",
                                            "points[0].n: must be an integer between 0 and 10, got 1.5"]),
    ('{"points": [{"t_s": NaN, "n": true}]}', ["points[0].t_s: must be a number > 0, got nan",
                                               "points[0].n: must be an integer between 0 and 10, got a boolean"]),
    # an integer past float's range (the CI fuzz run's case: a fit divided by it and raised OverflowError)
    ('{"points": [{"t_s": 4' + "0" * 400 + ', "n": 1}]}', ["points[0].t_s: must be a number > 0, got a 401-digit integer"]),
    ('{"points": [], "name": 5, "extra": {"a": 1}}', ["name: must be a string, got a number",
                                                      "extra.a: must be a string, got a number"]),
    ('{"points": [], "layouts": [{"ok": 0}, {"ok": 1}, {"ok": "x"}]}', ["layouts[1].size: is missing",
                                                                       "layouts[2].ok: must be a number, got 'x'"]),
])
def test_shapes_name_each_field(text, problems):
    if not problems:
        assert FORMAT.parse(text) == {"points": []}
        return
    with pytest.raises(FileProblem) as e:
        FORMAT.parse(text, "t.json")
    assert e.value.lines() == [f"t.json: {p}" for p in problems]


def test_at_most_ten_problems_are_listed():
    text = '{"points": [' + ",".join(['{"t_s": -1, "n": 1}'] * 30) + "]}"
    with pytest.raises(FileProblem) as e:
        FORMAT.parse(text, "t.json")
    assert len(e.value.lines()) == 11 and e.value.lines()[-1].startswith("t.json: and ")


def test_the_config_format_is_shared_by_files_and_pastes(tmp_path):
    path = tmp_path / "config.json"
    path.write_bytes(codecs.BOM_UTF8 + b'{"hidden_size": 8}\r\n')
    assert CONFIG_JSON.read(path) == CONFIG_JSON.parse('\ufeff{"hidden_size": 8}') == {"hidden_size": 8}
