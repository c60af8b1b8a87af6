"""Fuzz the command lines: any options give exit status 0 or 2 and never a traceback."""

from __future__ import annotations

import contextlib
import io

from hypothesis import given
from hypothesis import strategies as st
from kvlab.sim import cli as sim_cli
from kvlab.sim.engine import cli as engine_cli

from kvlab import cli

from .support import batches, check_each, fuzz, hostile


def _options(parser) -> list[str]:
    return sorted({o for a in parser._actions for o in a.option_strings if o.startswith("--") and o not in ("--help",)})


SIM_OPTIONS = _options(sim_cli.build_parser())
ENGINE_OPTIONS = [o for o in _options(engine_cli.build_parser()) if o not in ("--trace", "--config")]
value = st.one_of(hostile.map(str), st.sampled_from(["1", "0", "2.5", "fp8", "vllm", "closed", "1,x", "h100-sxm"]))


def _argv(options):
    return st.lists(st.tuples(st.sampled_from(options), value), max_size=5).map(
        lambda pairs: [x for o, v in pairs for x in (o, v)])


sim_argv = _argv([o for o in SIM_OPTIONS if o != "--config"])
engine_argv = _argv(ENGINE_OPTIONS).map(lambda a: ["engine", "--num-requests", "8", *a] if "--num-requests" not in a else
                                         ["engine", *a])


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, err.getvalue()


@fuzz("cli")
@given(batches(st.one_of(sim_argv, engine_argv)))
def test_cli_exits_0_or_2_without_traceback(batch):
    check_each(batch, _check_argv)


def _check_argv(argv):
    code, err = _run(argv)
    assert code in (0, 2), (argv, code, err[-500:])
    assert "Traceback" not in err
    if code == 2:
        assert err.strip()
