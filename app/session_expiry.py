"""A closed page's Bokeh session is discarded at the server's next check, not 15-32 s later.

Bokeh discards a session once its last websocket has been closed for 15 s, looking every 17 s, so
a closed page's document (about 8 MB for the serving lab) stays alive for up to 32 s. A classroom
opening and closing pages then holds dozens of dead sessions at once, and the server's memory grows
to that high-water mark (benchmarks/lab_sessions.py: 146 -> 205 MB over the first 20 lab sessions
after a warm-up, then flat). With `install()`, a session whose last websocket closes asks to
expire, and Bokeh's next look for unused sessions (every `serve.CHECK_UNUSED_SESSIONS_MS`) discards
it. A session whose page has not connected yet keeps Bokeh's 15 s, which covers a slow first load;
a page that reconnects after its session went gets a fresh one (Bokeh makes a session for an
unknown id on connect).
"""

from __future__ import annotations

from bokeh.server.session import ServerSession

_unsubscribe = ServerSession.unsubscribe


def _unsubscribe_and_expire(self: ServerSession, connection) -> None:
    _unsubscribe(self, connection)
    if self.connection_count == 0:
        self.request_expiration()


def install() -> None:
    """Patch Bokeh's ServerSession once per process (kvlab serve's setup script calls it)."""
    if not getattr(ServerSession.unsubscribe, "_kvlab_expire", False):
        _unsubscribe_and_expire._kvlab_expire = True
        ServerSession.unsubscribe = _unsubscribe_and_expire
