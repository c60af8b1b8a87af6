"""Import a request trace from CSV or JSON Lines text.

Columns (CSV header or JSON keys): `arrival_s`, `prompt_tokens`, `output_tokens`, and optionally
`prefix_id` and `prefix_tokens`. Common aliases are accepted (arrival_time, timestamp; input_tokens,
prompt_len; output_len, max_tokens). Arrival times are seconds from the start of the trace and must
not decrease. Malformed rows raise `InputError` whose issues name the row, the column and the
allowed range; at most ten are listed.

    arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens
    0.00,6120,180,chat-system,512
    0.35,30211,90,,
"""

from __future__ import annotations

import csv
import io
import json
import math

from ..errors import InputError, Issue
from .config import TraceRequest

ALIASES = {
    "arrival_s": ("arrival_s", "arrival_time", "arrival_time_s", "timestamp", "time_s", "arrival"),
    "prompt_tokens": ("prompt_tokens", "input_tokens", "prompt_len", "input_len", "input_length", "context_tokens"),
    "output_tokens": ("output_tokens", "output_len", "output_length", "max_tokens", "generated_tokens"),
    "prefix_id": ("prefix_id", "prefix", "system_prompt_id"),
    "prefix_tokens": ("prefix_tokens", "prefix_len", "prefix_length"),
}
MAX_ROWS = 2_000_000
MAX_PROMPT_TOKENS = 2**21
MAX_OUTPUT_TOKENS = 2**20
MAX_LISTED = 10


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


def _int(value, low: int, high: int) -> int | str:
    if isinstance(value, bool):
        return f"must be an integer between {low:,} and {high:,}, got {value!r}"
    try:
        x = float(value) if isinstance(value, str) else value
        if not isinstance(x, int | float) or not math.isfinite(x) or x != int(x):
            raise ValueError
    except (TypeError, ValueError):
        return f"must be an integer between {low:,} and {high:,}, got {str(value)[:30]!r}"
    if not low <= x <= high:
        return f"must be between {low:,} and {high:,}, got {int(x):,}"
    return int(x)


def _float(value) -> float | str:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return f"must be a number of seconds >= 0, got {str(value)[:30]!r}"
    if not math.isfinite(x) or x < 0:
        return f"must be a number of seconds >= 0, got {str(value)[:30]!r}"
    return x


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


def _records(text: str) -> tuple[str, list[tuple[int, dict]]]:
    stripped = text.lstrip()
    if stripped.startswith("{"):
        rows = []
        for i, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as e:
                raise InputError(Issue("trace", f"line {i}: not valid JSON ({e.msg})")) from None
            if not isinstance(obj, dict):
                raise InputError(Issue("trace", f"line {i}: each line must be a JSON object"))
            rows.append((i, obj))
        return "jsonl", rows
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames:
        raise InputError(Issue("trace", "is empty: expected a CSV header (arrival_s,prompt_tokens,output_tokens) or JSON lines"))
    return "csv", [(reader.line_num, row) for row in reader]


def parse_trace(text: str) -> tuple[TraceRequest, ...]:
    """Parse CSV or JSONL text into trace rows; raise InputError naming every bad row (first ten)."""
    if not isinstance(text, str) or not text.strip():
        raise InputError(Issue("trace", "is empty: expected a CSV header (arrival_s,prompt_tokens,output_tokens) or JSON lines"))
    kind, records = _records(text)
    if not records:
        raise InputError(Issue("trace", "has a header but no rows"))
    if len(records) > MAX_ROWS:
        raise InputError(Issue("trace", f"has {len(records):,} rows; at most {MAX_ROWS:,} are accepted"))
    keys = set()
    for _, r in records[:1] if kind == "csv" else records:
        keys |= set(r)
    cols, missing = _column_map(keys)
    if missing:
        raise InputError(Issue("trace", f"is missing column(s) {', '.join(missing)}; found {', '.join(sorted(map(str, keys)))[:200]}"))
    issues: list[Issue] = []
    out = []
    previous = 0.0
    for line, raw in records:
        row = _row(raw, cols, line, previous, issues)
        if row is not None:
            out.append(row)
            previous = row.arrival_s
        if len(issues) >= MAX_LISTED:
            issues.append(Issue("trace", "further rows not checked; fix the ones above first"))
            break
    if issues:
        raise InputError(issues)
    return tuple(out)


def format_trace(rows) -> str:
    """The inverse of parse_trace for CSV, used to export a generated workload as a trace."""
    lines = ["arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens"]
    for r in rows:
        lines.append(f"{r.arrival_s:.6f},{r.prompt_tokens},{r.output_tokens},{r.prefix_id or ''},{r.prefix_tokens or ''}")
    return "\n".join(lines) + "\n"
