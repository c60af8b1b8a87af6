"""A client that opens and closes serving-lab sessions as a browser does, without a browser: the lab
session leak test (tests/app/test_lab_sessions.py) and benchmarks/lab_sessions.py share it."""

from __future__ import annotations

import asyncio
import re
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from bokeh.client import ClientSession
from bokeh.util.token import get_session_id
from tornado.ioloop import IOLoop


class LabClient:
    """Opens and closes lab sessions as a browser does: GET the page (the server builds the
    session's document), connect its websocket with the page's token, close it. Every websocket
    runs on one event loop in one thread of this client's own (a ClientSession left to make its
    own loop leaves that loop, its thread and its socket behind, in this process, each session),
    which can start even where another loop runs already (Playwright's, when the browser tests ran
    first in this process)."""

    def __init__(self):
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="lab-client")
        self._loop = self._pool.submit(self._new_loop).result()

    @staticmethod
    def _new_loop() -> IOLoop:
        asyncio.set_event_loop(asyncio.new_event_loop())
        return IOLoop.current()

    def open_and_close(self, base: str) -> None:
        with urllib.request.urlopen(f"{base}/serving_lab", timeout=120) as r:
            html = r.read().decode()
        token = re.search(r'"token":\s*"([^"]+)"', html).group(1)
        ws = base.replace("http://", "ws://") + "/serving_lab/ws"

        def connect_and_close() -> bool:
            session = ClientSession(session_id=get_session_id(token), websocket_url=ws, io_loop=self._loop)
            session.connect()
            connected = session.connected
            session.close()
            return connected

        assert self._pool.submit(connect_and_close).result(timeout=120), "the lab page's websocket did not open"

    def close(self) -> None:
        self._pool.submit(lambda: self._loop.close(all_fds=True)).result(timeout=30)
        self._pool.shutdown()
