"""Served locally, the pages make no request that leaves 127.0.0.1 (fonts, scripts, styles,
websockets, anything), in either theme, and raise no JavaScript error."""

import pytest

pytestmark = pytest.mark.browser

PAGES = ["/index", "/admission", "/phases", "/lesson_a3", "/lessons", "/glossary",
         "/phases?theme=dark", "/admission?theme=dark&model=qwen3-32b"]


@pytest.mark.parametrize("path", PAGES)
def test_every_request_stays_on_loopback(kv_page, path):
    sockets = []
    kv_page.page.on("websocket", lambda ws: sockets.append(ws.url))
    kv_page.page.goto(kv_page.base + path)
    kv_page.page.wait_for_load_state("networkidle")
    kv_page.page.wait_for_selector(".kv-nav a")
    host = kv_page.base.removeprefix("http://")
    allowed = (f"http://{host}/", f"blob:http://{host}/", "data:")
    outside = [u for u in kv_page.requests if not u.startswith(allowed)]
    assert outside == [], outside
    assert len(kv_page.requests) > 10  # the recorder did see the page's own requests
    assert sockets and all(u.startswith(f"ws://{host}/") for u in sockets)
    assert kv_page.errors == []
