"""The one reader of every file a user hands kvlab, and of the text a page is given in place of one.

A user's file may be missing, a directory, endless (/dev/zero, a pipe), far too big, in another
encoding, saved by a spreadsheet with a byte-order mark or old Mac line endings, or valid JSON of
the wrong shape. Every such file goes through here:

- `read_bytes(path, limit_bytes)` reads at most limit + 1 bytes, in chunks, and refuses a file as
  soon as it passes the limit: nothing is read whole first, special files and pipes included.
- `decode(data)` turns bytes (or pasted text) into text: UTF-8 with or without its byte-order
  mark, UTF-16 and UTF-32 with theirs; \\r\\n and \\r-only line endings become \\n.
- `JsonFormat` is one JSON file format: its size limit and a shape (`Obj`, `ListOf`, `Num`, `Str`,
  ...) checked after parsing, every problem naming its field (`measurements.hbm.read[3].time_s`).
  A new format (a `vllm bench serve` result file, say) is one more `JsonFormat` with its shape.
  Line formats (traces: sim/engine/trace.py) read their rows themselves after `read_text`.

Every problem is a `FileProblem`: one line per problem, naming the file (its path shortened to the
last SHOWN_PATH_CHARS characters) and the field, which the command lines print with exit status 2
and the pages show as a message. Standard library only: sim runs in Pyodide.
"""

from __future__ import annotations

import codecs
import json
import os
import stat
import sys
from dataclasses import dataclass

from .fields import shown

CHUNK_BYTES = 1 << 20
SHOWN_PATH_CHARS = 60
MAX_LISTED = 10  # problems listed per file; the rest are counted
MAX_NESTING = 20  # JSON a user hands kvlab nests a few levels; deeper is not one of its files
# Python's json nests through the C stack: brackets are counted first so '[[[[...' cannot reach its
# limit (Pyodide's stack is smaller than CPython's). A format may set its own count.
MAX_BRACKETS = 200_000
BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))  # UTF-32 LE starts like UTF-16 LE


def shown_path(path) -> str:
    """A path as a message echoes it: its last SHOWN_PATH_CHARS characters, unprintable ones escaped."""
    text = os.fsdecode(path) if isinstance(path, bytes | os.PathLike) else str(path)
    tail = ("\u2026" + text[-SHOWN_PATH_CHARS:]) if len(text) > SHOWN_PATH_CHARS else text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in tail)


class FileProblem(ValueError):
    """What is wrong with one file: `problems` are (field, message) pairs, field "" for the file as
    a whole; `lines()` are what a command line prints, one per problem, each naming the file."""

    def __init__(self, source: str, problems: list[tuple[str, str]] | str, named: bool = False):
        self.source = source
        self.problems = [("", problems)] if isinstance(problems, str) else list(problems)
        self._named = named  # the messages already name the file ("cannot read 'x.json' (...)")
        super().__init__("; ".join(self.lines()))

    def messages(self) -> list[str]:
        """The problems without the file's name (a page shows them beside its own file box)."""
        return [f"{field}: {message}" if field else message for field, message in self.problems]

    def lines(self) -> list[str]:
        return [f"{self.source}: {m}" if self.source and not self._named else m for m in self.messages()]


def _size(n: int) -> str:
    return f"{n / 1e6:g} MB ({n:,} bytes)" if n >= 1_000_000 else f"{n:,} bytes"


def _unreadable(source: str, reason: str) -> FileProblem:
    return FileProblem(source, [("", f"cannot read '{source}' ({reason})")], named=True)


def read_bytes(path, limit_bytes: int) -> bytes:
    """The file's bytes, or FileProblem: missing, a directory, unreadable, or over `limit_bytes`
    (found while reading: at most limit + 1 bytes are ever read)."""
    source = shown_path(path)
    try:
        with open(path, "rb") as f:
            info = os.fstat(f.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise _unreadable(source, "a directory, not a file")
            if stat.S_ISREG(info.st_mode) and info.st_size > limit_bytes:  # refused before reading anything
                raise FileProblem(source, f"is {info.st_size:,} bytes; files up to {_size(limit_bytes)} are accepted")
            data = bytearray()
            while len(data) <= limit_bytes:
                chunk = f.read(min(CHUNK_BYTES, limit_bytes + 1 - len(data)))
                if not chunk:
                    return bytes(data)
                data += chunk
    except FileProblem:
        raise
    except IsADirectoryError:
        raise _unreadable(source, "a directory, not a file") from None
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path
        # strerror, never str(e): that repeats the whole path
        raise _unreadable(source, getattr(e, "strerror", None) or type(e).__name__) from None
    raise FileProblem(source, f"is more than {_size(limit_bytes)}; files up to that size are accepted")


def decode(data, source: str = "") -> str:
    """Text of `data` (bytes, or text already): the byte-order mark decides UTF-8, UTF-16 or
    UTF-32 (UTF-8 without one); line endings become \\n. FileProblem when it is not text."""
    if isinstance(data, bytes | bytearray):
        encoding = next((enc for bom, enc in BOMS if data.startswith(bom)), "utf-8")
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError as e:
            # "not UTF-8" either way: a file of binary junk may start with a UTF-16 mark by chance
            also = "" if encoding.startswith("utf-8") else f", nor {encoding.upper()} as its byte-order mark says"
            raise FileProblem(source, f"is not UTF-8 text{also} (byte {e.start:,} cannot be read)") from None
        text = text.removeprefix("\ufeff")  # utf-16 and utf-32 keep no mark; utf-8-sig none either
    else:
        text = str(data).removeprefix("\ufeff")  # pasted text that kept a file's mark
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def read_text(path, limit_bytes: int) -> str:
    return decode(read_bytes(path, limit_bytes), shown_path(path))


# ---- shapes: what a JSON file must hold --------------------------------------------------------
def _kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number"}.get(type(value), "a value")


def _join(where: str, key) -> str:
    return f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}" if where else str(key)


class Shape:
    """One check of a parsed JSON value; `problems(value, where)` lists (field, message) pairs."""

    def problems(self, value, where: str) -> list[tuple[str, str]]:
        raise NotImplementedError


@dataclass(frozen=True)
class Anything(Shape):
    def problems(self, value, where):
        return []


@dataclass(frozen=True)
class Num(Shape):
    """A finite number (not a boolean) between low and high; an integer when `integer`; above, not
    at, `low` when `above` (a time or a rate a fit divides by)."""
    low: float = float("-inf")
    high: float = float("inf")
    integer: bool = False
    above: bool = False

    def problems(self, value, where):
        number = isinstance(value, int | float) and not isinstance(value, bool)
        ok = number and not (self.integer and isinstance(value, float) and not value.is_integer())
        # JSON integers are unbounded: one past float's range passes `<= inf` here, then raises
        # OverflowError wherever the fit divides by it.
        ok = ok and (isinstance(value, float) or abs(value) <= sys.float_info.max)
        if not ok or not self.low <= value <= self.high or (self.above and value == self.low):  # nan fails
            kind = "an integer" if self.integer else "a number"
            low = f" {'>' if self.above else '>='} {self.low:g}"
            span = "" if self.low == float("-inf") and self.high == float("inf") else \
                low if self.high == float("inf") else f" between {self.low:g} and {self.high:g}"
            return [(where, f"must be {kind}{span}, got {shown(value) if number or isinstance(value, str) else _kind(value)}")]
        return []


@dataclass(frozen=True)
class Str(Shape):
    def problems(self, value, where):
        return [] if isinstance(value, str) else [(where, f"must be a string, got {_kind(value)}")]


@dataclass(frozen=True)
class Bool(Shape):
    def problems(self, value, where):
        return [] if isinstance(value, bool) else [(where, f"must be true or false, got {_kind(value)}")]


@dataclass(frozen=True)
class Nullable(Shape):
    """`shape`, or null."""
    shape: Shape

    def problems(self, value, where):
        return [] if value is None else self.shape.problems(value, where)


@dataclass(frozen=True)
class ListOf(Shape):
    item: Shape

    def problems(self, value, where):
        if not isinstance(value, list):
            return [(where, f"must be an array, got {_kind(value)}")]
        out = []
        for i, x in enumerate(value):
            out += self.item.problems(x, _join(where, i))
            if len(out) > MAX_LISTED:
                break
        return out


@dataclass(frozen=True)
class MapOf(Shape):
    """An object whose every value has one shape (keys are names: models, GPUs)."""
    value: Shape

    def problems(self, value, where):
        if not isinstance(value, dict):
            return [(where, f"must be a JSON object ({{...}}), got {_kind(value)}")]
        out = []
        for k, v in value.items():
            out += self.value.problems(v, _join(where, k))
            if len(out) > MAX_LISTED:
                break
        return out


@dataclass(frozen=True)
class Obj(Shape):
    """An object with `required` and `optional` fields (name -> Shape); other fields are allowed
    (files gain fields over releases) and not checked."""
    required: dict
    optional: dict = None

    def problems(self, value, where):
        if not isinstance(value, dict):
            return [(where, f"must be a JSON object ({{...}}), got {_kind(value)}")]
        out = [(_join(where, k), "is missing") for k in self.required if k not in value]
        for k, shape in (*self.required.items(), *(self.optional or {}).items()):
            if k in value:
                out += shape.problems(value[k], _join(where, k))
        return out


@dataclass(frozen=True)
class When(Shape):
    """`shape` applies only to values `condition` holds for (a layout whose check passed carries
    its dimensions; one that failed carries only its error)."""
    condition: object  # value -> bool; called only on values `shape`'s caller already checked
    shape: Shape

    def problems(self, value, where):
        return self.shape.problems(value, where) if self.condition(value) else []


@dataclass(frozen=True)
class AllOf(Shape):
    """Each shape in turn, stopping at the first that finds problems."""
    shapes: tuple

    def problems(self, value, where):
        for shape in self.shapes:
            found = shape.problems(value, where)
            if found:
                return found
        return []


# ---- JSON formats --------------------------------------------------------------------------------
def _depth_over(value, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, d = stack.pop()
        if d > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, d + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, d + 1) for v in item)
    return False


@dataclass(frozen=True)
class JsonFormat:
    """One JSON file format: what it is (for messages), its size limit and its shape."""
    expected: str  # "a Hugging Face config.json"
    limit_bytes: int
    shape: Shape
    max_brackets: int = MAX_BRACKETS

    def read(self, path):
        """The parsed, shape-checked value of the file at `path`, or FileProblem."""
        return self.parse(read_text(path, self.limit_bytes), shown_path(path))

    def parse(self, data, source: str = ""):
        """The same for text or bytes given in place of a file (a paste, an upload). Text is limited
        in characters, bytes in bytes, both by `limit_bytes`."""
        if len(data) > self.limit_bytes:
            unit = "characters" if isinstance(data, str) else "bytes"
            raise FileProblem(source, f"is {len(data):,} {unit}; at most {self.limit_bytes:,} are accepted "
                                      f"({self.expected} is far smaller)")
        text = decode(data, source)
        if not text.strip():
            raise FileProblem(source, f"is empty: expected {self.expected}")
        if text.count("[") + text.count("{") > self.max_brackets:
            raise FileProblem(source, f"has too many brackets to be {self.expected}")
        try:
            value = json.loads(text)
        except json.JSONDecodeError as e:
            raise FileProblem(source, f"is not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
        except (RecursionError, ValueError):  # ValueError: an integer of more than 4,300 digits
            raise FileProblem(source, "is not valid JSON (nested too deeply, or a number too long)") from None
        if _depth_over(value, MAX_NESTING):
            raise FileProblem(source, f"nests deeper than {MAX_NESTING} levels; {self.expected} is a few levels deep")
        problems = self.shape.problems(value, "")
        if problems:
            listed = problems[:MAX_LISTED]
            if len(problems) > MAX_LISTED:
                listed.append(("", f"and {len(problems) - MAX_LISTED:,} more problems"))
            raise FileProblem(source, listed)
        return value


# ---- the formats sim reads (calibration declares its own: calibration/checkpoint.py) -----------------
# A config.json is 1-5 KB; 200 KB leaves room for long layer_types lists. Which fields make a model
# is sim's decision (Scenario(config=...)), so the shape asks only for an object.
MAX_CONFIG_BYTES = 200_000
CONFIG_JSON = JsonFormat("a Hugging Face config.json", MAX_CONFIG_BYTES, Obj({}), max_brackets=50_000)
