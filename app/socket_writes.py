"""A write to a websocket the browser has closed is dropped quietly, not logged as an error.

Panel writes each part of a patch to a page's websocket as its own Tornado future and awaits them
later (`panel.io.document.dispatch_tornado`, `_run_write_futures`). When the page closes while
those writes are pending, they fail with WebSocketClosedError. If the session is destroyed before
Panel awaits them, Panel cancels the list, which does nothing to a future that has already failed,
so nobody retrieves its exception and asyncio logs "Task exception was never retrieved" with a
traceback at ERROR level when the future is collected (seen in a browser test that closed a lab page
during a run). Nobody is left to read the patch, so `install()` marks that one exception seen as each write
finishes; any other failure of a write is still reported as an error.
"""

from __future__ import annotations

from panel.io import document as _document
from tornado.websocket import WebSocketClosedError

_dispatch_tornado = _document.dispatch_tornado


def retrieve_if_closed(future) -> None:
    """Done callback of each write: a write that failed because the websocket closed is marked
    seen. Any other failure is reported at once, as asyncio would have reported it had nobody
    awaited it (asking for the exception marks it seen, so it cannot be left for asyncio)."""
    if future.cancelled():
        return
    error = future.exception()
    if error is not None and not isinstance(error, WebSocketClosedError):
        future.get_loop().call_exception_handler({"message": "A websocket write failed", "exception": error, "future": future})


def _dispatch_tornado_quiet_when_closed(*args, **kwargs):
    futures = _dispatch_tornado(*args, **kwargs)
    for future in futures:
        future.add_done_callback(retrieve_if_closed)
    return futures


def install() -> None:
    """Wrap Panel's websocket writer once per process (kvlab serve's setup script calls it)."""
    if not getattr(_document.dispatch_tornado, "_kvlab_closed_quiet", False):
        _dispatch_tornado_quiet_when_closed._kvlab_closed_quiet = True
        _document.dispatch_tornado = _dispatch_tornado_quiet_when_closed
