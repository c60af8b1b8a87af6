"""`panel serve --setup` script for benchmarks/lab_sessions.py: kvlab serve's own setup
(app/server/setup.py), plus a probe. On SIGUSR1 the server process appends one JSON line to the
file named by KVLAB_PROBE_OUT with its memory as the kernel, glibc's malloc and Python see it:
resident memory, resident memory after malloc_trim(0) (which hands glibc's free pages back: what
stays is in use or fragmented), Python's allocated blocks and the bytes in them, pymalloc arenas,
gc-tracked objects, and the lab's live LabStores, Documents and Bokeh sessions.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import re
import runpy
import signal
import sys
from pathlib import Path

runpy.run_path(str(Path(__file__).resolve().parents[1] / "app" / "server" / "setup.py"))

_libc = ctypes.CDLL("libc.so.6")


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


def _pymalloc() -> tuple[int, int]:
    """(arenas allocated now, bytes in allocated blocks) from sys._debugmallocstats, which writes
    to the C stderr: read through a pipe."""
    r, w = os.pipe()
    saved = os.dup(2)
    try:
        os.dup2(w, 2)
        sys._debugmallocstats()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(w)
    chunks = []
    while chunk := os.read(r, 1 << 16):
        chunks.append(chunk)
    os.close(r)
    text = b"".join(chunks).decode(errors="replace")

    def field(name: str) -> int:
        return int(re.search(rf"# {name}\s*=\s*([\d,]+)", text).group(1).replace(",", ""))

    return field("arenas allocated current"), field("bytes in allocated blocks")


def _probe(*_) -> None:
    from bokeh.document import Document
    from kvlab.app.engine_views.store import LabStore

    gc.collect()
    objects = gc.get_objects()
    arenas, block_bytes = _pymalloc()
    rss = _rss_mb()
    _libc.malloc_trim(0)
    line = {"rss_mb": round(rss, 1), "rss_trimmed_mb": round(_rss_mb(), 1), "blocks": sys.getallocatedblocks(),
            "block_mb": round(block_bytes / 2**20, 2), "arenas": arenas, "gc_objects": len(objects),
            "lab_stores": sum(1 for o in objects if isinstance(o, LabStore)),
            "documents": sum(1 for o in objects if isinstance(o, Document))}
    del objects
    with open(os.environ["KVLAB_PROBE_OUT"], "a") as f:
        f.write(json.dumps(line) + "\n")


if os.environ.get("KVLAB_PROBE_OUT"):
    signal.signal(signal.SIGUSR1, _probe)
