"""No per-session leak in the serving lab: real Bokeh server sessions of the lab page are opened
(the page fetched over HTTP, its websocket connected as a browser's is) and closed, the server
destroys them, and nothing of any session survives: no LabStore, no Document, no widget.
benchmarks/lab_sessions.py runs the same loop for 100 sessions against `kvlab serve`'s own process and
prints the memory figures.
"""

from __future__ import annotations

import gc
import re
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

pn = pytest.importorskip("panel")

from bokeh.client import ClientSession  # noqa: E402
from bokeh.document import Document  # noqa: E402
from bokeh.util.token import get_session_id  # noqa: E402
from kvlab.app.engine_views.lab import build_lab_page  # noqa: E402
from kvlab.app.engine_views.store import LabStore  # noqa: E402

from tests.browser.support import free_port  # noqa: E402

SESSIONS = 4  # each costs 1-4 s of server time on the 2-core machine; a leak shows in the first


def open_and_close(base: str) -> None:
    """One lab session as a browser makes it: GET the page (the server builds the session's
    document), connect its websocket with the page's token, then close the connection."""
    with urllib.request.urlopen(f"{base}/serving_lab", timeout=60) as r:
        html = r.read().decode()
    token = re.search(r'"token":\s*"([^"]+)"', html).group(1)
    ws = base.replace("http://", "ws://") + "/serving_lab/ws"

    def connect_and_close() -> bool:
        session = ClientSession(session_id=get_session_id(token), websocket_url=ws)
        session.connect()
        connected = session.connected
        session.close()
        return connected

    # In a thread of its own: the client runs its own event loop, which cannot start in a thread
    # where one runs already (Playwright's, when the browser tests ran first in this process).
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(connect_and_close).result(timeout=120), "the lab page's websocket did not open"


def live(cls) -> int:
    return sum(1 for o in gc.get_objects() if type(o) is cls)


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


def test_closed_lab_sessions_leave_nothing_behind():
    port = free_port()
    # Sessions without a connection are destroyed 0.1 s after their last one closes (kvlab serve
    # keeps Bokeh's 15 s; the lifetime changes when, not whether, a session is destroyed).
    thread = pn.serve({"serving_lab": build_lab_page}, port=port, address="127.0.0.1", threaded=True, show=False,
                      check_unused_sessions=100, unused_session_lifetime=100,
                      websocket_origin=[f"127.0.0.1:{port}"])
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while pn.state._servers.get(thread.server_id) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        server = pn.state._servers[thread.server_id][0]

        def settle() -> None:
            end = time.monotonic() + 30
            while server.get_sessions("/serving_lab") and time.monotonic() < end:
                time.sleep(0.05)
            kept = server.get_sessions("/serving_lab")
            state = [(k.connection_count, k.milliseconds_since_last_unsubscribe) for k in kept]
            assert not kept, f"the server kept closed sessions (connections, ms idle): {state}"
            gc.collect()

        kinds = (LabStore, Document, pn.widgets.Button)  # the copy buttons were the leak (app/share.py)
        open_and_close(base)  # warm-up: imports, caches, first-use allocations
        settle()
        counts0 = [live(k) for k in kinds]
        before_mb = rss_mb()
        for _ in range(SESSIONS):
            open_and_close(base)
        settle()
        end = time.monotonic() + 10  # the server thread may still hold the last reply a moment
        while [live(k) for k in kinds] != counts0 and time.monotonic() < end:
            time.sleep(0.2)
            gc.collect()
        print(f"{SESSIONS} lab sessions opened and closed: RSS {before_mb:.1f} -> {rss_mb():.1f} MB "
              "(the allocator's high-water mark; benchmarks/lab_sessions.py measures 100 against kvlab serve)")
        survivors = {k.__name__: live(k) - n for k, n in zip(kinds, counts0, strict=True) if live(k) != n}
        assert not survivors, f"closed sessions' objects are still referenced: {survivors}"
    finally:
        thread.stop()
