"""A static HTTP host for a folder (standard library), for the site tests and the benchmarks: it
serves a file's precompressed copy (`F.br`, `F.gz`, which `kvlab build-site` writes beside it) when
the request's Accept-Encoding allows, brotli first, with `Content-Encoding` and the original's
`Content-Type`, as nginx's `gzip_static`/`brotli_static` and Caddy's `precompressed` do; otherwise
the file as it is. Responses of a file that has copies say `Vary: Accept-Encoding`. No
Cache-Control, as nginx and Python's http.server send none: browsers cache by Last-Modified.
"""

from __future__ import annotations

import contextlib
import email.utils
import functools
import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

# Content coding -> the copy's suffix, in the order a host prefers them (brotli is the smaller).
PRECOMPRESSED = (("br", ".br"), ("gzip", ".gz"))


def accepted_codings(header: str) -> set[str]:
    """The content codings an Accept-Encoding header allows (RFC 9110 12.5.3): q=0 refuses one;
    `*` allows every coding the header does not name."""
    allowed, refused, star = set(), set(), False
    for item in header.split(","):
        name, _, params = item.strip().partition(";")
        name = name.strip().lower()
        if not name:
            continue
        q = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if name == "*":
            star = q > 0
        elif q > 0:
            allowed.add(name)
        else:
            refused.add(name)
    if star:
        allowed |= {c for c, _ in PRECOMPRESSED} - refused
    return allowed


class StaticHandler(http.server.SimpleHTTPRequestHandler):
    # Module scripts are refused unless served as JavaScript, and streaming wasm compilation needs
    # application/wasm; Python 3.11's mimetypes knows neither .mjs nor always .wasm.
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".mjs": "text/javascript", ".js": "text/javascript", ".wasm": "application/wasm"}
    _vary = False
    precompressed = True  # False: every file as it is, as a host that ignores the copies
    requests: list | None = None  # when a list, each response is appended: (path, status, coding, body bytes)

    def log_message(self, format, *args):  # noqa: A002 - signature fixed by the base class
        pass

    def send_response(self, code, message=None):
        self._status, self._sent = int(code), {}
        super().send_response(code, message)

    def send_header(self, keyword, value):
        if hasattr(self, "_sent"):
            self._sent[keyword.lower()] = value
        super().send_header(keyword, value)

    def end_headers(self):
        if self._vary:
            self.send_header("Vary", "Accept-Encoding")
        if self.requests is not None and hasattr(self, "_status"):
            length = int(self._sent.get("content-length", 0)) if self.command != "HEAD" else 0
            self.requests.append((self.path.split("?")[0], self._status, self._sent.get("content-encoding"), length))
        super().end_headers()

    def send_head(self):
        path = self.translate_path(self.path)
        copies = [(c, path + s) for c, s in PRECOMPRESSED
                  if self.precompressed and os.path.isfile(path) and os.path.isfile(path + s)]
        self._vary = bool(copies)
        allowed = accepted_codings(self.headers.get("Accept-Encoding", ""))
        chosen = next(((c, p) for c, p in copies if c in allowed), None)
        if chosen is None:
            return super().send_head()
        coding, copy = chosen
        modified = int(os.stat(path).st_mtime)
        if self._not_modified(modified):
            self.send_response(http.HTTPStatus.NOT_MODIFIED)
            self.end_headers()
            return None
        f = open(copy, "rb")  # noqa: SIM115 - the base class's contract: send_head returns the open file
        self.send_response(http.HTTPStatus.OK)
        self.send_header("Content-Type", self.guess_type(path))  # the original's type
        self.send_header("Content-Encoding", coding)
        self.send_header("Content-Length", str(os.fstat(f.fileno()).st_size))
        self.send_header("Last-Modified", self.date_time_string(modified))
        self.end_headers()
        return f

    def _not_modified(self, modified: int) -> bool:
        """If-Modified-Since as the base class reads it (If-None-Match takes precedence: no ETags here)."""
        since = self.headers.get("If-Modified-Since")
        if since is None or "If-None-Match" in self.headers:
            return False
        try:
            when = email.utils.parsedate_to_datetime(since)
        except (TypeError, ValueError, IndexError, OverflowError):
            return False
        return when is not None and when.tzinfo is not None and modified <= when.timestamp()


@contextlib.contextmanager
def serve_directory(root: Path, precompressed: bool = True, requests: list | None = None) -> Iterator[str]:
    """Serve `root` over HTTP on 127.0.0.1 (a free port) in a thread; yield the base URL.
    `precompressed`: serve the files' copies when the request allows; `requests`: a list that gets
    (path, status, content coding, body bytes) of each response."""
    handler = type("Handler", (StaticHandler,), {"precompressed": precompressed, "requests": requests})
    handler = functools.partial(handler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
