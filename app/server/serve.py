"""`kvlab serve`: the panels (and any lesson pages) on 127.0.0.1, with the latency fixes applied.

    kvlab serve                  # port 5006, or a free one if 5006 is taken; opens a browser
    kvlab serve --port 8080 --no-show

It runs `panel serve` on every page script (app/pages/__init__.py says where they are), bound to the
loopback interface only, with `app/server/setup.py` as the --setup script (which applies the
patches of app/server/patches.py; any patch this installation's Panel, Bokeh or Tornado is not
one it was written for is named here before the server starts).
"""

from __future__ import annotations

import argparse
import signal
import socket
import subprocess
import sys
from pathlib import Path

from kvlab.app.pages import page_scripts
from kvlab.sim.cliargs import Parser, parse, report
from kvlab.sim.engine.trace import MAX_TRACE_BYTES
from kvlab.sim.fields import Bound

APP_DIR = Path(__file__).resolve().parent.parent
ROOT = APP_DIR.parent
ADDRESS = "127.0.0.1"
DEFAULT_PORT = 5006
SETUP = APP_DIR / "server" / "setup.py"
# The server runs in the folder that holds the `kvlab` package (`python -m` puts its working folder
# first on sys.path): a checkout's root, so the checkout's own code is served, or site-packages when
# installed. Never the user's folder (its own app.py) nor a folder inside the package (which would
# make kvlab's sim/ and app/ importable under second, top-level names).
IMPORT_ROOT = ROOT if (ROOT / "kvlab" / "__init__.py").is_file() else ROOT.parent
# The browser's file box sends a file base64-encoded (4 characters per 3 bytes) in one websocket
# message, in a JSON patch with the file's name and type; Tornado drops a connection whose message
# passes the limit, without a word. So the limit is the largest accepted trace (the parser's own)
# encoded, plus 1 MiB for the patch around it, and the page refuses a larger file before sending it.
WEBSOCKET_MAX_MESSAGE_BYTES = 4 * -(-MAX_TRACE_BYTES // 3) + (1 << 20)
# How often Bokeh looks for sessions to discard (its default: 17 s). A closed page's session is
# discarded at the next look (app/server/patches.py, expire_closed_sessions); the look itself only walks the sessions.
CHECK_UNUSED_SESSIONS_MS = 1000
# Options of `panel serve` that every way of serving the app shares (kvlab serve, the browser
# tests' server, the benchmarks).
SERVER_OPTIONS = ["--websocket-max-message-size", str(WEBSOCKET_MAX_MESSAGE_BYTES),
                  "--check-unused-sessions", str(CHECK_UNUSED_SESSIONS_MS)]


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((ADDRESS, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((ADDRESS, 0))
        return s.getsockname()[1]


PORT = Bound(1024, 65535, True, "port to listen on", optional=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Every bad argument reported at once, one line each, exit status 2 (sim.cliargs)."""
    parser = Parser(prog="kvlab serve", description="Serve kvlab's panels locally on 127.0.0.1.")
    parser.add_option("port", bound=PORT, unset=f"{DEFAULT_PORT}, or a free port if it is taken")
    parser.add_argument("--no-show", action="store_true", help="do not open a browser")
    parsed = parse(parser, list(sys.argv[1:] if argv is None else argv))
    report(parser.prog, parsed.notices, "note")
    if parsed.problems:
        report(parser.prog, parsed.problems)
        raise SystemExit(2)
    return parsed.args


def command(port: int, show: bool, pages: list[Path]) -> list[str]:
    origin = f"{ADDRESS}:{port}"
    cmd = [sys.executable, "-m", "panel", "serve", *map(str, pages),
           "--address", ADDRESS, "--port", str(port),
           "--allow-websocket-origin", origin, "--allow-websocket-origin", f"localhost:{port}",
           "--setup", str(SETUP), "--index", "index", *SERVER_OPTIONS]
    if show:
        cmd.append("--show")
    return cmd


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.port is None:
        port = DEFAULT_PORT if port_is_free(DEFAULT_PORT) else free_port()
    elif port_is_free(args.port):
        port = args.port
    else:
        print(f"kvlab serve: port {args.port} is in use on {ADDRESS}; pick another with --port, "
              f"or omit --port to use a free one.", file=sys.stderr)
        return 2
    from .patches import version_problems

    for line in version_problems(targets=False):
        print(f"kvlab serve: warning: {line}", file=sys.stderr, flush=True)
    pages = page_scripts()
    print(f"kvlab: serving {len(pages)} pages at http://{ADDRESS}:{port}/  (Ctrl+C to stop)", flush=True)
    for p in pages:
        print(f"  http://{ADDRESS}:{port}/{p.stem}", flush=True)
    proc = subprocess.Popen(command(port, not args.no_show, pages), cwd=IMPORT_ROOT)
    # A SIGTERM to `kvlab serve` (a test fixture, a process manager) must stop the server too,
    # not leave it running without a parent.
    signal.signal(signal.SIGTERM, lambda *_: proc.terminate())
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        try:
            return proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()


if __name__ == "__main__":
    sys.exit(main())
