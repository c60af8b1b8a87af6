"""The serving lab in real headless Chromium against `panel serve`.

One server for this module runs app/pages/serving_lab.py as `kvlab serve` would (with the latency
setup). The tests drive widgets like a user (clicks, typing, a file chooser) and read the numbers
the page shows, comparing them with sim.engine's own answer for the same settings.
"""

from __future__ import annotations

import re

import pytest
from kvlab.app.engine_views.settings import LabSettings
from kvlab.app.engine_views.urlstate import apply_query
from kvlab.sim.engine import simulate
from kvlab.sim.engine.trace import MAX_TRACE_BYTES

from devtools.server import free_port, start_server, stop_server

from .conftest import Page
from .support import ROOT

RESULT_FILE = ROOT / "tests" / "engine" / "data" / "vllm_append_result_l40s.jsonl"  # a real --save-result file

pytestmark = pytest.mark.browser
playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory):
    """The serving lab alone, as `kvlab serve` runs it; its log is checked after each test."""
    port = free_port()
    log = tmp_path_factory.mktemp("lab-serve") / "serve.log"
    proc = start_server(port, log_path=log, pages=[ROOT / "app" / "pages" / "serving_lab.py"], ready_path="/serving_lab")
    yield f"http://127.0.0.1:{port}"
    stop_server(proc)


@pytest.fixture
def lab(browser, lab_server):
    context = browser.new_context(viewport={"width": 1400, "height": 1100})
    page = Page(context.new_page(), lab_server)
    page.open("/serving_lab", wait_for="lab-ttft-p50")
    yield page
    assert not page.errors, page.errors
    context.close()


def _seconds(text: str) -> float:
    value, unit = re.match(r"([\d.,]+)\s*(ms|s)", text).groups()
    return float(value.replace(",", "")) * (1e-3 if unit == "ms" else 1.0)


def _expected(query: str = ""):
    s = LabSettings()
    apply_query(s, query)
    return simulate(s.config())


def _tile_seconds(page: Page, key: str) -> float:
    loc = page.page.locator(f'[data-kv="{key}"]').first
    unit = loc.locator("xpath=following-sibling::small").first.inner_text()
    return _seconds(loc.inner_text() + unit)


def test_the_page_shows_what_the_engine_computes_and_stays_local(lab):
    r = _expected()
    assert _tile_seconds(lab, "lab-ttft-p50") == pytest.approx(r.ttft_s.p50, rel=0.01)
    assert _tile_seconds(lab, "lab-itl-p99") == pytest.approx(r.itl_s.p99, rel=0.01)
    assert lab.text("lab-preemptions") == f"{r.preemptions:,}"
    # the default comparison runs the shared FCFS queue on the same requests; it is a second run,
    # whose table arrives after the tiles (on a loaded machine, seconds after)
    def compared():
        table = lab.text("lab-compare")
        assert "chunked" in table and "fcfs" in table and "ITL p99" in table, table
    lab.eventually(compared, timeout_ms=30_000)
    local = re.compile(r"^(blob:)?http://127\.0\.0\.1:\d+/")
    assert all(local.match(u) for u in lab.requests), [u for u in lab.requests if not local.match(u)]


def test_a_policy_change_shows_the_new_run(lab):
    """(How fast: benchmarks/engine_lab_latency.py measures click-to-numbers in this same setup.)"""
    before = lab.text("lab-policy")
    lab.widget("lab-policy").get_by_role("button", name="lanes").click()
    expect(lab.page.locator('[data-kv="lab-policy"]').first).to_contain_text("separate prefill / decode lanes", timeout=5000)
    assert lab.text("lab-policy") != before
    r = _expected("policy=lanes")
    lab.eventually(lambda: _check_close(_tile_seconds(lab, "lab-itl-p99"), r.itl_s.p99))


def _check_close(shown: float, want: float) -> None:
    assert shown == pytest.approx(want, rel=0.01)


def test_a_long_run_shows_progress_and_can_be_cancelled(lab):
    box = lab.widget("lab-num-requests").locator("input").first
    box.fill("400000")
    box.press("Enter")
    status = lab.page.locator('[data-kv="lab-status"]').first
    expect(status).to_contain_text(re.compile(r"simulating\u2026 \d+%"), timeout=10_000)
    # the page keeps answering while the run goes on: switch the distribution to ITL
    lab.widget("lab-metric").get_by_role("button", name="ITL", exact=True).click()
    expect(lab.page.locator('[data-kv="lab-distribution"]').first).to_contain_text("ITL:", timeout=5000)
    def finished_requests() -> int:
        m = re.search(r"\(([\d,]+) of 400,000 requests", status.inner_text())
        assert m is not None, status.inner_text()
        return int(m.group(1).replace(",", ""))
    first = lab.eventually(finished_requests, timeout_ms=10_000)

    def moved_on():
        assert finished_requests() > first
    lab.eventually(moved_on, timeout_ms=30_000)  # generous: the machine may be shared
    lab.widget("lab-cancel").locator("button").first.click()
    expect(status).to_contain_text("cancelled after", timeout=20_000)
    assert "partial results" in status.inner_text()


def test_the_rate_sweep_finds_the_knee(browser, lab_server):
    context = browser.new_context(viewport={"width": 1400, "height": 1100})
    page = Page(context.new_page(), lab_server)
    page.open("/serving_lab?preset=seed004-cliff&num_requests=300&sweep_low_per_s=0.5&sweep_high_per_s=3&sweep_points=6",
              wait_for="lab-ttft-p50")
    page.widget("lab-sweep").locator("button").first.click()
    caption = page.page.locator('[data-kv="lab-sweep"]').first
    expect(caption).to_contain_text("leaves its floor at", timeout=60_000)
    assert "KV cache" in caption.inner_text()
    assert not page.errors
    context.close()


def test_log_console_shows_vllm_sglang_and_prometheus(lab):
    log = lab.page.locator('[data-kv="lab-log"]').first
    expect(log).to_contain_text("Engine 000: Avg prompt throughput:")
    lab.widget("lab-log-source").get_by_role("button", name="SGLang log").click()
    expect(log).to_contain_text("Decode batch. #running-req:")
    lab.widget("lab-log-source").get_by_role("button", name="Prometheus /metrics").click()
    expect(log).to_contain_text("vllm:num_requests_running")
    expect(log).to_contain_text('vllm:request_success_total{engine="0",model_name="Qwen3-8B",finished_reason="length"} 600.0')


# The file box's content as the page holds it: null while no file was ever read (Bokeh's unset value).
FILE_BOX_VALUE_JS = """() => { const m = [...Bokeh.documents[0]._all_models.values()].find(m => m.type === 'FileInput');
                               return m.properties.value.is_unset ? null : m.value; }"""


def test_a_trace_upload_runs_it_and_a_bad_one_is_refused(lab, tmp_path):
    """First a file one byte over the parser's limit (sparse: nothing is written to disk, and the
    page reads only its size) and an empty one: both refused in the page before the browser reads
    them, a note naming the field and the limit, the file box's model holding no file (nothing went
    to the server, whose websocket would have dropped the message) and the settings unchanged. Then
    a good trace runs and a malformed one is refused by the server with the row named. The fixture
    checks the server log for tracebacks."""
    search = lambda: lab.page.evaluate("window.location.search")  # noqa: E731
    box = lab.widget("lab-num-requests").locator("input").first
    box.fill("321")
    box.press("Enter")
    lab.eventually(lambda: _assert_in("num_requests=321", search()))
    big = tmp_path / "big.csv"
    with open(big, "wb") as f:
        f.truncate(MAX_TRACE_BYTES + 1)
    file_box = lab.widget("lab-trace").locator("input[type=file]").first
    file_box.set_input_files(str(big))
    note = lab.widget("lab-trace").locator(".kv-upload-note").first
    expect(note).to_have_text(f"Trace file (CSV or JSON lines): big.csv is {MAX_TRACE_BYTES + 1:,} bytes; files up to "
                              f"{MAX_TRACE_BYTES / 1e6:g} MB ({MAX_TRACE_BYTES:,} bytes) are accepted. Nothing was uploaded; "
                              "the other settings are unchanged.")
    assert note.get_attribute("role") == "alert" and file_box.get_attribute("aria-invalid") == "true"
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    file_box.set_input_files(str(empty))
    expect(note).to_contain_text("Trace file (CSV or JSON lines): empty.csv is empty: choose a CSV or JSON lines file")
    assert lab.page.evaluate(FILE_BOX_VALUE_JS) is None and file_box.input_value() == ""
    expect(box).to_have_value("321")
    assert "num_requests=321" in search() and "arrival=trace" not in search()
    assert lab.page.locator('[data-kv="lab-trace"]').count() == 0  # no trace notice: the server saw nothing

    good = tmp_path / "trace.csv"
    good.write_text("arrival_s,prompt_tokens,output_tokens\n" + "".join(f"{i * 0.2:.1f},{500 + i},{20 + i}\n" for i in range(40)))
    lab.widget("lab-trace").locator("input[type=file]").first.set_input_files(str(good))
    expect(lab.page.locator('[data-kv="lab-trace"]').first).to_contain_text("40 requests from trace.csv", timeout=10_000)
    expect(lab.page.locator('[data-kv="lab-status"]').first).to_contain_text("40 requests simulated", timeout=10_000)
    expect(note).to_have_count(0)  # a good file clears the refusal
    bad = tmp_path / "bad.csv"
    bad.write_text("arrival_s,prompt_tokens,output_tokens\n0,12,5\n1,abc,5\n")
    lab.widget("lab-trace").locator("input[type=file]").first.set_input_files(str(bad))
    notice = lab.page.locator('[data-kv="lab-trace"]').first
    expect(notice).to_contain_text("Trace refused: row 3: prompt_tokens must be an integer", timeout=10_000)
    # A vllm bench serve result file in the same box: its run replayed, measured beside predicted.
    lab.widget("lab-trace").locator("input[type=file]").first.set_input_files(str(RESULT_FILE))
    expect(notice).to_contain_text(f"Benchmark result {RESULT_FILE.name} (run 1 of 3): 300 requests sent 10 per second",
                                   timeout=10_000)
    table = lab.page.locator('table[data-kv="lab-bench"]').first
    expect(table).to_contain_text("Benchmark duration (s)", timeout=20_000)
    expect(table).to_contain_text("35.84")  # the file's own figure, beside the prediction
    # The file holds three runs: the chooser replays the one picked, with its own measured figures.
    chooser = lab.widget("lab-bench-run").locator("select").first
    expect(chooser).to_be_visible()
    chooser.select_option(label="Run 2: 900 requests, 30 per second")
    expect(notice).to_contain_text(f"Benchmark result {RESULT_FILE.name} (run 2 of 3): 900 requests sent 30 per second",
                                   timeout=10_000)
    expect(table).to_contain_text("40.72", timeout=20_000)


def test_bad_input_names_the_field_and_the_range(lab):
    lab.page.get_by_text("Prompt and output lengths").first.click()
    box = lab.widget("lab-prompt-min-tokens").locator("input").first
    box.fill("20000")
    box.press("Enter")
    errors = lab.page.locator('[data-kv="lab-errors"]').first
    expect(errors).to_contain_text("prompt_max_tokens: must be at least prompt_min_tokens (20,000)", timeout=10_000)


def test_a_link_reopens_the_same_state(browser, lab_server):
    context = browser.new_context(viewport={"width": 1400, "height": 1100})
    page = Page(context.new_page(), lab_server)
    query = "preset=seed001-saturation&num_requests=400&kv_dtype=fp8"
    page.open(f"/serving_lab?{query}", wait_for="lab-ttft-p50")
    r = _expected(query)
    assert r.ok and r.completed == 400
    page.eventually(lambda: _check_close(_tile_seconds(page, "lab-ttft-p50"), r.ttft_s.p50))
    page.page.get_by_text("Hardware and model").first.click()  # the card starts collapsed
    fp8 = page.widget("lab-kv-dtype").get_by_role("button", name="fp8")
    expect(fp8).to_have_class(re.compile("active"))
    assert not page.errors
    context.close()


def test_control_changes_update_the_address_bar(lab):
    """Each kind of control (buttons, a number box, a select) puts its value in the URL; the
    fixture then checks the server log for tracebacks (every change once raised AttributeError)."""
    search = lambda: lab.page.evaluate("window.location.search")  # noqa: E731
    lab.widget("lab-policy").get_by_role("button", name="lanes").click()
    lab.eventually(lambda: _assert_in("policy=lanes", search()))
    box = lab.widget("lab-num-requests").locator("input").first
    box.fill("321")
    box.press("Enter")
    lab.eventually(lambda: _assert_in("num_requests=321", search()))
    lab.page.get_by_text("Hardware and model").first.click()
    lab.widget("lab-kv-dtype").get_by_role("button", name="fp8").click()
    lab.eventually(lambda: _assert_in("kv_dtype=fp8", search()))
    assert "policy=lanes" in search() and "num_requests=321" in search()


def _assert_in(needle: str, text: str) -> None:
    assert needle in text, text


# The page's histogram sources (this policy's, the comparison's): how many bars each holds.
HIST_BARS_JS = """() => [...Bokeh.documents[0].all_models].filter((m) => m.data && m.data.left).map((m) => m.data.left.length)"""


def test_the_comparison_reaches_every_fresh_page(browser, lab_server):
    """A run's slices wait for the browser to say its document is ready: before that Panel drops
    model changes, and a comparison that finished then showed its caption but never its bars (3 of
    8 fresh loads before the fix). Four fresh pages, each must draw both."""
    for _ in range(4):
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = Page(context.new_page(), lab_server)
        page.open("/serving_lab?preset=seed000-chunked", wait_for="lab-ttft-p50")
        page.page.get_by_text("Comparison (fcfs):").first.wait_for(timeout=60_000)
        page.page.wait_for_function(f"() => ({HIST_BARS_JS})().filter((n) => n > 0).length >= 2", timeout=10_000)
        assert not page.errors, page.errors
        context.close()
