"""No per-session leak in the serving lab: real Bokeh server sessions of the lab page are opened
(the page fetched over HTTP, its websocket connected as a browser's is) and closed, the server
destroys them, and nothing of any session survives: no LabStore, no Document, no widget, and the
process's Python objects (every block Python's allocator hands out, strings included) stay flat.
It opens 8 sessions after the warm-up. benchmarks/lab_sessions.py runs the same
loop (100 sessions) against `kvlab serve`'s own process and prints its resident memory beside
Python's figures.
"""

from __future__ import annotations

import gc
import sys
import time

import pytest

pn = pytest.importorskip("panel")

from bokeh.document import Document  # noqa: E402
from kvlab.app.engine_views.lab import ServingLab, build_lab_page  # noqa: E402
from kvlab.app.engine_views.store import LabStore  # noqa: E402
from kvlab.app.server.patches import apply as apply_patch  # noqa: E402

from devtools.lab_client import LabClient  # noqa: E402
from devtools.server import free_port  # noqa: E402

WARM_UP = 2  # imports, caches and first-use allocations happen in the first sessions
# Measured after the warm-up. A session costs about 1.0-1.4 s of server time on the 2-core machine,
# nearly all of it Panel building the page's Bokeh models: 100 sessions took 122 s of the suite's 15
# minutes, 50 took 52-56 s, 25 took 37-51 s, 12 about 17 s. 8 still bound a leak well below 1% of a
# session (about 900 blocks): the test fails above 250 + BLOCKS_NOISE / 8 = 437 blocks a session
# (375 with 12, 310 with 25).
SESSIONS = 8
# A lab session allocates about 92,000 blocks (8 MB) that its close must free (measured: one
# session alive against none). Between checkpoints the count moves by up to about 1,000 blocks with
# no session alive (asyncio's cancelled timers, Tornado's buffers), whatever the number of sessions
# between them. A leak of 1% of a session would add about 900 blocks per session.
BLOCKS_PER_SESSION_LIMIT = 250  # about 22 KB (88 bytes a block): 0.26 MB over 12 sessions
BLOCKS_NOISE = 1_500
CHECK_MS = 100
SETTLE_S = 5  # a closed session goes within a check of its close (plus its destroy); Bokeh alone takes 15 s


def live(cls) -> int:
    return sum(1 for o in gc.get_objects() if isinstance(o, cls))


# Every session makes one LabStore and one ServingLab, none of which outlives it; the process holds
# a Document or two of its own (Panel's), so those and the widgets are compared with the warm-up's.
KINDS = (LabStore, ServingLab, Document, pn.widgets.Button, pn.template.base.BaseTemplate)
PER_SESSION = 2


def test_closed_lab_sessions_leave_nothing_behind():
    port = free_port()
    # kvlab serve's session expiry (app/server/patches.py): a session whose websocket closed is
    # discarded at the next check, here every 0.1 s, although unused sessions keep Bokeh's 15 s
    # lifetime; so settle() gives the server SETTLE_S, well under that lifetime, to let go.
    # (Bokeh ignores these options under any other name: `check_unused_sessions=100` left 17 s.)
    apply_patch("expire_closed_sessions")
    thread = pn.serve({"serving_lab": build_lab_page}, port=port, address="127.0.0.1", threaded=True, show=False,
                      check_unused_sessions_milliseconds=CHECK_MS, websocket_origin=[f"127.0.0.1:{port}"])
    base = f"http://127.0.0.1:{port}"
    client = LabClient()
    try:
        deadline = time.monotonic() + 60
        while pn.state._servers.get(thread.server_id) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        server = pn.state._servers[thread.server_id][0]
        assert server._tornado._check_unused_sessions_milliseconds == CHECK_MS  # the option took
        assert server._tornado._unused_session_lifetime_milliseconds > 2 * SETTLE_S * 1000

        def settle() -> tuple[list[int], int]:
            """Wait for the server to destroy every closed session; (live objects per KINDS, blocks)."""
            end = time.monotonic() + SETTLE_S
            while server.get_sessions("/serving_lab") and time.monotonic() < end:
                time.sleep(0.02)
            kept = server.get_sessions("/serving_lab")
            state = [(k.connection_count, k.milliseconds_since_last_unsubscribe) for k in kept]
            assert not kept, f"the server kept closed sessions (connections, ms idle): {state}"
            # The server thread may still be finishing the last session's destroy callbacks.
            end = time.monotonic() + 10
            while True:
                gc.collect()
                counts = [live(k) for k in KINDS]
                if counts[:PER_SESSION] == outside or time.monotonic() > end:
                    return counts, sys.getallocatedblocks()
                time.sleep(0.05)

        gc.collect()
        outside = [live(k) for k in KINDS[:PER_SESSION]]  # what other tests in this process left alive
        for _ in range(WARM_UP):
            client.open_and_close(base)
        counts0, blocks0 = settle()
        t0 = time.perf_counter()
        for _ in range(SESSIONS):
            client.open_and_close(base)
        spent = time.perf_counter() - t0
        counts1, blocks1 = settle()
        grew = blocks1 - blocks0
        print(f"{SESSIONS} lab sessions opened and closed in {spent:.1f} s: Python's allocated blocks "
              f"{blocks0:,} -> {blocks1:,} ({grew:+,}, {grew / SESSIONS:+.0f} per session); "
              f"live {dict(zip([k.__name__ for k in KINDS], counts1, strict=True))}")
        survivors = {k.__name__: b - a for k, a, b in zip(KINDS, counts0, counts1, strict=True) if b != a}
        assert not survivors, f"closed sessions' objects are still referenced: {survivors}"
        assert counts1[:PER_SESSION] == outside, f"a closed session's lab survives: {counts1[:PER_SESSION]}, not {outside}"
        assert grew <= BLOCKS_NOISE + BLOCKS_PER_SESSION_LIMIT * SESSIONS, (
            f"Python's allocated blocks grew by {grew:,} over {SESSIONS} closed sessions ({grew / SESSIONS:,.0f} per session)")
    finally:
        client.close()
        thread.stop()
