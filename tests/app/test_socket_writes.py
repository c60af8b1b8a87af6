"""kvlab serve drops a write to a closed websocket quietly (app/server/patches.py, quiet_closed_writes): a real Tornado
websocket, a real Bokeh message written with Panel's own writer, and a browser side that goes away
while the write is under way. Each event loop runs in a thread of its own: the browser tests'
Playwright may hold a running loop in the test runner's thread."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("panel")

from bokeh.document import Document  # noqa: E402
from bokeh.models import Div  # noqa: E402
from bokeh.protocol import Protocol  # noqa: E402
from kvlab.app.server import patches  # noqa: E402
from panel.io.document import dispatch_tornado  # noqa: E402
from tornado.web import Application  # noqa: E402
from tornado.websocket import WebSocketClosedError, WebSocketHandler, websocket_connect  # noqa: E402

from devtools.server import free_port  # noqa: E402

PAYLOAD_CHARS = 16_000_000  # far more than loopback's socket buffers: the write is still pending when the peer goes


class _Connection:
    """What Panel's writer reads of Bokeh's ServerConnection: the socket."""

    def __init__(self, socket):
        self._socket = socket


def _run(scenario, installed: bool = False) -> None:
    """Run `scenario` (a coroutine function) on an event loop of its own, with the quiet_closed_writes patch
    installed or not; Tornado's own write is put back afterwards."""
    before = WebSocketHandler.write_message
    try:
        if installed:
            patches.apply("quiet_closed_writes")
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, scenario()).result(timeout=60)
    finally:
        WebSocketHandler.write_message = before


@contextlib.asynccontextmanager
async def _websocket(logged: list[dict]):
    """A Tornado websocket server on 127.0.0.1 and one client: yields (client, the server's
    handler, a future set when the handler sees the close). What the event loop's exception
    handler is given goes to `logged`."""
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: logged.append(context))
    opened, closed = loop.create_future(), loop.create_future()

    class Handler(WebSocketHandler):
        def open(self):
            opened.set_result(self)

        def on_close(self):
            closed.set_result(True)

    port = free_port()
    server = Application([(r"/ws", Handler)]).listen(port, address="127.0.0.1")
    try:
        client = await websocket_connect(f"ws://127.0.0.1:{port}/ws")
        yield client, await opened, closed
    finally:
        server.stop()


def _errors_logged(installed: bool) -> list[dict]:
    """Write a large message with Panel's writer to a websocket whose client then vanishes; drop
    the write futures unawaited (as Panel does when the session is destroyed first); return what
    the event loop's exception handler was given. `installed`: with patches.apply("quiet_closed_writes")."""
    logged: list[dict] = []

    async def scenario():
        async with _websocket(logged) as (client, handler, _closed):
            doc = Document()
            doc.add_root(Div(text="x" * PAYLOAD_CHARS))
            message = Protocol().create("PULL-DOC-REPLY", "1", doc)
            futures = dispatch_tornado(_Connection(handler), msg=message)
            assert futures, "the websocket was open, so the writer wrote"
            client.protocol.stream.close()  # the browser goes away mid-write, without a closing handshake
            await asyncio.wait(futures, timeout=30)
            failed = [f for f in futures if f.done() and not f.cancelled() and f._exception is not None]
            assert failed and all(isinstance(f._exception, WebSocketClosedError) for f in failed), \
                "the pending writes failed because the websocket closed"
            del futures, failed
            gc.collect()
            await asyncio.sleep(0)

    _run(scenario, installed)
    return logged


def test_without_it_a_write_to_a_closed_page_logs_a_traceback():
    logged = _errors_logged(installed=False)
    assert any(isinstance(c.get("exception"), WebSocketClosedError) and "never retrieved" in c["message"] for c in logged), logged


def test_with_it_the_same_write_logs_nothing():
    assert _errors_logged(installed=True) == []


def test_any_other_failed_write_is_still_reported_and_install_wraps_tornado_once():
    logged: list[dict] = []

    async def scenario():
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _loop, context: logged.append(context))
        for error in (WebSocketClosedError(), ValueError("bad frame")):
            future = loop.create_future()
            future.add_done_callback(patches.retrieve_if_closed)
            future.set_exception(error)
        cancelled = loop.create_future()
        cancelled.add_done_callback(patches.retrieve_if_closed)
        cancelled.cancel()
        await asyncio.sleep(0)

    _run(scenario)
    assert [type(c.get("exception")) for c in logged] == [ValueError]

    before = WebSocketHandler.write_message
    try:
        patches.apply("quiet_closed_writes")
        patches.apply("quiet_closed_writes")
        wrapped = WebSocketHandler.write_message
        assert wrapped._kvlab_patch == "quiet_closed_writes" and before in [c.cell_contents for c in wrapped.__closure__]
    finally:
        WebSocketHandler.write_message = before


def _late_write(installed: bool) -> tuple[str, list[dict]]:
    """Write to a websocket whose client is gone and which Tornado already knows is closed (there
    Tornado raises at once instead of returning a future). Returns what the write did and what the
    event loop's exception handler was given."""
    logged: list[dict] = []
    outcome: list[str] = []

    async def scenario():
        async with _websocket(logged) as (client, handler, closed):
            client.close()
            await asyncio.wait_for(closed, timeout=30)
            try:
                future = WebSocketHandler.write_message(handler, "late")
            except WebSocketClosedError:
                outcome.append("raised")
                return
            await asyncio.sleep(0)
            outcome.append(f"failed future: {type(future._exception).__name__}")  # read without marking it seen
            del future
            gc.collect()
            await asyncio.sleep(0)

    _run(scenario, installed)
    return outcome[0], logged


def test_a_write_to_a_socket_known_closed_fails_its_future_instead_of_raising():
    assert _late_write(installed=False)[0] == "raised"
    assert _late_write(installed=True) == ("failed future: WebSocketClosedError", [])
