"""Every change kvlab makes to Panel, Bokeh and Tornado, in one place, each checked against the
versions it was written for.

Each patch replaces one attribute of a library class or module (named in `Patch.target`), and it
reads that library's private code as it is in the releases of `WRITTEN_FOR`. A patch is applied only
when the installed release is in that range and the attribute it replaces exists; otherwise it is
skipped with a warning that names the patch, the package, the installed version and the range
(`kvlab serve` prints the same lines before it starts the server), so a Panel or Bokeh upgrade past
the pins in pyproject.toml shows at once which fix it undid. Applying a patch twice is a no-op (each
replacement carries `_kvlab_patch`, the patch's name).

Server only (app/server/setup.py applies them): 1-9. Everywhere Panel runs (a notebook too):
`guard_panel_location`, which app/shell/share.py applies when a page is built.
"""

from __future__ import annotations

import asyncio
import importlib
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

# package -> (lowest release, first release not covered): the releases whose private code the patches
# below were read against. Bokeh's upper bound is the one Panel 1.9-1.10 requires (bokeh<3.10).
WRITTEN_FOR = {"panel": ("1.9", "1.11"), "bokeh": ("3.7", "3.10"), "tornado": ("6.2", "7")}


class PatchVersionWarning(UserWarning):
    """A patch was not applied: the installed library is outside the range it was written for."""


@dataclass(frozen=True)
class Patch:
    name: str
    package: str  # the distribution whose code `target` belongs to (a key of WRITTEN_FOR)
    target: str  # "module:Class.attribute" or "module:attribute", the attribute replaced
    why: str  # one line; the comment above each _apply_* function says more
    apply: Callable[[], None]


def _release(text: str) -> tuple[int, ...]:
    """'3.9.2' -> (3, 9, 2); '1.10.0rc1' -> (1, 10, 0): the numeric release, pre-release tags dropped."""
    parts = []
    for piece in text.split("."):
        digits = re.match(r"\d+", piece)
        if not digits:
            break
        parts.append(int(digits[0]))
        if digits[0] != piece:
            break
    return tuple(parts)


def in_range(installed: str, low: str, below: str) -> bool:
    """low <= installed < below, by numeric release (3.10 is after 3.9)."""
    width = 4
    pad = lambda v: _release(v) + (0,) * (width - len(_release(v)))  # noqa: E731
    return pad(low) <= pad(installed) < pad(below)


def installed_version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def _resolve(target: str):
    """(owner object, attribute name) of "module:Class.attribute"; raises AttributeError/ImportError."""
    module, _, path = target.partition(":")
    owner = importlib.import_module(module)
    *parents, attr = path.split(".")
    for name in parents:
        owner = getattr(owner, name)
    if not hasattr(owner, attr):
        raise AttributeError(f"{target} does not exist")
    return owner, attr


def problem(patch: Patch, versions: dict[str, str | None] | None = None, targets: bool = True) -> str | None:
    """Why `patch` cannot be applied here (one line), or None when it can. `versions`: package ->
    installed version, to check a release other than the installed one (the tests do). `targets`:
    also import the library to check that the attribute the patch replaces exists."""
    low, below = WRITTEN_FOR[patch.package]
    found = versions[patch.package] if versions and patch.package in versions else installed_version(patch.package)
    if found is None:
        return f"kvlab patch {patch.name!r} not applied: {patch.package} is not installed"
    if not in_range(found, low, below):
        return (f"kvlab patch {patch.name!r} not applied: it was written for {patch.package} >={low},<{below} and "
                f"{patch.package} {found} is installed ({patch.why}); install a release in that range "
                f"(pyproject.toml pins it) or check {patch.target} in app/server/patches.py against the new release")
    try:
        if targets:
            _resolve(patch.target)
    except (ImportError, AttributeError):
        return f"kvlab patch {patch.name!r} not applied: {patch.package} {found} has no {patch.target} ({patch.why})"
    return None


def _replace(patch_name: str, target: str, make: Callable[[Callable], Callable]) -> None:
    """Replace `target` by make(original), once."""
    owner, attr = _resolve(target)
    current = getattr(owner, attr)
    if getattr(current, "_kvlab_patch", None) == patch_name:
        return
    replacement = make(current)
    replacement._kvlab_patch = patch_name
    setattr(owner, attr, replacement)


# 1. Panel debounces widget events on the server for 50 ms (`Syncable._debounce`) so that a burst
#    of changes is processed once. A change here costs a few milliseconds to process, so the wait
#    buys nothing. It is cut to 2 ms, not 0: at 0 the callback runs while Bokeh is still writing
#    its acknowledgement of the browser's message, holding the socket's write lock, and Panel then
#    postpones our reply by a fixed 10 ms retry (panel.io.document._dispatch_msgs). Measured with
#    benchmarks/app_latency.py: 0 ms gave a server time of ~19 ms per change, 1-3 ms gave ~11 ms.
DEBOUNCE_MS = 2


def _apply_debounce() -> None:
    from panel.reactive import Syncable

    Syncable._debounce = DEBOUNCE_MS


# 2. Bokeh's websocket leaves Nagle's algorithm on, so a small reply can sit in the kernel for
#    ~40 ms waiting for an ACK on loopback. Disable it on every websocket as it opens.
def _apply_nodelay() -> None:
    def make(original):
        def open_without_nagle(self, *args, **kwargs):
            self.set_nodelay(True)
            return original(self, *args, **kwargs)
        return open_without_nagle
    _replace("nodelay", "bokeh.server.views.ws:WSHandler.open", make)


# 3. Panel sends each model change of a callback as its own websocket message (a dozen per slider
#    move here: numbers, bar, curve marker, log, address bar...), and the browser lays the page
#    out after each. Run every widget event inside `pn.io.unlocked()`, which collects the changes
#    the callback makes and writes them as one message.
def _apply_one_message() -> None:
    from panel.io.document import unlocked
    from panel.io.state import set_curdoc

    def make(original):
        def change_event_in_one_message(self, doc):
            with set_curdoc(doc), unlocked():
                original(self, doc)
        return change_event_in_one_message
    _replace("one_message", "panel.reactive:Syncable._change_event", make)


# 4. Panel counts every widget event as "busy" for its loading indicator, and updating that
#    counter walks the state object's many params several times per event: about a third of
#    the server time of a slider move here. The page template has no busy indicator
#    (app/shell/page.py passes busy_indicator=None), so nothing reads the counter: skip it.
class _EveryEvent(list):
    def __contains__(self, item) -> bool:
        return True


def _apply_no_busy_count() -> None:
    from panel.reactive import Syncable

    Syncable._busy__ignore = _EveryEvent()


# 5. Tornado refuses a request whose headers pass 64 KB by closing the connection: a link with an
#    oversize query string got an empty response. Let such a request reach the page, whose URL
#    reader (app/viewlayer/query_limits.py) ignores an oversize query with the documented notice.
#    The limit still bounds what one request can make the server buffer.
MAX_HEADER_BYTES = 1 << 20


def _apply_header_room() -> None:
    def make(original):
        def initialize_with_room(self, *args, max_header_size=None, **kwargs):
            return original(self, *args, max_header_size=max_header_size or MAX_HEADER_BYTES, **kwargs)
        return initialize_with_room
    _replace("header_room", "tornado.httpserver:HTTPServer.initialize", make)


# 6. A page closed while the server was busy (a long lab run, a loaded machine): the messages its
#    browser sent before closing can be handled after Bokeh has detached the connection from its
#    session, and each one then logged an AssertionError traceback ("error handling message"), as
#    did the close itself when it came second. Nobody is left to answer: drop them quietly.
def _apply_detached_messages() -> None:
    def make(original):
        async def handle_if_attached(self, message, connection):
            if getattr(connection, "_session", None) is None:
                return None
            return await original(self, message, connection)
        return handle_if_attached
    _replace("detached_messages", "bokeh.server.protocol_handler:ProtocolHandler.handle", make)


def _apply_close_once() -> None:
    def make(original):
        def on_close_once(self):
            if self.connection is not None and getattr(self.connection, "_session", None) is None:
                return None  # already detached: nothing left to notify
            return original(self)
        return on_close_once
    _replace("close_once", "bokeh.server.views.ws:WSHandler.on_close", make)


# 7. A closed page's Bokeh session is discarded at the server's next check, not 15-32 s later.
#    Bokeh discards a session once its last websocket has been closed for 15 s, looking every 17 s,
#    so a closed page's document (about 8 MB for the serving lab) stays alive for up to 32 s, and a
#    classroom opening and closing pages holds dozens of dead sessions at once (benchmarks/lab_sessions.py:
#    146 -> 205 MB over the first 20 lab sessions after a warm-up, then flat). Here a session whose
#    last websocket closes asks to expire, and Bokeh's next look for unused sessions (every
#    `serve.CHECK_UNUSED_SESSIONS_MS`) discards it. A session whose page has not connected yet keeps
#    Bokeh's 15 s, which covers a slow first load; a page that reconnects after its session went gets
#    a fresh one (Bokeh makes a session for an unknown id on connect).
def _apply_expire_closed_sessions() -> None:
    def make(original):
        def unsubscribe_and_expire(self, connection) -> None:
            original(self, connection)
            if self.connection_count == 0:
                self.request_expiration()
        return unsubscribe_and_expire
    _replace("expire_closed_sessions", "bokeh.server.session:ServerSession.unsubscribe", make)


# 8. The serving lab's run pieces wait while another page's message is being answered
#    (app/server/activity.py): note when each message arrives.
def _apply_mark_messages() -> None:
    from . import activity

    def make(original):
        async def on_message_marked(self, fragment):
            activity.mark()
            return await original(self, fragment)
        return on_message_marked
    _replace("mark_messages", "bokeh.server.views.ws:WSHandler.on_message", make)


# 9. A write to a websocket the browser has closed is dropped quietly, not logged as an error.
#    Tornado's `WebSocketHandler.write_message` returns a future for each message; Panel writes each
#    part of a patch that way and awaits the futures later (`panel.io.document.dispatch_tornado`).
#    When the page closes meanwhile the writes fail with WebSocketClosedError, and some are never
#    awaited (Panel builds a patch's list of writes in one expression, so a close between two of them
#    loses the futures already made; a destroyed session's cancel does nothing to a failed future):
#    asyncio then logs "Task exception was never retrieved" with a traceback at ERROR level. Nobody
#    is left to read the patch, so each write marks that one exception seen as it finishes; any other
#    failure is still reported. A write made once Tornado knows the socket is closed raises instead
#    of returning a future, which ended Panel's write task with an exception nobody retrieved (seen
#    once in CI): such a write returns a future that has already failed the same way, which Panel
#    awaits and reports as a warning, as it does for the others.
def retrieve_if_closed(future) -> None:
    """Done callback of each write: a write that failed because the websocket closed is marked
    seen. Any other failure is reported at once, as asyncio would have reported it had nobody
    awaited it (asking for the exception marks it seen, so it cannot be left for asyncio)."""
    from tornado.websocket import WebSocketClosedError

    if future.cancelled():
        return
    error = future.exception()
    if error is not None and not isinstance(error, WebSocketClosedError):
        future.get_loop().call_exception_handler({"message": "A websocket write failed", "exception": error, "future": future})


def _apply_quiet_closed_writes() -> None:
    from tornado.websocket import WebSocketClosedError

    def make(original):
        def write_message_quiet_when_closed(self, message, binary: bool = False):
            try:
                future = original(self, message, binary=binary)
            except WebSocketClosedError as closed:
                future = asyncio.get_running_loop().create_future()
                future.set_exception(closed)
            future.add_done_callback(retrieve_if_closed)
            return future
        return write_message_quiet_when_closed
    _replace("quiet_closed_writes", "tornado.websocket:WebSocketHandler.write_message", make)


# 10. Panel's own query parser (`Location.query_params`) would call int() on a 5,000-digit value and
#     raise on every page: it reads only what `query_limits.query_pairs` keeps, and never raises.
def _apply_guard_location() -> None:
    from ..viewlayer.query_limits import query_pairs

    def make(original):
        from urllib.parse import urlencode

        def parse_query(query: str) -> dict:
            pairs, _ = query_pairs(query)
            try:
                return original("?" + urlencode(pairs))
            except (ValueError, SyntaxError, RecursionError, MemoryError):
                return {}
        return parse_query
    _replace("guard_location", "panel.io.location:parse_query", make)


SERVER_PATCHES = (
    Patch("debounce", "panel", "panel.reactive:Syncable._debounce", "widget events wait 2 ms, not 50", _apply_debounce),
    Patch("nodelay", "bokeh", "bokeh.server.views.ws:WSHandler.open", "no Nagle delay on replies", _apply_nodelay),
    Patch("one_message", "panel", "panel.reactive:Syncable._change_event", "a callback's changes go as one message",
          _apply_one_message),
    Patch("no_busy_count", "panel", "panel.reactive:Syncable._busy__ignore", "no busy counter per event", _apply_no_busy_count),
    Patch("header_room", "tornado", "tornado.httpserver:HTTPServer.initialize", "an oversize link reaches the page",
          _apply_header_room),
    Patch("detached_messages", "bokeh", "bokeh.server.protocol_handler:ProtocolHandler.handle",
          "a closed page's late messages are dropped quietly", _apply_detached_messages),
    Patch("close_once", "bokeh", "bokeh.server.views.ws:WSHandler.on_close", "a second close is dropped quietly",
          _apply_close_once),
    Patch("expire_closed_sessions", "bokeh", "bokeh.server.session:ServerSession.unsubscribe",
          "a closed page's session goes at the next check", _apply_expire_closed_sessions),
    Patch("mark_messages", "bokeh", "bokeh.server.views.ws:WSHandler.on_message", "the lab's runs yield to messages",
          _apply_mark_messages),
    Patch("quiet_closed_writes", "tornado", "tornado.websocket:WebSocketHandler.write_message",
          "a write to a closed page is no error", _apply_quiet_closed_writes),
)
GUARD_LOCATION = Patch("guard_location", "panel", "panel.io.location:parse_query", "a huge link value cannot break a page",
                       _apply_guard_location)
PATCHES = {p.name: p for p in (*SERVER_PATCHES, GUARD_LOCATION)}


def apply(name: str) -> bool:
    """Apply one patch when this installation is one it was written for; warn and skip it otherwise.
    Returns whether it is in place."""
    patch = PATCHES[name]
    why_not = problem(patch)
    if why_not:
        warnings.warn(why_not, PatchVersionWarning, stacklevel=2)
        return False
    patch.apply()
    return True


def apply_server_patches() -> list[str]:
    """Apply patches 1-9 and the location guard (the server's setup script); the names applied."""
    return [p.name for p in (*SERVER_PATCHES, GUARD_LOCATION) if apply(p.name)]


def guard_panel_location() -> None:
    """Make Panel's query parser read only what `query_pairs` keeps, and never raise (every page)."""
    if installed_version("panel") is not None:
        apply(GUARD_LOCATION.name)


def version_problems(targets: bool = True) -> list[str]:
    """One line per patch that would be skipped here. `kvlab serve` prints them before it starts, by
    version only (targets=False: it does not import Panel; the server's setup checks the attributes)."""
    return [line for p in PATCHES.values() if (line := problem(p, targets=targets))]
