"""A write to a websocket the browser has closed is dropped quietly, not logged as an error.

Tornado's `WebSocketHandler.write_message` returns a future for each message; Panel writes each
part of a patch that way and awaits the futures later (`panel.io.document.dispatch_tornado`,
`_run_write_futures`). When the page closes meanwhile, the writes fail with WebSocketClosedError,
and some are never awaited: Panel builds the list of a patch's writes in one expression, so when
the socket closes between two of them the list is lost with the futures already made, and when
the session is destroyed first Panel cancels the list, which does nothing to a future that has
already failed. Nobody retrieves such a future's exception, and asyncio logs "Task exception was
never retrieved" with a traceback at ERROR level when it is collected (seen in the lab's browser
tests when a page closed during a run). Nobody is left to read the patch, so `install()` marks that
one exception seen as each write finishes; any other failure of a write is still reported as an
error. A write made once Tornado knows the socket is closed raises instead of returning a future
(a patch's later parts, when the socket closed while its first part was written): the raise ended
Panel's write task, whose exception nobody retrieved either (seen once in CI, in a browser test that
closed its page right after a keyboard move). Such a write returns a future that has already failed
the same way, which Panel awaits and reports as a warning, as it does for the others.
"""

from __future__ import annotations

import asyncio

from tornado.websocket import WebSocketClosedError, WebSocketHandler

_write_message = WebSocketHandler.write_message


def retrieve_if_closed(future) -> None:
    """Done callback of each write: a write that failed because the websocket closed is marked
    seen. Any other failure is reported at once, as asyncio would have reported it had nobody
    awaited it (asking for the exception marks it seen, so it cannot be left for asyncio)."""
    if future.cancelled():
        return
    error = future.exception()
    if error is not None and not isinstance(error, WebSocketClosedError):
        future.get_loop().call_exception_handler({"message": "A websocket write failed", "exception": error, "future": future})


def _write_message_quiet_when_closed(self, message, binary: bool = False):
    try:
        future = _write_message(self, message, binary=binary)
    except WebSocketClosedError as closed:
        future = asyncio.get_running_loop().create_future()
        future.set_exception(closed)
    future.add_done_callback(retrieve_if_closed)
    return future


def install() -> None:
    """Wrap Tornado's websocket write once per process (kvlab serve's setup script calls it): Bokeh's
    handler and Panel's writer both go through it."""
    if not getattr(WebSocketHandler.write_message, "_kvlab_closed_quiet", False):
        _write_message_quiet_when_closed._kvlab_closed_quiet = True
        WebSocketHandler.write_message = _write_message_quiet_when_closed
