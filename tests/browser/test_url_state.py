"""Every setting lives in the URL: a copied link reopens the same state, and bad or hostile values
in a link are dropped with a visible notice while the rest are kept."""

import json
import time
from urllib.parse import quote

import pytest
from kvlab.app.shell.share import ADDRESS_DELAY_MS
from kvlab.sim import Scenario, catalog, evaluate

from devtools.chromium import serve_directory

from .support import h1_texts, host_page

pytestmark = pytest.mark.browser


def shows_sim(page, **state) -> None:
    r = evaluate(Scenario(**state))
    assert page.text("max_sequences") == f"{r.max_sequences:,}"
    assert page.text("batch") == f"{r.batch:,}"


def test_a_link_opens_its_state_and_a_copied_link_reproduces_it(kv_page, browser):
    state = dict(model="qwen3-14b", gpu="h200", prompt_tokens=16384, kv_dtype="fp8", concurrency=128)
    query = "&".join(f"{k}={v}" for k, v in state.items())
    page = kv_page.open(f"/admission?{query}")
    page.eventually(lambda: shows_sim(page, **state))
    assert page.widget("model").locator("select").input_value() == "Qwen3-14B"
    assert "bk-active" in page.widget("kv_dtype").get_by_role("button", name="fp8").get_attribute("class")
    # change two settings with the keyboard and a click, then copy the link
    handle = page.widget("output_tokens").locator(".noUi-handle")
    handle.focus()
    for _ in range(8):
        page.page.keyboard.press("ArrowRight")  # 256 -> 512 output tokens
    page.widget("allocation").get_by_role("button", name="paged").click()
    box = page.widget("output_tokens-exact").locator("input")
    page.eventually(lambda: _assert(box.input_value() == "512"))
    changed = dict(state, output_tokens=512, allocation="paged")
    page.eventually(lambda: shows_sim(page, **changed))
    page.page.get_by_role("button", name="Copy link").click()
    copied = page.page.evaluate("navigator.clipboard.readText()")
    assert copied == page.settled_url()
    # the copied link, opened in a fresh browser context, shows the same state
    other = browser.new_context(viewport={"width": 1200, "height": 900})
    fresh = other.new_page()
    fresh.goto(copied)
    fresh.wait_for_selector('[data-kv="max_sequences"]')
    r = evaluate(Scenario(**changed))
    assert fresh.locator('[data-kv="max_sequences"]').inner_text() == f"{r.max_sequences:,}"
    assert fresh.locator('[data-kv="kv_pool"]').inner_text() == page.text("kv_pool")
    assert fresh.url == copied
    other.close()


def test_nav_links_and_theme_switch_keep_the_state(kv_page):
    page = kv_page.open("/admission?prompt_tokens=32768&kv_dtype=fp8")
    page.page.get_by_role("link", name="Two phases, opposite bottlenecks").click()
    page.page.wait_for_url("**/phases?prompt_tokens=32768&kv_dtype=fp8")
    page.page.wait_for_selector('[data-kv="itl"]')
    r = evaluate(Scenario(prompt_tokens=32768, kv_dtype="fp8"))
    assert page.text("itl") == f"{r.itl_s * 1e3:.1f}" == "27.9"
    page.page.get_by_role("button", name="Dark theme").click()
    page.page.wait_for_url("**/phases?prompt_tokens=32768&kv_dtype=fp8&theme=dark")
    page.page.wait_for_selector('[data-kv="itl"]')
    assert page.text("itl") == "27.9"
    assert page.page.get_by_role("button", name="Light theme").count() == 1


def test_back_to_the_defaults_empties_the_query(kv_page):
    page = kv_page.open("/admission?prompt_tokens=8192")
    box = page.widget("prompt_tokens-exact").locator("input")
    box.fill("4096")
    box.press("Enter")
    page.eventually(lambda: _assert(page.page.url == kv_page.base + "/admission"))
    assert page.page.get_by_role("link", name="Two phases, opposite bottlenecks").get_attribute("href") == "./phases"
    assert page.errors == []


# Counts the page's writes to the address bar (history.replaceState).
COUNT_WRITES_JS = """() => {
  window.kvWrites = 0;
  const replace = history.replaceState.bind(history);
  history.replaceState = (...args) => { window.kvWrites += 1; return replace(...args); };
}"""


def test_a_drag_writes_the_address_bar_once_it_pauses(kv_page):
    """Chromium ignores history.replaceState beyond 200 calls in 10 s (a browser as shipped; the
    tests' Chromium runs without that guard), so a long drag that wrote every reply left the
    address bar, and "Copy link", at an old state. The server's replies that bring a new query are
    read off the websocket; the address bar is written once per pause in them, not once per reply."""
    replies: list[float] = []

    def on_socket(ws):
        ws.on("framereceived", lambda frame: replies.append(time.monotonic())
              if isinstance(frame, str) and '"attr":"query"' in frame else None)

    kv_page.page.on("websocket", on_socket)
    page = kv_page.open("/admission")
    page.page.evaluate(COUNT_WRITES_JS)
    page.widget("prompt_tokens").locator(".noUi-handle").focus()
    opened = len(replies)
    for _ in range(16):  # 8 steps per doubling: 4,096 -> 16,384 tokens
        page.page.keyboard.press("ArrowRight")
    page.eventually(lambda: shows_sim(page, prompt_tokens=16384))
    assert page.settled_url().endswith("/admission?prompt_tokens=16384")
    moves = replies[opened:]
    pauses = 1 + sum(1 for a, b in zip(moves, moves[1:], strict=False) if b - a >= ADDRESS_DELAY_MS / 1000)
    writes = page.page.evaluate("window.kvWrites")
    assert len(moves) >= 2, moves  # the moves were answered one by one, not in one reply
    assert 1 <= writes <= pauses < len(moves), (writes, pauses, len(moves))


# When a reply's query is waiting to be written, dispatches a pointerdown (what a click on
# "Copy link" or a nav link starts with) and reads the address bar in the same task.
FLUSH_ON_POINTER_JS = """() => {
  const observer = new MutationObserver(() => {
    if (document.body.dataset.kvAddressPending !== '1') return;
    observer.disconnect();
    window.dispatchEvent(new PointerEvent('pointerdown'));
    window.kvFlushed = [location.search, document.body.dataset.kvAddressPending || null];
  });
  observer.observe(document.body, { attributes: true, attributeFilter: ['data-kv-address-pending'] });
}"""


def test_a_click_writes_a_waiting_address_at_once(kv_page):
    page = kv_page.open("/admission?prompt_tokens=8192")
    page.page.evaluate(FLUSH_ON_POINTER_JS)
    box = page.widget("prompt_tokens-exact").locator("input")
    box.fill("16384")
    box.press("Tab")  # not a key that writes the address: the reply's query waits
    page.page.wait_for_function("window.kvFlushed !== undefined", timeout=10_000)
    assert page.page.evaluate("window.kvFlushed") == ["?prompt_tokens=16384", None]


def test_embed_code_is_an_iframe_of_this_state(kv_page):
    page = kv_page.open("/phases?prompt_tokens=32768&concurrency=8")
    page.page.get_by_role("button", name="Copy embed code").click()
    snippet = page.page.evaluate("navigator.clipboard.readText()")
    assert snippet.startswith('<iframe src="' + kv_page.base + "/phases?prompt_tokens=32768&amp;concurrency=8&amp;embed=1")
    assert 'title="kvlab: Two phases, opposite bottlenecks"' in snippet and "data-kvlab-embed></iframe>" in snippet
    assert snippet.rstrip().endswith("</script>") and "kvlab-resize" in snippet  # sizes the iframe to the page
    # Served from 127.0.0.1, the address works only on this machine: the button says so.
    assert "local address" in page.page.evaluate("window.kvlabCopyWarning")


def test_embed_under_kvlab_serve_hides_the_header_and_resizes(kv_page, tmp_path):
    """Embed mode is the page template's, so the served app embeds as the static site does (issue 37:
    under kvlab serve an embed kept its header and nav and stayed 1,150 px tall)."""
    (tmp_path / "notes.html").write_text(host_page(f"{kv_page.base}/admission?embed=1&amp;prompt_tokens=32768"))
    with serve_directory(tmp_path) as host_base:  # the course notes: another origin
        host = kv_page.page
        host.goto(host_base + "notes.html")
        host.wait_for_function("document.getElementById('kv').getBoundingClientRect().height > 400", timeout=60_000)
        frame = next(f for f in host.frames if f.url.startswith(kv_page.base))
        frame.wait_for_selector('[data-kv="max_sequences"]', timeout=30_000)
        assert frame.locator('[data-kv="max_sequences"]').first.inner_text() == "12"  # the link's state
        box = frame.locator("#header").first.bounding_box()
        assert box["height"] <= 1 and box["width"] <= 1, box
        assert frame.locator("#header a, #header button").evaluate_all(
            "(els) => els.filter((e) => e.getClientRects().length > 0).length") == 0
        assert h1_texts(frame) == ["kvlab \u00b7 The admission decision"]
        # The iframe grows to the whole panel: no scroll bar inside it.
        inner = frame.evaluate("document.documentElement.scrollHeight")
        host.wait_for_function(f"Math.abs(document.getElementById('kv').getBoundingClientRect().height - {inner}) <= 2",
                               timeout=10_000)


def test_hostile_link_values_are_ignored_with_a_notice(kv_page):
    hostile = "<img src=x onerror=window.__xss=2>"  # short enough to reach each field's own check
    too_long = "<script>window.__xss=1</script><img src=x onerror=window.__xss=3>"  # over the 64-character limit
    query = (f"?prompt_tokens=abc&gpu={quote(hostile)}&tp=3&concurrency=64&{quote(hostile)}=1"
             f"&gpu_memory_utilization=2&kv_dtype=fp8&model={quote(too_long)}")
    page = kv_page.open("/admission" + query)
    notice = page.text("url_notices")
    for expected in ("prompt_tokens='abc'", "must be an integer between 1 and 2,097,152", "gpu='<img src=x onerror=",
                     "tp='3'", "must be one of 1, 2, 4, 8", "Ignored unknown setting '<img",
                     "gpu_memory_utilization='2'", "must be between 0.05 and 1", "Ignored model=",
                     f"it is {len(too_long)} characters long"):
        assert expected in notice, (expected, notice)
    shows_sim(page, concurrency=64, kv_dtype="fp8")  # the good values were kept
    assert page.page.evaluate("window.__xss") is None and page.page.locator('img[src="x"]').count() == 0
    # the address bar now carries only what was kept
    assert page.settled_url().endswith("/admission?concurrency=64&kv_dtype=fp8")


def test_a_pasted_config_travels_in_the_link(kv_page, browser):
    cfg = dict(catalog.model_entry("qwen3-14b")["config"], _name_or_path="pasted/14B")
    page = kv_page.open("/admission?prompt_tokens=8192")
    page.widget("model").locator("select").select_option(label="Paste a config.json\u2026")
    area = page.widget("config_text").locator("textarea")
    area.fill(json.dumps(cfg))
    area.blur()
    page.eventually(lambda: shows_sim(page, model="qwen3-14b", prompt_tokens=8192))
    other = browser.new_context()
    fresh = other.new_page()
    fresh.goto(page.settled_url())
    fresh.wait_for_selector('[data-kv="model_name"]')
    assert fresh.locator('[data-kv="model_name"]').inner_text().startswith("pasted/14B")
    r = evaluate(Scenario(model="qwen3-14b", prompt_tokens=8192))
    assert fresh.locator('[data-kv="max_sequences"]').inner_text() == f"{r.max_sequences:,}"
    other.close()


def _assert(condition: bool) -> None:
    assert condition
