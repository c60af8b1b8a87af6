"""A progress bar on stderr (standard library only), and the run log.

On a terminal the bar redraws in place; elsewhere (CI, a pipe) it prints a line at every tenth of
the work so a log stays readable.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60}m{seconds % 60:02d}s"


class Progress:
    def __init__(self, total_units: int, stream: TextIO | None = None, width: int = 30) -> None:
        self.total = max(total_units, 1)
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.start = time.monotonic()
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last_tenth = -1

    def render(self, label: str) -> str:
        frac = min(self.done / self.total, 1.0)
        filled = int(round(frac * self.width))
        elapsed = time.monotonic() - self.start
        eta = elapsed / frac - elapsed if frac > 0 else 0.0
        bar = "#" * filled + "." * (self.width - filled)
        return f"[{bar}] {frac:4.0%} {_clock(elapsed)} elapsed, ~{_clock(eta)} left  {label[:60]}"

    def advance(self, label: str, units: int = 1) -> None:
        self.done = min(self.done + units, self.total)
        line = self.render(label)
        if self._tty:
            self.stream.write("\r" + line.ljust(120))
            self.stream.flush()
            return
        tenth = int(10 * self.done / self.total)
        if tenth != self._last_tenth:
            self._last_tenth = tenth
            self.stream.write(line + "\n")
            self.stream.flush()

    def clear(self) -> None:
        """Blank the bar's line so a log line printed next does not land inside it."""
        if self._tty:
            self.stream.write("\r" + " " * 120 + "\r")
            self.stream.flush()

    def close(self) -> None:
        if self._tty:
            self.stream.write("\n")
            self.stream.flush()


class RunLog:
    """Lines shown on stdout as the run goes and kept for the raw log file."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.lines: list[str] = []
        self.stream = stream if stream is not None else sys.stdout
        self.before_write = None  # e.g. Progress.clear

    def __call__(self, line: str = "") -> None:
        self.lines.append(line)
        if self.before_write is not None:
            self.before_write()
        self.stream.write(line + "\n")
        self.stream.flush()

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"
