"""Run by `panel serve --setup` before the server starts: removes the two avoidable delays
between a slider move and the updated numbers (design.md section 4).

1. Panel debounces widget events on the server for 50 ms (`Syncable._debounce`) so that a burst
   of changes is processed once. A change here costs a few milliseconds to process, so the wait
   buys nothing. It is cut to 2 ms, not 0: at 0 the callback runs while Bokeh is still writing
   its acknowledgement of the browser's message, holding the socket's write lock, and Panel then
   postpones our reply by a fixed 10 ms retry (panel.io.document._dispatch_msgs). Measured with
   benchmarks/app_latency.py: 0 ms gave a server time of ~19 ms per change, 1-3 ms gave ~11 ms.
2. Bokeh's websocket leaves Nagle's algorithm on, so a small reply can sit in the kernel for
   ~40 ms waiting for an ACK on loopback. Disable it on every websocket as it opens.

Nothing here is imported by the pages themselves: under Pyodide there is no server to tune.
"""

from __future__ import annotations

from bokeh.server.views.ws import WSHandler
from panel.reactive import Syncable

DEBOUNCE_MS = 2
Syncable._debounce = DEBOUNCE_MS

_open = WSHandler.open


def _open_without_nagle(self, *args, **kwargs):
    self.set_nodelay(True)
    return _open(self, *args, **kwargs)


if not getattr(WSHandler.open, "_kvlab_nodelay", False):
    _open_without_nagle._kvlab_nodelay = True
    WSHandler.open = _open_without_nagle


# 3. Panel sends each model change of a callback as its own websocket message (a dozen per slider
#    move here: numbers, bar, curve marker, log, address bar...), and the browser lays the page
#    out after each. Run every widget event inside `pn.io.unlocked()`, which collects the changes
#    the callback makes and writes them as one message.
from panel.io.document import unlocked  # noqa: E402
from panel.io.state import set_curdoc  # noqa: E402

_change_event = Syncable._change_event


def _change_event_in_one_message(self, doc):
    with set_curdoc(doc), unlocked():
        _change_event(self, doc)


if not getattr(Syncable._change_event, "_kvlab_one_message", False):
    _change_event_in_one_message._kvlab_one_message = True
    Syncable._change_event = _change_event_in_one_message


# 4. Panel counts every widget event as "busy" for its loading indicator, and updating that
#    counter walks the state object's many params several times per event: about a third of
#    the server time of a slider move here. The page template has no busy indicator
#    (app/page.py passes busy_indicator=None), so nothing reads the counter: skip it.
class _EveryEvent(list):
    def __contains__(self, item) -> bool:
        return True


Syncable._busy__ignore = _EveryEvent()


# 5. Tornado refuses a request whose headers pass 64 KB by closing the connection: a link with an
#    oversize query string got an empty response. Let such a request reach the page, whose URL
#    reader (app/query_limits.py) ignores an oversize query with the documented notice. The limit
#    still bounds what one request can make the server buffer.
from tornado.httpserver import HTTPServer  # noqa: E402

MAX_HEADER_BYTES = 1 << 20
_initialize = HTTPServer.initialize


def _initialize_with_room(self, *args, max_header_size=None, **kwargs):
    return _initialize(self, *args, max_header_size=max_header_size or MAX_HEADER_BYTES, **kwargs)


if not getattr(HTTPServer.initialize, "_kvlab_room", False):
    _initialize_with_room._kvlab_room = True
    HTTPServer.initialize = _initialize_with_room


# 6. A page closed while the server was busy (a long lab run, a loaded machine): the messages its
#    browser sent before closing can be handled after Bokeh has detached the connection from its
#    session, and each one then logged an AssertionError traceback ("error handling message"), as
#    did the close itself when it came second. Nobody is left to answer: drop them quietly.
from bokeh.server.protocol_handler import ProtocolHandler  # noqa: E402
from bokeh.server.views.ws import WSHandler as _WS  # noqa: E402

_handle = ProtocolHandler.handle


async def _handle_if_attached(self, message, connection):
    if getattr(connection, "_session", None) is None:
        return None
    return await _handle(self, message, connection)


if not getattr(ProtocolHandler.handle, "_kvlab_attached", False):
    _handle_if_attached._kvlab_attached = True
    ProtocolHandler.handle = _handle_if_attached

_on_close = _WS.on_close


def _on_close_once(self):
    if self.connection is not None and getattr(self.connection, "_session", None) is None:
        return None  # already detached: nothing left to notify
    return _on_close(self)


if not getattr(_WS.on_close, "_kvlab_once", False):
    _on_close_once._kvlab_once = True
    _WS.on_close = _on_close_once


# 7. A closed page's session is discarded at the server's next check (every second), not 15-32 s
#    later: app/session_expiry.py.
from kvlab.app.session_expiry import install as _expire_closed_sessions  # noqa: E402

_expire_closed_sessions()


# 8. The serving lab's run pieces wait while another page's message is being answered
#    (app/server_activity.py): note when each message arrives.
from kvlab.app import server_activity  # noqa: E402

_on_message = _WS.on_message


async def _on_message_marked(self, fragment):
    server_activity.mark()
    return await _on_message(self, fragment)


if not getattr(_WS.on_message, "_kvlab_marked", False):
    _on_message_marked._kvlab_marked = True
    _WS.on_message = _on_message_marked


# 9. Full garbage collections at quiet moments, not in the middle of a lab run: app/server_gc.py.
import panel as pn  # noqa: E402
from kvlab.app import server_gc  # noqa: E402

server_gc.install()
pn.state.schedule_task("kvlab.server_gc", server_gc.collect_if_due, period=f"{server_gc.CHECK_S:g}s")


# 10. A page closed while a patch was being written to it: Panel's pending writes fail, and one
#     nobody awaited was logged as an error with a traceback. Drop them quietly: app/socket_writes.py.
from kvlab.app import socket_writes  # noqa: E402

socket_writes.install()
