"""kvlab serve's garbage collection (app/server/quiet_gc.py): no automatic full collection once
installed, a full one when due. install() changes the process's collector, so it runs in a
child process, not in the test runner."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from kvlab.app.server import quiet_gc as server_gc
from kvlab.app.server.serve import IMPORT_ROOT


def test_a_full_collection_is_due_when_quiet_when_the_heap_doubled_or_after_the_longest_gap():
    due = server_gc.due
    assert not due(since_full_s=server_gc.FULL_QUIET_S - 0.1, quiet_s=1e9, growth=1.0)
    assert not due(since_full_s=server_gc.FULL_QUIET_S + 1, quiet_s=server_gc.QUIET_FOR_S / 2, growth=1.9)
    assert due(since_full_s=server_gc.FULL_QUIET_S + 1, quiet_s=server_gc.QUIET_FOR_S, growth=1.0)
    assert due(since_full_s=1.0, quiet_s=0.0, growth=server_gc.GROWTH)  # garbage piles up on a busy server
    assert due(since_full_s=server_gc.FULL_MAX_S, quiet_s=0.0, growth=1.0)  # a busy server still collects


CHILD = textwrap.dedent("""
    import gc, json
    from kvlab.app.server import quiet_gc as server_gc
    full = []
    gc.callbacks.append(lambda phase, info: full.append(1) if phase == "stop" and info["generation"] == 2 else None)
    baseline = len(full)
    server_gc.install()
    installed = len(full)  # install() makes one full collection before freezing
    kept = []
    for i in range(400_000):  # long-lived objects: CPython alone starts several full collections here
        kept.append([i])
    automatic = len(full) - installed
    server_gc.collect_if_due()  # the heap grew GROWTH-fold since install()'s collection
    grown = len(full) - installed - automatic
    server_gc.collect_if_due()  # nothing due: collected a moment ago, no growth since, not FULL_MAX_S old
    print(json.dumps({"automatic": automatic, "grown": grown, "again": len(full) - installed - automatic - grown,
                      "install": installed - baseline, "threshold2": gc.get_threshold()[2], "frozen": gc.get_freeze_count()}))
""")


def test_installed_the_process_makes_no_automatic_full_collection_and_collects_when_due():
    out = subprocess.run([sys.executable, "-c", CHILD], cwd=IMPORT_ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["threshold2"] == server_gc.NEVER and r["frozen"] > 0
    assert r["automatic"] == 0, r
    assert r["grown"] == 1 and r["again"] == 0, r
