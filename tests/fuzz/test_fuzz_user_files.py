"""Fuzz every file a user hands kvlab, through its command line: `kvlab --config`, `kvlab engine
--trace`, `kvlab calibrate --from-measurements`. Random bytes, byte-order marks, UTF-16, \\r and
\\r\\n line endings, empty files, valid files with one field broken: each exits 0 or 2, every
error line names the option and the file, never a traceback (a raise here fails the test).
Special and huge files (/dev/zero, pipes, directories, a 300 MB file) and the memory they cost are
checked in tests/test_user_files.py, in subprocesses.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import json
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from kvlab.calibration import cli as calibrate_cli
from kvlab.sim.userfile import CONFIG_JSON, FileProblem, decode

from kvlab import cli

from .support import batches, check_each, fuzz, hostile
from .test_fuzz_config_json import mutated as mutated_config
from .test_fuzz_traces import csv_text, jsonl_text

DIR = Path(tempfile.mkdtemp(prefix="kvlab-fuzz-files-"))
CHECKPOINT = json.loads((Path(__file__).parent / "data" / "calibration_checkpoint.json").read_text())

ENDINGS = ["\n", "\r\n", "\r"]
ENCODINGS = [("utf-8", b""), ("utf-8", codecs.BOM_UTF8), ("utf-16-le", codecs.BOM_UTF16_LE),
             ("utf-16-be", codecs.BOM_UTF16_BE), ("utf-32-le", codecs.BOM_UTF32_LE), ("latin-1", b"")]


def as_file(texts):
    """Text as a user's editor might save it: any line ending, any of ENCODINGS, with or without its mark."""
    return st.tuples(texts, st.sampled_from(ENDINGS), st.sampled_from(ENCODINGS)).map(
        lambda t: t[2][1] + t[0].replace("\n", t[1]).encode(t[2][0], "replace"))


def _dump(value) -> str:
    try:
        return json.dumps(value)
    except (ValueError, TypeError):
        return "{"


def _containers(obj, path=()):
    """Every path to an object or array inside `obj`, and to each of their entries."""
    if isinstance(obj, dict | list):
        for key in (obj if isinstance(obj, dict) else range(len(obj))):
            yield (*path, key)
            yield from _containers(obj[key], (*path, key))


PATHS = sorted(_containers(CHECKPOINT), key=str)
value = st.one_of(hostile, st.sampled_from([[], {}, [{}], [None], "", None]))
edit = st.tuples(st.sampled_from(PATHS), st.sampled_from(["set", "delete"]), value)


def _edited(edits) -> str:
    obj = json.loads(json.dumps(CHECKPOINT))
    for path, action, new in edits:
        parent = obj
        try:
            for key in path[:-1]:
                parent = parent[key]
            if action == "delete":
                del parent[path[-1]]
            else:
                parent[path[-1]] = new
        except (KeyError, IndexError, TypeError):  # an earlier edit removed or replaced the path
            pass
    return _dump(obj)


checkpoint_text = st.lists(edit, min_size=1, max_size=3).map(_edited)
junk = st.one_of(st.binary(max_size=200), st.text(max_size=100).map(str.encode), st.just(b""),
                 st.sampled_from([codecs.BOM_UTF8, codecs.BOM_UTF16_LE, b"\xff\xfe\x00", b"\r\r\r", b"[" * 5000]))


def _write(data: bytes) -> str:
    path = DIR / "input.file"
    path.write_bytes(data)
    return str(path)


def _run(main, argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, err.getvalue()


def _check(main, argv, prog: str, option: str, path: str):
    code, err = _run(main, argv)
    assert code in (0, 2), (code, err[-2000:])
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith(f"{prog}: error: ")]
    if code == 2:
        assert errors, err
    for line in errors:
        if line.startswith(f"{prog}: error: {option}: "):
            assert path in line, line  # each problem names the file
    return code


@fuzz("files_config")
@given(batches(st.one_of(as_file(mutated_config.map(_dump)), as_file(st.text(max_size=200)), junk)))
def test_config_file(batch):
    check_each(batch, lambda data: _check(cli.main, ["--config", _write(data)], "kvlab", "--config", str(DIR)))


@fuzz("files_trace")
@given(batches(st.one_of(as_file(csv_text), as_file(jsonl_text), junk)))
def test_trace_file(batch):
    check_each(batch, lambda data: _check(cli.main, ["engine", "--num-requests", "8", "--trace", _write(data)],
                                          "kvlab engine", "--trace", str(DIR)))


@fuzz("files_measurements")
@given(batches(st.one_of(as_file(checkpoint_text), checkpoint_text.map(str.encode), junk)))
def test_measurements_file(batch):
    check_each(batch, _check_measurements)


def _check_measurements(data: bytes):
    path = _write(data)
    argv = ["--backend", "numpy", "--quick", "--output", str(DIR / "cpu-check-fuzz.json"), "--from-measurements", path]
    _check(calibrate_cli.main, argv, "kvlab calibrate", "--from-measurements", str(DIR))


@fuzz("files_reader")
@given(batches(st.one_of(junk, as_file(st.text(max_size=200)), as_file(mutated_config.map(_dump)))))
def test_the_reader_itself(batch):
    """sim.userfile on any bytes: text without \\r, or a FileProblem of one-line messages."""
    check_each(batch, _check_reader)


def _check_reader(data: bytes):
    try:
        text = decode(data, "f.json")
    except FileProblem as e:
        assert e.lines() and all(line.startswith("f.json: ") and "\n" not in line for line in e.lines())
        return
    assert "\r" not in text and not text.startswith("\ufeff")
    try:
        value = CONFIG_JSON.parse(data, "f.json")
    except FileProblem as e:
        assert all(line.startswith("f.json: ") and "\n" not in line for line in e.lines())
        return
    assert isinstance(value, dict)
