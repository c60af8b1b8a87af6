"""What every kvlab command line shares: option names, reading values, reporting problems.

- One option name per setting: the field's own name with dashes (`prompt_tokens` is
  `--prompt-tokens` in `kvlab`, `kvlab engine` and the Python API alike). Old names stay for one
  release as aliases that print a notice on stderr.
- Every problem at once, one line each, exit status 2, never a traceback: argparse stops at the
  first bad value, so numbers and choices are read as text here and checked afterwards, all of
  them, by the same validators the simulator uses (sim.fields).
- Numbers in help and messages as people write them: "1 to 4,194,304", not "4.1943e+06".

Standard library only, like the rest of sim/.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field

from .fields import Bound, check_choice, check_number, fmt, shown


def flag(name: str) -> str:
    """The option of a field: `prompt_tokens` -> `--prompt-tokens`."""
    return "--" + name.replace("_", "-")


class ArgumentProblem(Exception):
    """A command line argparse cannot go on reading (a missing value, clashing options)."""


class Parser(argparse.ArgumentParser):
    """argparse that reports instead of exiting, with no abbreviations (`--prompt` must never be
    read as a prefix of some other option) and a record of the values to check after parsing."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.checks: dict[str, Check] = {}
        self.renamed: dict[str, str] = {}  # old option -> current option

    def error(self, message: str):
        raise ArgumentProblem(message)

    def add_option(self, name: str, *, aliases: tuple[str, ...] = (), bound: Bound | None = None, choices=None,
                   integer_choices: bool = False, default=None, unset: str | None = None, help: str | None = None,
                   dest: str | None = None):
        """One option named after its field, checked after parsing: a number within `bound`, or one
        of `choices`. `aliases` are old names, accepted with a notice and left out of --help.
        `unset` says what an option without a default means when it is not given."""
        dest = dest or name
        current = flag(name)
        metavar = None
        if bound is not None:
            kind = "integer" if bound.integer else "number"
            tail = f"default {fmt(default)}" if default is not None else f"unset: {unset}" if unset else ""
            help = f"{help or bound.help} ({kind}, {fmt(bound.low)} to {fmt(bound.high)}{'; ' + tail if tail else ''})"
            metavar = "N" if bound.integer else "X"
        elif choices is not None:
            metavar = "{" + ",".join(map(str, choices)) + "}"
            if default is not None:
                help = f"{help} (default {default})" if help else f"default {default}"
        self.add_argument(current, dest=dest, default=default, help=help, metavar=metavar)
        for old in aliases:
            self.renamed[old] = current
            self.add_argument(old, dest=dest, default=default, help=argparse.SUPPRESS)
        if bound is not None or choices is not None:
            self.checks[dest] = Check(name, bound, tuple(choices) if choices is not None else None, integer_choices)


@dataclass(frozen=True)
class Check:
    field: str
    bound: Bound | None
    choices: tuple | None
    integer_choices: bool = False

    def read(self, text: str):
        """(value, None) or (None, message). The message names the allowed values."""
        if self.bound is not None:
            b = self.bound
            try:
                value = int(text) if b.integer else float(text)
            except ValueError:
                kind = "an integer" if b.integer else "a number"
                return None, f"must be {kind} between {fmt(b.low)} and {fmt(b.high)}, got {shown(text)}"
            issue = check_number(self.field, value, b)
            return (None, issue.message) if issue else (value, None)
        value = text
        if self.integer_choices:
            try:
                value = int(text)
            except ValueError:
                pass
        issue = check_choice(self.field, value, self.choices)
        return (None, issue.message) if issue else (value, None)


@dataclass
class Parsed:
    args: argparse.Namespace | None
    problems: list[str] = field(default_factory=list)  # "--option: message", one per problem
    notices: list[str] = field(default_factory=list)


def parse(parser: Parser, argv: list[str]) -> Parsed:
    """Parse `argv`; read every checked option's text into its value. A bad value is set to its
    default and reported, so later checks (the simulator's own) still see the other settings."""
    try:
        args, extras = parser.parse_known_args(argv)
    except ArgumentProblem as e:
        return Parsed(None, [str(e)])
    out = Parsed(args)
    if extras:
        unknown = [x for x in extras if x.startswith("-")]
        out.problems.append(f"unrecognized option{'s' if len(unknown) > 1 else ''} {', '.join(shown(x) for x in unknown)}"
                            if unknown else f"unexpected argument {shown(extras[0])}")
    for dest, check in parser.checks.items():
        raw = getattr(args, dest)
        if not isinstance(raw, str):  # the default, not typed in
            continue
        value, problem = check.read(raw)
        if problem is None:
            setattr(args, dest, value)
        else:
            out.problems.append(f"{flag(check.field)}: {problem}")
            setattr(args, dest, parser.get_default(dest))
    for token in argv:
        old = token.split("=", 1)[0]
        if old in parser.renamed and token.startswith("--"):
            out.notices.append(f"{old} is now {parser.renamed[old]}; the old name will be removed in the next release")
    return out


def report(prog: str, lines: list[str], kind: str = "error", stream=None) -> None:
    stream = stream or sys.stderr
    for line in lines:
        print(f"{prog}: {kind}: {line}", file=stream)
