"""When the server last took a message from any browser (kvlab serve only).

The serving lab's long runs go in pieces on the server's one event loop (engine_views/store.py).
A message from another page (a slider move) is handled in several turns of that loop (read,
Panel's 2 ms debounce, the callback, the write), and a piece that starts in one of the gaps
delays the reply by a whole piece: measured with benchmarks/upload_latency.py, another session's
reply took 54 ms (p50) while a trace loaded against 17 ms with the lab idle. So the pieces wait
until QUIET_S has passed since the last message. app/server/patches.py marks each message as it
arrives; in a notebook, a test or Pyodide nothing marks, and the pieces never wait.
"""

from __future__ import annotations

import time

# Longer than the server takes to answer a slider move (about 10 ms here), shorter than the gap
# between two moves of a dragged slider, so a drag still leaves the lab room to advance.
QUIET_S = 0.025

_last_message_s = float("-inf")


def mark() -> None:
    global _last_message_s
    _last_message_s = time.perf_counter()


def quiet_s() -> float:
    """Seconds since the last message (infinite before the first)."""
    return time.perf_counter() - _last_message_s


def busy() -> bool:
    """True within QUIET_S of the last message."""
    return quiet_s() < QUIET_S
