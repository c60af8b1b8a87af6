"""Import a request trace from CSV or JSON Lines text.

Columns (CSV header or JSON keys): `arrival_s`, `prompt_tokens`, `output_tokens`, and optionally
`prefix_id` and `prefix_tokens`. Common aliases are accepted (arrival_time, timestamp; input_tokens,
prompt_len; output_len, max_tokens). Arrival times are seconds from the start of the trace and must
not decrease. Malformed rows raise `InputError` whose issues name the row, the column and the
allowed range; at most ten are listed.

    arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens
    0.00,6120,180,chat-system,512
    0.35,30211,90,,

Bytes are decoded, and line endings made \n, by sim.userfile (the reader of every file a user hands
kvlab; `kvlab engine --trace` reads the file through it, at most MAX_TRACE_BYTES + 1 bytes). The
text is read as a stream, one line at a time, with a limit on everything an uploaded file
could inflate, each refusal naming its limit: the size of the file (MAX_TRACE_BYTES, which also
sizes the server's websocket messages and the browser's check before upload), the length of a line (MAX_LINE_CHARS), the length
of a number (MAX_NUMBER_CHARS: no 5,000-digit integers), JSON nesting (rows are flat objects),
the number of rows (MAX_ROWS) and the arrival time (MAX_ARRIVAL_S). `TraceReader` reads a bounded
number of rows per call, so a server can read a big file in slices between other sessions' work.
"""

from __future__ import annotations

import csv
import json
import re

from ..errors import InputError, Issue
from ..fields import shown
from ..userfile import FileProblem, decode
from .config import TraceRequest

ALIASES = {
    "arrival_s": ("arrival_s", "arrival_time", "arrival_time_s", "timestamp", "time_s", "arrival"),
    "prompt_tokens": ("prompt_tokens", "input_tokens", "prompt_len", "input_len", "input_length", "context_tokens"),
    "output_tokens": ("output_tokens", "output_len", "output_length", "max_tokens", "generated_tokens"),
    "prefix_id": ("prefix_id", "prefix", "system_prompt_id"),
    "prefix_tokens": ("prefix_tokens", "prefix_len", "prefix_length"),
}
MAX_ROWS = 2_000_000  # the engine's num_requests bound
# The largest trace file accepted: a 10^6-request trace of ~30-byte CSV rows fits. One place for the
# limit: `kvlab serve` sizes its websocket messages from it (app/server/serve.py: the browser sends a file
# base64-encoded in one message) and the page refuses a larger file before sending it (app/templates/a11y.js
# reads it from the file box's kv-upload-max-<bytes> class). Decimal MB, so the page can say "32 MB" exactly.
MAX_TRACE_BYTES = 32_000_000
MAX_PROMPT_TOKENS = 2**21
MAX_OUTPUT_TOKENS = 2**20
MAX_LISTED = 10
MAX_LINE_CHARS = 4096  # a row is three numbers, a prefix id (cut to 200 characters) and a count
MAX_NUMBER_CHARS = 32  # '1.2345678901234567e+308' is 23
MAX_ARRIVAL_S = 1e10  # 317 years; float seconds still resolve microseconds there
EMPTY = "is empty: expected a CSV header (arrival_s,prompt_tokens,output_tokens) or JSON lines"


_FIRST_BRACE = re.compile(r"\s*\{")


class _TooBig(ValueError):
    pass


def _json_number(text: str):
    if len(text) > MAX_NUMBER_CHARS:
        raise _TooBig(f"a number of {len(text):,} characters (at most {MAX_NUMBER_CHARS})")
    return float(text) if any(c in text for c in ".eE") else int(text)


def _json_constant(name: str):
    raise _TooBig(f"{name} is not a number a trace can hold")


def _column_map(keys) -> tuple[dict[str, str], list[str]]:
    lower = {str(k).strip().lower(): k for k in keys if k is not None}
    found, missing = {}, []
    for name, options in ALIASES.items():
        hit = next((lower[o] for o in options if o in lower), None)
        if hit is not None:
            found[name] = hit
        elif name in ("arrival_s", "prompt_tokens", "output_tokens"):
            missing.append(name)
    return found, missing


def _number(value) -> int | float | None:
    """A JSON number, or CSV text of at most MAX_NUMBER_CHARS characters, as a number; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    if isinstance(value, str) and len(value) <= MAX_NUMBER_CHARS:
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _int(value, low: int, high: int) -> int | str:
    x = _number(value)
    if x is None or (isinstance(x, float) and not x.is_integer()):
        return f"must be an integer between {low:,} and {high:,}, got {shown(value)}"
    if not low <= x <= high:  # exact for ints of any size
        return f"must be between {low:,} and {high:,}, got {shown(x)}"
    return int(x)


def _float(value) -> float | str:
    x = _number(value)
    if x is None or not 0 <= x <= MAX_ARRIVAL_S:  # nan fails both comparisons
        return f"must be a number of seconds >= 0 (at most {MAX_ARRIVAL_S:g}), got {shown(value)}"
    return float(x)


def _row(raw: dict, cols: dict[str, str], line: int, previous_s: float, issues: list[Issue]) -> TraceRequest | None:
    where = f"row {line}"
    t = _float(raw.get(cols["arrival_s"]))
    p = _int(raw.get(cols["prompt_tokens"]), 1, MAX_PROMPT_TOKENS)
    o = _int(raw.get(cols["output_tokens"]), 1, MAX_OUTPUT_TOKENS)
    prefix_id = raw.get(cols["prefix_id"]) if "prefix_id" in cols else None
    prefix_id = None if prefix_id in (None, "") else str(prefix_id)[:200]
    pt_raw = raw.get(cols["prefix_tokens"]) if "prefix_tokens" in cols else None
    pt = 0 if pt_raw in (None, "") else _int(pt_raw, 0, MAX_PROMPT_TOKENS)
    for name, value in (("arrival_s", t), ("prompt_tokens", p), ("output_tokens", o), ("prefix_tokens", pt)):
        if isinstance(value, str):
            issues.append(Issue("trace", f"{where}: {name} {value}"))
    if any(isinstance(v, str) for v in (t, p, o, pt)):
        return None
    if t < previous_s:
        issues.append(Issue("trace", f"{where}: arrival_s {t:g} is earlier than the previous row's {previous_s:g}; "
                                     "sort the trace by arrival time"))
        return None
    if prefix_id is not None and pt == 0:
        issues.append(Issue("trace", f"{where}: prefix_id {prefix_id!r} needs prefix_tokens between 1 and the prompt length"))
        return None
    if pt >= p:
        issues.append(Issue("trace", f"{where}: prefix_tokens must be shorter than prompt_tokens ({p:,}), got {pt:,}"))
        return None
    if pt and prefix_id is None:
        issues.append(Issue("trace", f"{where}: prefix_tokens given without a prefix_id"))
        return None
    return TraceRequest(t, p, o, prefix_id, pt)


def _lines(text: str):
    """(line number, line) without the newline, never longer than MAX_LINE_CHARS."""
    number = 0
    start = 0
    n = len(text)
    while start < n:
        end = text.find("\n", start)
        end = n if end < 0 else end
        number += 1
        if end - start > MAX_LINE_CHARS + 1:
            raise InputError(Issue("trace", f"line {number:,} is {end - start:,} characters long; "
                                            f"at most {MAX_LINE_CHARS:,} are accepted per row"))
        line = text[start:end]
        start = end + 1
        yield number, line


class TraceReader:
    """Parse trace text a slice at a time: `advance(rows)` until it returns True, then `rows`
    (a tuple of TraceRequest) or `issues` (a list of Issue). `parse_trace` does it in one go."""

    def __init__(self, text):
        if isinstance(text, str | bytes | bytearray) and len(text) > MAX_TRACE_BYTES:
            self._fail(Issue("trace", f"is {len(text):,} bytes; files up to {MAX_TRACE_BYTES / 1e6:g} MB "
                                      f"({MAX_TRACE_BYTES:,} bytes) are accepted"))
            text = None
        elif isinstance(text, str | bytes | bytearray):
            # The text rules of every user file (sim.userfile): a spreadsheet's byte-order mark,
            # UTF-16, \r\n and \r-only line endings.
            try:
                text = decode(text)
            except FileProblem as e:
                text = None
                self._fail(Issue("trace", f"{e.messages()[0]} (expected CSV or JSON lines)"))
        self.total_chars = len(text) if isinstance(text, str) else 0
        self.rows: tuple[TraceRequest, ...] = ()
        self.issues: list[Issue] = getattr(self, "issues", [])
        self.done = bool(self.issues)
        self._out: list[TraceRequest] = []
        self._previous = 0.0
        self._cols: dict[str, str] | None = None
        self.position = 0  # characters read, for progress
        if self.done:
            return
        # No strip(): each would copy a file of tens of MB while other sessions wait.
        if not isinstance(text, str) or not text or text.isspace():
            self._fail(Issue("trace", EMPTY))
            return
        self._jsonl = _FIRST_BRACE.match(text) is not None
        self._lines = _lines(text)
        self._header: list[str] | None = None

    def _fail(self, *issues: Issue) -> None:
        self.issues = list(issues)
        self.done = True

    @property
    def progress(self) -> float:
        return 1.0 if self.done else self.position / max(self.total_chars, 1)

    def advance(self, max_rows: int = 1 << 62) -> bool:
        """Read up to `max_rows` more rows; True when finished (rows or issues are set)."""
        if self.done:
            return True
        try:
            self._advance(max_rows)
        except InputError as e:
            self._fail(*e.issues)
        return self.done

    def _advance(self, max_rows: int) -> None:
        read = 0
        for number, line in self._lines:
            self.position += len(line) + 1
            if not line.strip():
                continue
            raw = self._json_row(number, line) if self._jsonl else self._csv_row(number, line)
            if raw is None:  # the CSV header
                continue
            self._add(number, raw)
            read += 1
            if read >= max_rows:
                return
        self._finish()

    def _json_row(self, number: int, line: str) -> dict:
        try:
            obj = json.loads(line, parse_int=_json_number, parse_float=_json_number, parse_constant=_json_constant)
        except _TooBig as e:
            raise InputError(Issue("trace", f"line {number:,}: {e}")) from None
        except RecursionError:
            raise InputError(Issue("trace", f"line {number:,}: nested too deeply; each line must be a flat JSON object")) from None
        except ValueError as e:
            raise InputError(Issue("trace", f"line {number:,}: not valid JSON ({getattr(e, 'msg', 'unreadable')})")) from None
        if not isinstance(obj, dict):
            raise InputError(Issue("trace", f"line {number:,}: each line must be a JSON object"))
        if any(isinstance(v, dict | list) for v in obj.values()):
            raise InputError(Issue("trace", f"line {number:,}: nested values; each line must be a flat JSON object "
                                            "of numbers and strings"))
        if self._cols is None:
            self._set_columns(obj.keys())
        return obj

    def _csv_row(self, number: int, line: str) -> dict | None:
        try:
            fields = next(csv.reader([line]))
        except csv.Error as e:
            raise InputError(Issue("trace", f"line {number:,}: not valid CSV ({e})")) from None
        if self._header is None:
            self._header = fields
            self._set_columns(fields)
            return None
        return dict(zip(self._header, fields, strict=False))

    def _set_columns(self, keys) -> None:
        cols, missing = _column_map(keys)
        if missing:
            found = ", ".join(sorted(shown(str(k)) for k in keys))
            raise InputError(Issue("trace", f"is missing column(s) {', '.join(missing)}; found {found[:200]}"))
        self._cols = cols

    def _add(self, number: int, raw: dict) -> None:
        if len(self._out) >= MAX_ROWS:
            raise InputError(Issue("trace", f"has more than {MAX_ROWS:,} rows; at most {MAX_ROWS:,} are accepted"))
        row = _row(raw, self._cols, number, self._previous, self.issues)
        if row is not None:
            self._out.append(row)
            self._previous = row.arrival_s
        if len(self.issues) >= MAX_LISTED:
            self.issues.append(Issue("trace", "further rows not checked; fix the ones above first"))
            self._finish()
            raise InputError(self.issues)

    def _finish(self) -> None:
        self.done = True
        if self.issues:
            return
        if self._cols is None:
            self.issues = [Issue("trace", EMPTY)]
        elif not self._out:
            self.issues = [Issue("trace", "has a header but no rows")]
        else:
            self.rows = tuple(self._out)
        self._out = []


def parse_trace(text) -> tuple[TraceRequest, ...]:
    """Parse CSV or JSONL text (or UTF-8 bytes) into trace rows; raise InputError naming every
    bad row (first ten) or the limit a file exceeds."""
    reader = TraceReader(text)
    reader.advance()
    if reader.issues:
        raise InputError(reader.issues)
    return reader.rows


def format_trace(rows) -> str:
    """The inverse of parse_trace for CSV, used to export a generated workload as a trace."""
    lines = ["arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens"]
    for r in rows:
        lines.append(f"{r.arrival_s:.6f},{r.prompt_tokens},{r.output_tokens},{r.prefix_id or ''},{r.prefix_tokens or ''}")
    return "\n".join(lines) + "\n"
