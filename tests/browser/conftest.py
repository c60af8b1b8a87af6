"""Fixtures for the browser tests: one `panel serve` per session on a free port, one headless
Chromium, and a fresh page per test that records every request it makes."""

from __future__ import annotations

import time

import pytest

from devtools.chromium import CHROMIUM, CHROMIUM_ARGS
from devtools.server import SERVER_LOGS, free_port, server_errors, start_server, stop_server

playwright_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """The app served as `kvlab serve` serves it; its log is checked after each test (below)."""
    port = free_port()
    log = tmp_path_factory.mktemp("panel-serve") / "serve.log"
    proc = start_server(port, log_path=log)
    yield f"http://127.0.0.1:{port}"
    stop_server(proc)


_previous_test: list[str] = []  # the node id of the browser test that ran last


@pytest.fixture(autouse=True)
def no_server_traceback(request):
    """Fails the test during which a running server logged a traceback or an ERROR: an exception
    in a server-side callback leaves the page silently stale, which no DOM check sees. A callback's
    error is logged a moment after the page shows the last reply, so what a server logged after a
    test's end is read when the next test starts, which then fails naming the test before it; after
    the last test, stop_server reads it. (A fixed 0.2 s wait after every test, about 27 s of the
    suite, did this before.)"""
    for log in list(SERVER_LOGS):
        text = log.read_new()
        if server_errors(text):
            before = _previous_test[-1] if _previous_test else "server start-up"
            pytest.fail(f"panel serve logged an error after the previous test ({before}) ended, before this one started "
                        f"({log.path}):\n{text[-3000:]}", pytrace=False)
    yield
    _previous_test[:] = [request.node.nodeid]
    for log in list(SERVER_LOGS):
        text = log.read_new()
        if server_errors(text):
            pytest.fail(f"panel serve logged an error during this test ({log.path}):\n{text[-3000:]}", pytrace=False)


@pytest.fixture(scope="session")
def browser():
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


class Page:
    """A Playwright page plus what the tests need to read it: requests made, JS errors."""

    def __init__(self, page, base: str):
        self.page = page
        self.base = base
        self.requests: list[str] = []
        self.errors: list[str] = []
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    def open(self, path: str, wait_for: str = "log"):
        self.page.goto(self.base + path)
        self.page.wait_for_selector(f'[data-kv="{wait_for}"]', timeout=30_000)
        return self

    def text(self, key: str) -> str:
        return self.page.locator(f'[data-kv="{key}"]').first.inner_text()

    def wait_text(self, key: str, expected: str, timeout_ms: int = 10_000) -> None:
        """Wait until the element's text equals `expected` (a result has arrived from the server)."""
        loc = self.page.locator(f'[data-kv="{key}"]').first
        playwright_api.expect(loc).to_have_text(expected, timeout=timeout_ms)

    def eventually(self, check, timeout_ms: int = 10_000):
        """Run `check` (a function of this page that asserts) until it passes: the server's reply
        to a widget change arrives a few tens of milliseconds later. Re-raises the last failure."""
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            try:
                return check()
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
            self.page.wait_for_timeout(50)

    def settled_url(self, timeout_ms: int = 10_000) -> str:
        """The page's URL once the address bar has been written: it follows the state once the
        moves pause (app/shell/share.py, AddressBar.delay_ms)."""
        self.page.wait_for_function("() => !document.body.dataset.kvAddressPending", timeout=timeout_ms)
        return self.page.url

    def widget(self, key: str):
        return self.page.locator(f".kv-w-{key}").first


@pytest.fixture
def kv_page(browser, server):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    page = Page(context.new_page(), server)
    yield page
    context.close()
