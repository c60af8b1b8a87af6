"""Every kvlab command line refuses bad input with exit status 2 and one line per problem, never a
traceback: arbitrary big integers, floats (nan, inf, 1e308), unicode and empty strings, given to
every option of `kvlab`, `kvlab engine`, `kvlab calibrate` and `kvlab serve`.

In-process through each `main(argv)` (fast); a few cases also in a subprocess, where a traceback
would show on stderr. KVLAB_FUZZ_EXAMPLES sets the examples per property (default 150).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kvlab.app.server import serve as serve_cli
from kvlab.calibration import cli as calibrate_cli
from kvlab.sim import cli as sim_cli
from kvlab.sim.cliargs import flag
from kvlab.sim.engine import cli as engine_cli

EXAMPLES = int(os.environ.get("KVLAB_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

VALUES = st.one_of(
    st.integers(min_value=-(10**500), max_value=10**500).map(str),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["nan", "-nan", "NaN", "inf", "-inf", "Infinity", "1e308", "-1e308", "1e309", "1e-400", "0", "-0", "", " ",
                     "1_000", "0x10", "1.5", "١٢٣", "½", "Ⅷ", "9" * 401, "9" * 5000, "-" + "9" * 401, "\x00", "é", "🙂", "../x"]),
    st.text(max_size=24),
)


def value_options(parser: argparse.ArgumentParser) -> list[str]:
    """Every option that takes a value (its current name; old names too, they are options as well)."""
    return sorted(s for a in parser._actions if a.option_strings and a.nargs is None and a.dest != "help"
                  for s in a.option_strings)


def argvs(options: list[str]):
    pair = st.tuples(st.sampled_from(options), VALUES, st.booleans())
    return st.lists(pair, min_size=1, max_size=5).map(
        lambda pairs: [x for opt, val, joined in pairs for x in ([f"{opt}={val}"] if joined else [opt, val])])


def check_lines(err: str, prog: str) -> list[str]:
    lines = err.splitlines()
    assert "Traceback" not in err
    assert all(line.startswith((f"{prog}: error: ", f"{prog}: note: ")) for line in lines), err
    return [line for line in lines if line.startswith(f"{prog}: error: ")]


def named_bad_values(parser, argv: list[str]) -> set[str]:
    """Settings whose last value (--opt=value or --opt value, under any of its names) their own
    check refuses: each must be named in the errors."""
    by_option = {s: a for a in parser._actions for s in a.option_strings}
    last, i = {}, 0
    while i < len(argv):
        opt, joined, value = argv[i].partition("=")
        action = by_option.get(opt)
        if action is not None and action.nargs is None:
            if not joined:
                i += 1
                value = argv[i] if i < len(argv) else None
            last[action.dest] = value
        i += 1
    bad = set()
    for dest, value in last.items():
        check = parser.checks.get(dest)
        if check is not None and value is not None and check.read(value)[1] is not None:
            bad.add(flag(check.field))
    return bad


@FUZZ
@given(argvs(value_options(sim_cli.build_parser())))
def test_kvlab_any_values(capsys, argv):
    code = sim_cli.main(argv)
    out, err = capsys.readouterr()
    errors = check_lines(err, "kvlab")
    if code == 0:
        assert out and not errors
        return
    assert code == 2 and out == "" and errors, (argv, err)
    if not any("argument " in e for e in errors):  # argparse could read the line: every bad value is named
        for option in named_bad_values(sim_cli.build_parser(), argv):
            assert any(f"error: {option}: " in e for e in errors), (option, err)


@FUZZ
@given(argvs(value_options(engine_cli.build_parser())))
def test_kvlab_engine_any_values(capsys, argv):
    # The last option is unknown, so the line is always refused and nothing is simulated (a valid
    # line could ask for two million requests); every value before it is still read and checked.
    code = engine_cli.main([*argv, "--not-an-option"])
    out, err = capsys.readouterr()
    errors = check_lines(err, "kvlab engine")
    assert code == 2 and out == "" and errors, (argv, err)
    if not any("argument " in e for e in errors):
        assert any("'--not-an-option'" in e for e in errors), err
        for option in named_bad_values(engine_cli.build_parser(), argv):
            assert any(f"error: {option}: " in e for e in errors), (option, err)


def assert_parses_or_exits_2(capsys, parse_args, argv, prog):
    """An argument parser either accepts argv silently or exits 2 with one named line per problem."""
    try:
        parse_args(argv)
        code = 0
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    errors = check_lines(err, prog)
    assert (code == 0 and not errors) or (code == 2 and errors and out == ""), (argv, code, err)


@FUZZ
@given(argvs(value_options(calibrate_cli.build_parser())))
def test_kvlab_calibrate_argument_parsing(capsys, argv):
    assert_parses_or_exits_2(capsys, calibrate_cli.parse_args, argv, "kvlab calibrate")


@FUZZ
@given(argvs(["--port", "--no-show=x", "--prot"]))
def test_kvlab_serve_argument_parsing(capsys, argv):
    assert_parses_or_exits_2(capsys, serve_cli.parse_args, argv, "kvlab serve")


@pytest.mark.parametrize(("argv", "needle"), [
    (["--prompt-tokens", "9" * 401], "kvlab: error: --prompt-tokens: must be between 1 and 2,097,152, got a 401-digit integer"),
    (["--gpu-memory-utilization=-inf", "--concurrency", "1e308"], "kvlab: error: --gpu-memory-utilization: must be a number"),
    (["engine", "--num-requests", "9" * 5000, "--rate-per-s", "1e999"], "kvlab engine: error: --rate-per-s: must be a number"),
    (["engine", "--sweep", "1,x"], "kvlab engine: error: --sweep: "),
    (["engine", "--trace", "/no/such/file.csv"], "kvlab engine: error: --trace: cannot read"),
    (["engine", "--model", "🙂"], "kvlab engine: error: --model: "),
    (["calibrate", "--seed", "-1"], "kvlab calibrate: error: --seed: "),
    (["--config", ""], "kvlab: error: --config: cannot read"),
])
def test_in_a_subprocess_status_2_and_no_traceback(argv, needle):
    out = subprocess.run([sys.executable, "-m", "kvlab", *argv], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == "" and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert needle in out.stderr and all(line.startswith("kvlab") for line in out.stderr.splitlines()), out.stderr
