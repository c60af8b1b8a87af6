"""Every file a user hands kvlab (`--config`, `--trace`, `--from-measurements`) is read by one
reader (sim/userfile.py): refused while reading when too big, endless (/dev/zero, a pipe) or not a
file, decoded whatever its byte-order mark and line endings, shape-checked, and every problem is
one exit-2 line naming the file (its path shortened) and the field. Never a traceback.

Memory is measured in a subprocess (its own peak RSS), under an address-space limit, so a reader
that reads a whole endless file fails the test within seconds instead of filling the machine. The
peak is /proc/self/status's VmHWM, not resource.getrusage's ru_maxrss: Linux carries ru_maxrss
across exec, so a child of the pytest process starts at the pytest process's own peak (156 MiB
measured on a full run), while VmHWM belongs to the child's new address space.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from kvlab.calibration import cli as calibrate_cli
from kvlab.sim.engine import parse_trace
from kvlab.sim.engine.trace import MAX_TRACE_BYTES
from kvlab.sim.userfile import shown_path

from kvlab import cli

CHECKPOINT = Path(__file__).parent / "fuzz" / "data" / "calibration_checkpoint.json"
CSV = "arrival_s,prompt_tokens,output_tokens\n0,100,5\n0.5,300,9\n"
JSONL = '{"arrival_s": 0, "prompt_tokens": 100, "output_tokens": 5}\n{"arrival_s": 0.5, "prompt_tokens": 300, "output_tokens": 9}\n'
ADDRESS_SPACE_BYTES = 2 << 30
PROBE = f"""
import contextlib, io, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({ADDRESS_SPACE_BYTES}, {ADDRESS_SPACE_BYTES}))
from kvlab import cli
err = io.StringIO()
with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
    code = cli.main(sys.argv[1:])
peak_kib = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(code, peak_kib * 1024)
print(err.getvalue(), end="")
"""


def _probe(argv: list[str], stdin=None) -> tuple[int, int, str]:
    """(exit status, peak RSS in bytes, stderr) of `kvlab argv` in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], stdin=stdin, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in out.stderr and out.returncode == 0, out.stderr[-2000:]
    first, _, err = out.stdout.partition("\n")
    code, peak = first.split()
    return int(code), int(peak), err


def _run(main, argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    return code, err.getvalue()


# ---- size, special files, memory -------------------------------------------------------------------
@pytest.mark.parametrize(("argv", "peak_limit_bytes"), [
    # was: the whole of /dev/zero read into memory (7.4 GB in 20 s)
    (["engine", "--trace", "/dev/zero"], 150 * 2**20),
    # was: json.load of the whole file before any limit
    (["--config", "/dev/zero"], 100 * 2**20),
    # was: read_text of the whole file (and a traceback after)
    (["calibrate", "--backend", "numpy", "--from-measurements", "/dev/zero"], 250 * 2**20),
])
def test_an_endless_file_is_refused_after_its_limit(argv, peak_limit_bytes):
    code, peak, err = _probe(argv)
    assert code == 2 and "/dev/zero: is more than" in err, err
    assert len(err.splitlines()) == 1
    assert peak < peak_limit_bytes, f"peak RSS {peak / 2**20:.0f} MiB"


def test_a_300_mb_trace_is_refused_before_it_is_read(tmp_path):
    """Was: read whole (600 MB of memory), then refused for its size."""
    big = tmp_path / "big.csv"
    with open(big, "wb") as f:
        f.truncate(300_000_000)  # sparse: no disk written
    code, peak, err = _probe(["engine", "--trace", str(big)])
    assert code == 2 and f"big.csv: is 300,000,000 bytes; files up to 32 MB ({MAX_TRACE_BYTES:,} bytes)" in err, err
    assert peak < 150 * 2**20, f"peak RSS {peak / 2**20:.0f} MiB"


def test_an_endless_pipe_is_refused_after_the_limit():
    feeder = subprocess.Popen(["yes", "0,1,1"], stdout=subprocess.PIPE)
    try:
        code, peak, err = _probe(["engine", "--trace", "/dev/stdin"], stdin=feeder.stdout)
    finally:
        feeder.kill()
        feeder.wait()
    assert code == 2 and "/dev/stdin: is more than 32 MB" in err, err
    assert peak < 150 * 2**20, f"peak RSS {peak / 2**20:.0f} MiB"


@pytest.mark.parametrize("option", ["--config", "--trace", "--from-measurements"])
def test_a_directory_or_missing_file_is_one_line(tmp_path, option):
    main, argv = _command(option)
    for path, says in ((tmp_path, "(a directory, not a file)"), (tmp_path / "none.json", "(No such file or directory)")):
        code, err = _run(main, [*argv, option, str(path)])
        assert code == 2 and f"{option}: cannot read '{shown_path(path)}' {says}" in err, err
        assert "Traceback" not in err


def _command(option: str):
    """(main, the arguments before the file option) of the command that reads `option`."""
    if option == "--config":
        return cli.main, []
    if option == "--trace":
        return cli.main, ["engine", "--num-requests", "8"]
    return calibrate_cli.main, ["--backend", "numpy", "--quick"]


# ---- the calibration measurements ------------------------------------------------------------------
@pytest.mark.parametrize(("text", "says"), [
    ("", "is empty: expected a checkpoint or profile of kvlab calibrate"),
    ("not json", "is not valid JSON: Expecting value at line 1, column 1"),
    ("[1, 2]", "must be a JSON object ({...}), got an array"),
    ("{}", "measurements: is missing"),
    ('{"measurements": 5}', "measurements: must be a JSON object ({...}), got a number"),
    ('{"measurements": {"hbm": {"read": [{"size_bytes": 1}]}}}', "measurements.hbm.read[0].bytes_per_s: is missing"),
    ('{"measurements": {"hbm": {"read": "all"}}}', "measurements.hbm.read: must be an array, got a string"),
    ('{"measurements": {"gemm": {"points": [{"model": 1}]}}}', "measurements.gemm.points[0].shape: is missing"),
    ('{"measurements": {}, "duration_s": "long"}', "duration_s: must be a number >= 0, got 'long'"),
    ('{"measurements": {}}', "cannot be fitted: the CPU check measured no bandwidth"),
])
def test_measurements_of_the_wrong_shape_exit_2_naming_the_field(tmp_path, text, says):
    """Was: a traceback (exit 1) for a missing, non-JSON or oddly shaped file."""
    path = tmp_path / "ck.json"
    path.write_text(text)
    code, err = _run(calibrate_cli.main, ["--backend", "numpy", "--quick", "--output", str(tmp_path / "cpu-check-t.json"),
                                          "--from-measurements", str(path)])
    assert code == 2 and "Traceback" not in err
    assert f"kvlab calibrate: error: --from-measurements: {shown_path(path)}: {says}" in err, err


def test_a_good_checkpoint_fits(tmp_path):
    out = tmp_path / "cpu-check-t.json"
    code, err = _run(calibrate_cli.main, ["--backend", "numpy", "--quick", "--output", str(out),
                                          "--from-measurements", str(CHECKPOINT)])
    assert code == 0, err
    assert json.loads(out.read_text())["bandwidth_efficiency"] > 0


# ---- text: byte-order marks, encodings, line endings -------------------------------------------------
@pytest.mark.parametrize("text", [CSV, JSONL])
@pytest.mark.parametrize(("encoding", "mark"), [("utf-8", codecs.BOM_UTF8), ("utf-16-le", codecs.BOM_UTF16_LE),
                                                ("utf-16-be", codecs.BOM_UTF16_BE)])
def test_a_trace_with_a_byte_order_mark(text, encoding, mark):
    """Was: a CSV with a spreadsheet's mark refused (no arrival_s column), a JSON-lines one taken for CSV."""
    rows = parse_trace(mark + text.encode(encoding))
    assert [(r.arrival_s, r.prompt_tokens, r.output_tokens) for r in rows] == [(0.0, 100, 5), (0.5, 300, 9)]


@pytest.mark.parametrize("text", [CSV, JSONL])
@pytest.mark.parametrize("ending", ["\r", "\r\n"])
def test_a_trace_with_old_mac_or_windows_line_endings(tmp_path, text, ending):
    """Was: \\r-only line endings answered with Python's own csv message."""
    assert len(parse_trace(text.replace("\n", ending))) == 2
    path = tmp_path / "t.csv"
    path.write_bytes(codecs.BOM_UTF8 + text.replace("\n", ending).encode())
    code, err = _run(cli.main, ["engine", "--trace", str(path), "--json"])
    assert code == 0, err


def test_a_config_with_a_byte_order_mark_and_crlf(tmp_path):
    from kvlab.sim import catalog
    path = tmp_path / "config.json"
    path.write_bytes(codecs.BOM_UTF8 + json.dumps(catalog.model_entry("qwen3-8b")["config"], indent=2).replace("\n", "\r\n").encode())
    code, err = _run(cli.main, ["--config", str(path), "--json"])
    assert code == 0, err


# ---- paths in messages ----------------------------------------------------------------------------
@pytest.mark.parametrize("option", ["--config", "--trace", "--from-measurements"])
def test_a_long_path_is_shortened_in_each_message(option):
    """Was: a 5,000-character path echoed in full (--config repeated it twice, in its own words and
    in the operating system's)."""
    path = "/tmp/" + "d" * 4_940 + "/" + "x" * 50 + ".json"
    main, argv = _command(option)
    code, err = _run(main, [*argv, option, path])
    assert code == 2 and "Traceback" not in err
    lines = [line for line in err.splitlines() if option in line]
    assert lines and all(len(line) < 250 for line in lines), err
    assert "\u2026" + path[-60:] in lines[0]


def test_an_unprintable_path_is_escaped(tmp_path):
    path = str(tmp_path / "a\nb\udcff.csv")  # a newline and an undecodable byte (surrogate-escaped)
    code, err = _run(cli.main, ["engine", "--trace", path])
    assert code == 2 and len(err.splitlines()) == 1 and "a\\nb\\udcff.csv" in err, err
