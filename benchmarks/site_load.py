"""Benchmark: the static site in Chromium, served from 127.0.0.1, every other host unresolvable.

    .venv/bin/python benchmarks/site_load.py                      # builds the site into a temporary folder
    .venv/bin/python benchmarks/site_load.py --site site --runs 3
    .venv/bin/python benchmarks/site_load.py --old-build DIR      # + what a pyodide-worker build downloads
    .venv/bin/python benchmarks/site_load.py --site A --site B    # two builds, measured interleaved
    .venv/bin/python benchmarks/site_load.py --site A --site B --slider-only --pages admission phases
    .venv/bin/python benchmarks/site_load.py --site A --slider-only --chromium-arg=--js-flags=--no-wasm-tier-up  # a probe
    .venv/bin/python benchmarks/site_load.py --site site --pages admission lesson_a1 serving_lab --links slow  # the slow link only
    .venv/bin/python benchmarks/site_load.py --site site --identity-too --links slow  # + the same files served as they are

Method (v1), per page:
- Cold load: a fresh browser context (empty HTTP cache), from navigation start to the first
  interaction answered: the worker reports ready, then one slider move's patch is applied. For
  static pages (no worker), to the shell's ready state. Median over --runs.
- Warm load: the same page opened again in the same context (HTTP cache warm), to the same point.
- Slider (v4): 50 moves of the prompt slider on a live panel, each set at the start of a frame
  and timed in the page to the end of the frame that shows the new numbers (p50, p95), without
  the time the page waited, idle, for that frame to begin: the patch's first part set (the
  numbers and widgets; every page element in builds before session 7), then that frame's own
  style, layout and paint ("slider"). Also reported: the same with that wait ("wall"), and both
  to the end of the frame that paints the charts, which the bridge sets one frame after the
  numbers (with the other panes, in builds since session 7). (v1-v3 timed from the move to the first animation frame after the
  whole patch was set: the wait for that frame, but not its rendering.) The moves start at once
  after the first interaction, before the worker's warm-up can run (Chromium still runs Pyodide's
  WebAssembly unoptimised then). Since v6 also the same moves once the worker's warm-up has run to
  its end (the page reports it; a student reads the page first): in --slider-only each run loads
  the page twice, one for each; in the full run, on run 0's warm load.
  Since v7 also to the number by the move's place in its load: the first ten moves of a load and
  the others (at once, the first ten run code neither thread has run yet: docs/benchmarks/2026-12-01-site.md, session 10).
- Bytes: the sum of response bodies and headers of every request of the cold load (page, worker,
  Pyodide, wheels), from Playwright's request sizes. Until v7 the server sent no compression; since
  v8 it serves the build's precompressed copies (devtools/static_host.py: brotli when the request
  allows it, as Chromium's do), unless --identity-too adds each site served as its files are.
- Slow link (v8, --links slow): Chromium's network emulation (`Network.emulateNetworkConditions`
  through a CDP session of each page: 10 Mbit/s down, 5 Mbit/s up, 40 ms round trip; it applies to
  the page's worker too) on a fresh context: the first answer (as for the cold load above) cold,
  then warm (a second page in the same context, its HTTP cache kept). Targets: cold <= 8 s, warm
  <= 2 s. For a lesson (whose first answer is its ready state) also its first live view's first
  move made at once, answered (the worker starts at that move). What the host sent, per file, from
  the server's own log: for the cold load the bytes and content coding of each file; for the warm
  load each file fetched again (200, or 304 when revalidated), the rest came from the cache. On
  run 0, another live panel is then opened in the same context (admission, or phases after
  admission): which of the shared files (Pyodide, the snapshot, the wheels, the bundles) it fetched.
- Lab run (v2): on the serving lab, the wall time in the page from changing the random seed (a new
  600-request run of the default workload) to the worker going idle with every view patched, with
  the comparison policy off ("a 600-request run") and on (two 600-request runs); median of
  --lab-runs, and how many progress patches (worker slices) the page received meanwhile. The lab's
  cold/warm load (v5) ends when its first interaction is answered: the latency metric switched,
  which redraws the distribution chart from the opening run (v2-v4: when the opening run was
  drawn; since session 5 the default page answers before running the run it was built showing,
  and runs it while idle or at the first change; since session 6 it takes the build's copy of
  that run). Since session 6 the lab builds its lower sections once it is up: when the last one
  was built (a mark the page sets) is reported beside the load, median of the cold loads.
- Bare Pyodide: a page that only starts the same Pyodide core in a module worker (the floor).
- Site size: every file of the build.
- Worker (v3): on live pages, the worker's own `timings` of each cold load: which start ran
  (`boot`: "snapshot", the site's Pyodide memory snapshot, or "plain"), and when Python was up
  (`python_ms`) and the first patch made (`ready_ms`), from the worker's start. With several
  --site, each run of each page loads every site in turn (cold, then warm), so the sites share
  the machine's load; the 1-minute load average is recorded at every cold load.
Other hosts are blocked with Chromium's --host-resolver-rules, not with request routing, because
Playwright's routing turns the HTTP cache off (which would make warm loads cold).
Figures depend on the machine's load (2 shared cores here); compare runs from one session only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kvlab.app.site.compress import site_bytes  # noqa: E402

from devtools import pyodide as harness  # noqa: E402

METHOD_VERSION = 8
BLOCK_OTHER_HOSTS = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
# --chromium-arg: extra switches for probes (for example --js-flags=...), the same for every site measured
EXTRA_CHROMIUM_ARGS: list[str] = []


def _launch(pw):
    return pw.chromium.launch(executable_path=harness.CHROMIUM, args=[*harness.CHROMIUM_ARGS, BLOCK_OTHER_HOSTS, *EXTRA_CHROMIUM_ARGS])
BOOT_TIMEOUT_MS = 240_000
BARE_PAGE = """<!doctype html><meta charset="utf-8"><title>bare Pyodide</title><script type="module">
const t0 = performance.now();
const w = new Worker(URL.createObjectURL(new Blob([`
  self.onmessage = async (e) => { const { loadPyodide } = await import(e.data + "pyodide.mjs");
    await loadPyodide({ indexURL: e.data }); self.postMessage("ready"); };`], { type: "text/javascript" })), { type: "module" });
w.onmessage = () => { window.bareReadyMs = performance.now() - t0; };
w.postMessage(new URL("./pyodide/", location.href).href);
</script>"""


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(q * (len(values) - 1))))]


def _first_interaction(page, live: bool) -> float:
    """ms from navigation start to the first interaction answered."""
    page.wait_for_function("['ready', 'failed'].includes(document.body.dataset.kvlabState)", timeout=BOOT_TIMEOUT_MS)
    if page.evaluate("document.body.dataset.kvlabState") != "ready":
        raise RuntimeError(page.evaluate("(document.querySelector('[role=alert]') || {}).textContent"))
    if not live:
        return page.evaluate("performance.now()")
    if live == "lab":  # a display choice (the latency metric): answered once the opening run is known
        return page.evaluate("""async () => { const b = window.kvlabBridge; await b.idle();
            const m = Bokeh.documents[0].get_model_by_name('w.lab-metric'), done = b.nextPatch();
            m.active = m.active === 1 ? 0 : 1; await done; return performance.now(); }""")
    return page.evaluate("""async () => { const m = Bokeh.documents[0].get_model_by_name('w.prompt_tokens');
        const done = window.kvlabBridge.nextPatch(); m.value = m.value === 13 ? 12 : 13; await done; return performance.now(); }""")


# One move: the widget's value is set at the start of a frame (as Chromium delivers input), then
# the bridge's marks (kvlab-bridge.js) and the page's own next frame give when the move's patch
# set the page's elements (appliedAt), when the frame that drew them began (frameAt) and ended
# (shownAt, a task posted from that frame's animation callback runs after its style, layout and
# paint), and when the frame after the charts were set ended. A patch with no chart part is drawn
# in the page's next frame, timed the same way here.
SLIDER_JS = """async (n) => { const b = window.kvlabBridge, m = Bokeh.documents[0].get_model_by_name('w.prompt_tokens'), out = [];
    const frameEnd = () => new Promise((r) => requestAnimationFrame((begin) => { const c = new MessageChannel();
      c.port1.onmessage = () => r([begin, performance.now()]); c.port2.postMessage(0); }));
    for (let i = 0; i < n; i++) { const v = 8 + ((i * 5) % 64) / 8; if (v === m.value) continue;
      await new Promise(requestAnimationFrame);
      const t0 = performance.now(), done = b.nextPatch(); m.value = v; await done; const setAll = performance.now();
      const [begin, end] = await frameEnd();
      const split = b.shownAt > t0, applied = split ? b.appliedAt : setAll;
      const [numBegin, numEnd] = split ? [b.frameAt, b.shownAt] : [begin, end];
      const number = applied - t0 + numEnd - Math.max(numBegin, applied);
      out.push({ number, number_wall: numEnd - t0,
                 charts: split ? number + (setAll - numEnd) + (end - Math.max(begin, setAll)) : number, charts_wall: end - t0 });
      await new Promise((r) => setTimeout(r, 30)); }
    return out; }"""


FIRST_MOVES = 10  # v7: the first moves of a load, reported apart from the others


def _slider_moves(page, moves: int) -> list[dict]:
    """Per move (ms): `number`, from the move to the frame that shows the page's new numbers
    rendered, without the wait for that frame to begin (the main thread was idle then);
    `number_wall`, the same with that wait; `charts` and `charts_wall`, the same to the frame that
    paints the charts (the bridge sets them one frame after the numbers); `index`, the move's place
    in this load (0 first)."""
    return [{**m, "index": i} for i, m in enumerate(page.evaluate(SLIDER_JS, moves))]


def _slider_figures(moves: list[dict], prefix: str = "slider") -> dict:
    out = {f"{prefix}_moves": len(moves)}
    for key in ("number", "number_wall", "charts", "charts_wall"):
        values = [m[key] for m in moves]
        out[f"{prefix}_{key}_p50_ms"] = _pct(values, 0.5) if values else None
        out[f"{prefix}_{key}_p95_ms"] = _pct(values, 0.95) if values else None
    out[f"{prefix}_p50_ms"], out[f"{prefix}_p95_ms"] = out[f"{prefix}_number_p50_ms"], out[f"{prefix}_number_p95_ms"]
    for part, keep in (("first", lambda i: i < FIRST_MOVES), ("later", lambda i: i >= FIRST_MOVES)):
        values = [m["number"] for m in moves if keep(m["index"])]
        out[f"{prefix}_{part}_p50_ms"] = _pct(values, 0.5) if values else None
        out[f"{prefix}_{part}_p95_ms"] = _pct(values, 0.95) if values else None
    return out


def _warmed_up(page) -> dict:
    """Waits, asking nothing of the page, until its worker's warm-up has run to its end (v6); the
    worker's figures for it (steps, Python ms, wall ms)."""
    page.wait_for_function("window.kvlabBridge.warmed !== null", timeout=BOOT_TIMEOUT_MS)
    warmed = page.evaluate("window.kvlabBridge.warmed")
    if warmed is None:  # a build from before v6 does not say: its 12 warm-up moves end well within 3 s
        page.wait_for_timeout(3000)
        return {"steps": None, "waited_ms": 3000}
    return warmed


LAB_RUN_JS = """async ([name, value]) => { const b = window.kvlabBridge, m = Bokeh.documents[0].get_model_by_name(name);
    await b.idle(); const runs = b.runs, ticks = b.ticks, t0 = performance.now(); m.value = value;
    await new Promise((r) => { const w = () => (b.runs > runs ? r() : setTimeout(w, 2)); w(); });
    return [performance.now() - t0, b.ticks - ticks]; }"""


def _lab_runs(page, runs: int) -> dict:
    """Median ms (and progress patches) of 600-request runs, without and with the comparison policy."""
    out = {}
    for k, compare in enumerate(("none", "fcfs")):
        page.evaluate(LAB_RUN_JS, ["w.lab-compare-policy", compare])
        times, ticks = [], []
        for i in range(runs):
            # A seed not used yet: setting the current one changes nothing, and no run would start.
            ms, n = page.evaluate(LAB_RUN_JS, ["w.lab-seed", 100 + k * runs + i])
            times.append(ms)
            ticks.append(n)
        out[compare] = {"median_ms": statistics.median(times), "runs_ms": times, "progress_patches": ticks}
    return out


def _later_sections_ms(page) -> float | None:
    """ms from navigation start to the last of the page's lower sections built (app/site/,
    defer_later_sections, marks it); the first interaction does not wait for them. None for a
    build that does not defer them (no mark within 5 s)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function("performance.getEntriesByName('kvlab-later-sections').length > 0", timeout=5_000)
    except PlaywrightTimeout:
        return None
    return page.evaluate("performance.getEntriesByName('kvlab-later-sections')[0].startTime")


def _bare_boot(browser, bare_base: str) -> float:
    ctx = browser.new_context()
    try:
        p = ctx.new_page()
        p.goto(bare_base + "bare.html")
        p.wait_for_function("window.bareReadyMs", timeout=BOOT_TIMEOUT_MS)
        return p.evaluate("window.bareReadyMs")
    finally:
        ctx.close()


# v8: the slow link of issue 37's targets, applied through a CDP session of each page.
SLOW_LINK = {"offline": False, "latency": 40, "downloadThroughput": 10_000_000 / 8, "uploadThroughput": 5_000_000 / 8}
SLOW_TARGET_MS = {"cold": 8000, "warm": 2000}
# A lesson's first live move: the first live view's first button group (A1: the KV precision), the next choice.
LESSON_LIVE_MOVE_JS = """async () => { const d = Bokeh.documents[0];
    const m = [...d._all_models.values()].find((m) => /^lv0:w\\./.test(m.name || "") && typeof m.active === "number");
    if (!m) return null;
    const b = window.kvlabBridge, before = b.patches; m.active = (m.active + 1) % m.labels.length;
    await new Promise((r) => { const w = () => (b.patches > before ? r() : setTimeout(w, 5)); w(); });
    return performance.now(); }"""


def _slow_page(ctx):
    page = ctx.new_page()
    cdp = ctx.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", SLOW_LINK)
    return page


def _slow_link(browser, base: str, log: list, name: str, live, then: str | None = None) -> dict:
    """One cold and one warm load of `name` on the slow link: first answer (ms from navigation
    start), and what the server sent for each (its log). `then`: a live panel opened next in the
    same context (what another page of the site takes from the cache: the snapshot, Pyodide, the
    wheels are shared)."""
    ctx = browser.new_context(viewport={"width": 1300, "height": 900})
    try:
        out = {}
        for visit, page_name in (("cold", name), ("warm", name), ("then", then)):
            if page_name is None:
                continue
            p = _slow_page(ctx)
            del log[:]
            p.goto(base + f"{page_name}.html")
            out[f"{visit}_ms"] = _first_interaction(p, live if visit != "then" else True)
            if visit != "then" and not live and p.evaluate("!!document.querySelector('script[data-live]')"):
                out[f"{visit}_live_ms"] = p.evaluate(LESSON_LIVE_MOVE_JS)
            out[f"{visit}_files"] = [list(r) for r in log]
            out[f"{visit}_page"] = page_name
            p.close()
        return out
    finally:
        ctx.close()


def _slow_figures(runs: list[dict]) -> dict:
    out = {}
    for visit in ("cold", "warm"):
        times = [r[f"{visit}_ms"] for r in runs]
        out[f"slow_{visit}_ms"], out[f"slow_{visit}_runs_ms"] = statistics.median(times), times
        live = [r[f"{visit}_live_ms"] for r in runs if r.get(f"{visit}_live_ms") is not None]
        out[f"slow_{visit}_live_ms"] = statistics.median(live) if live else None
        out[f"slow_{visit}_live_runs_ms"] = live
        out[f"slow_{visit}_bytes"] = statistics.median(sum(f[3] for f in r[f"{visit}_files"]) for r in runs)
        out[f"slow_{visit}_files"] = runs[0][f"{visit}_files"]  # run 0's, per file
    if "then_ms" in runs[0]:
        out.update(slow_then_page=runs[0]["then_page"], slow_then_ms=runs[0]["then_ms"], slow_then_files=runs[0]["then_files"])
    return out


def measure(site: Path, pages: list[tuple[str, object]], runs: int, moves: int, lab_runs: int = 5) -> dict:
    return measure_sites([site], pages, runs, moves, lab_runs)[0]


@harness.in_own_thread
def measure_sites(sites: list[Path], pages: list[tuple[str, object]], runs: int, moves: int, lab_runs: int = 5,
                  links: tuple[str, ...] = ("fast", "slow"), precompressed: list[bool] | None = None) -> list[dict]:
    """Figures for each site; each run loads every site in turn (interleaved), so they share the load.
    `precompressed[i]`: site i served with its precompressed copies (default) or its files as they are."""
    from playwright.sync_api import sync_playwright

    precompressed = precompressed or [True] * len(sites)
    results: list[dict] = [{"pages": {}} for _ in sites]
    with contextlib.ExitStack() as stack:
        bases, bare_bases, logs = [], [], []
        for site, packed in zip(sites, precompressed, strict=True):
            bare_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kvlab-bare-")))
            (bare_dir / "bare.html").write_text(BARE_PAGE, encoding="utf-8")
            (bare_dir / "pyodide").symlink_to(site.resolve() / "pyodide")
            logs.append([])
            bases.append(stack.enter_context(harness.serve_directory(site, precompressed=packed, requests=logs[-1])))
            bare_bases.append(stack.enter_context(harness.serve_directory(bare_dir, precompressed=packed)))
        pw = stack.enter_context(sync_playwright())
        browser = _launch(pw)
        stack.callback(browser.close)
        bare: list[list[float]] = [[] for _ in sites]
        for _ in range(runs if "fast" in links else 0):
            for i, bare_base in enumerate(bare_bases):
                bare[i].append(_bare_boot(browser, bare_base))
        for i, times in enumerate(bare):
            results[i]["bare_pyodide_ms"] = statistics.median(times) if times else None
            results[i]["bare_runs_ms"] = times
        for name, live in pages:
            seen = [{"cold": [], "warm": [], "sizes": [], "slider": [], "slider_warmed": [], "warmed": [], "timings": [], "load": [],
                     "later": [], "slow": []} for _ in sites]
            for run in range(runs):
                for i, base in enumerate(bases):
                    f = seen[i]
                    if "slow" in links:
                        then = ("phases" if name == "admission" else "admission") if run == 0 else None
                        f["slow"].append(_slow_link(browser, base, logs[i], name, live, then))
                    if "fast" not in links:
                        continue
                    ctx = browser.new_context(viewport={"width": 1300, "height": 900})
                    requests = []
                    ctx.on("requestfinished", lambda r, requests=requests: requests.append(r))
                    p = ctx.new_page()
                    f["load"].append(os.getloadavg()[0])
                    p.goto(base + f"{name}.html")
                    f["cold"].append(_first_interaction(p, live))
                    if live:
                        f["timings"].append(p.evaluate("window.kvlabBridge.timings || null"))
                    if live == "lab":
                        later = _later_sections_ms(p)
                        if later is not None:
                            f["later"].append(later)
                    total = 0
                    for r in requests:
                        sz = r.sizes()
                        total += sz["responseBodySize"] + sz["responseHeadersSize"]
                    f["sizes"].append(total)
                    if live == "lab" and run == 0:
                        results[i]["lab_run"] = _lab_runs(p, lab_runs)
                    elif live and run == 0:
                        f["slider"] = _slider_moves(p, moves)
                    p.close()
                    p = ctx.new_page()
                    p.goto(base + f"{name}.html")
                    f["warm"].append(_first_interaction(p, live))
                    if live is True and run == 0:
                        f["warmed"] = [_warmed_up(p)]
                        f["slider_warmed"] = _slider_moves(p, moves)
                    ctx.close()
            for i, f in enumerate(seen):
                timings = [t for t in f["timings"] if t]
                slow = _slow_figures(f["slow"]) if f["slow"] else {}
                if "fast" not in links:
                    results[i]["pages"][name] = {"live": live, **slow}
                    print(f"  {sites[i]} {name}: slow link cold {slow['slow_cold_ms']:.0f} ms, warm {slow['slow_warm_ms']:.0f} ms",
                          file=sys.stderr, flush=True)
                    continue
                results[i]["pages"][name] = {
                    **slow,
                    "live": live, "cold_ms": statistics.median(f["cold"]), "warm_ms": statistics.median(f["warm"]),
                    "bytes": statistics.median(f["sizes"]), "cold_runs_ms": f["cold"], "warm_runs_ms": f["warm"],
                    "load_1min": f["load"],
                    **_slider_figures(f["slider"]), **_slider_figures(f["slider_warmed"], "slider_warmed"), "warm_up": f["warmed"],
                    "boot": sorted({t.get("boot", "plain") for t in timings}),
                    "python_ms": statistics.median(t["python_ms"] for t in timings) if timings else None,
                    "ready_ms": statistics.median(t["ready_ms"] for t in timings) if timings else None,
                    "worker_timings": timings,
                    "later_sections_ms": statistics.median(f["later"]) if f["later"] else None}
                print(f"  {sites[i]} {name}: cold {results[i]['pages'][name]['cold_ms']:.0f} ms, "
                      f"warm {results[i]['pages'][name]['warm_ms']:.0f} ms", file=sys.stderr, flush=True)
    return results


@harness.in_own_thread
def measure_sliders(sites: list[Path], pages: list[tuple[str, object]], runs: int, moves: int) -> list[dict]:
    """--slider-only: for each live panel, --runs times, each site in turn: a fresh context, the page
    loaded, then --moves slider moves; p50/p95 over every move of every run, with the 1-minute load
    average before each load."""
    from playwright.sync_api import sync_playwright

    results: list[dict] = [{"pages": {}} for _ in sites]
    with contextlib.ExitStack() as stack:
        bases = [stack.enter_context(harness.serve_directory(site)) for site in sites]
        pw = stack.enter_context(sync_playwright())
        browser = _launch(pw)
        stack.callback(browser.close)
        for name, live in pages:
            if live is not True:
                continue
            seen = [{"slider": [], "slider_warmed": [], "warmed": [], "load": []} for _ in sites]
            for _ in range(runs):
                for i, base in enumerate(bases):
                    for warmed in (False, True):
                        ctx = browser.new_context(viewport={"width": 1300, "height": 900})
                        p = ctx.new_page()
                        seen[i]["load"].append(os.getloadavg()[0])
                        p.goto(base + f"{name}.html")
                        _first_interaction(p, live)
                        if warmed:
                            seen[i]["warmed"].append(_warmed_up(p))
                        seen[i]["slider_warmed" if warmed else "slider"] += _slider_moves(p, moves)
                        ctx.close()
            for i, f in enumerate(seen):
                results[i]["pages"][name] = {**_slider_figures(f["slider"]), **_slider_figures(f["slider_warmed"], "slider_warmed"),
                                             "warm_up": f["warmed"], "load_1min": f["load"]}
    return results


def old_build_downloads(old: Path) -> dict:
    """What a page of the old `panel convert --to pyodide-worker` build downloads before its first
    slider answers, from that build's own files: the page and every URL it names, its worker and
    resources zip, Pyodide's full distribution files the worker loads, micropip, and the packages
    micropip installs (Panel's and Bokeh's wheels and their dependencies, resolved through Pyodide
    0.29.3's lock file). Sizes: local files, or the same files in the installed bokeh/panel and
    the npm pyodide 0.29.3 core; packages fetched from Pyodide's CDN or PyPI have no size offline."""
    import bokeh
    import panel

    lock = json.loads((harness.NODE_MODULES / "pyodide-panel" / "pyodide-lock.json").read_text())["packages"]
    core = harness.NODE_MODULES / "pyodide-panel"
    local = {"https://cdn.bokeh.org/bokeh/release/": Path(bokeh.__file__).parent / "server" / "static" / "js",
             f"https://cdn.holoviz.org/panel/{panel.__version__}/dist/": Path(panel.__file__).parent / "dist"}
    out = {}
    for html_path in sorted(old.glob("*.html")):
        if html_path.name == "pages.html":
            continue
        name = html_path.stem
        text = html_path.read_text()
        items = [(html_path.name, html_path.stat().st_size)]
        for url in sorted(set(re.findall(r'(?:src|href)="(https://[^"]+)"', text))):
            size = None
            for prefix, folder in local.items():
                if url.startswith(prefix):
                    rel = re.sub(r"-\d+\.\d+\.\d+(?=\.min\.js$)", "", url[len(prefix):].split("?")[0])
                    f = folder / rel
                    size = f.stat().st_size if f.is_file() else None
            items.append((url, size))
        worker = old / f"{name}.js"
        items += [(worker.name, worker.stat().st_size), (f"{name}.resources.zip", (old / f"{name}.resources.zip").stat().st_size)]
        for f in ("pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json"):
            items.append((f"https://cdn.jsdelivr.net/pyodide/v0.29.3/full/{f}", (core / f).stat().st_size))
        installs = re.search(r"micropip\.install\(\[(.*?)\]", worker.read_text()).group(1)
        wanted = [w.strip().strip("'\"") for w in installs.split(",")]
        seen: set[str] = set()

        def need(pkg: str, seen=seen, items=items) -> None:
            key = pkg.lower().replace("_", "-")
            if key in seen:
                return
            seen.add(key)
            entry = lock.get(key) or lock.get(pkg)
            if entry is None:
                items.append((f"PyPI: {pkg} (not in Pyodide's distribution)", None))
                return
            items.append((f"https://cdn.jsdelivr.net/pyodide/v0.29.3/full/{entry['file_name']}", None))
            for dep in entry.get("depends", []):
                need(dep)

        need("micropip")
        for w in wanted:
            if w.startswith("emfs:"):
                continue
            if w.startswith("https://"):
                items.append((w, None))
                dist = w.rsplit("/", 1)[1].split("-")[0]
                deps = {"bokeh": ["jinja2", "contourpy", "numpy", "packaging", "pandas", "pillow", "pyyaml", "tornado",
                                  "xyzservices", "narwhals"],
                        "panel": ["param", "pyviz_comms", "markdown", "markdown-it-py", "linkify-it-py", "mdit-py-plugins",
                                  "requests", "tqdm", "bleach", "typing-extensions", "packaging"]}[dist]
                for d in deps:  # Requires-Dist of bokeh 3.9.2 and panel 1.9.4 (their installed METADATA)
                    need(d)
            else:
                need(w)
        known = sum(s for _, s in items if s)
        out[name] = {"files": len(items), "known_bytes": known, "unknown_size": sum(1 for _, s in items if s is None),
                     "items": items}
    return out


def _slider_lines(f: dict) -> list[str]:
    """The slider figures of one page: moves made at once after the first interaction, and (v6)
    moves made once the worker's warm-up had run to its end."""
    out = []
    for prefix, when in (("slider", "at once"), ("slider_warmed", "once warmed up")):
        if f.get(f"{prefix}_charts_p50_ms") is None:
            continue
        out.append(f"slider {when}: to the number {f[f'{prefix}_p50_ms']:.1f} / {f[f'{prefix}_p95_ms']:.1f} ms (wall "
                   f"{f[f'{prefix}_number_wall_p50_ms']:.1f} / {f[f'{prefix}_number_wall_p95_ms']:.1f}), to the charts "
                   f"{f[f'{prefix}_charts_p50_ms']:.1f} / {f[f'{prefix}_charts_p95_ms']:.1f} ms (wall "
                   f"{f[f'{prefix}_charts_wall_p50_ms']:.1f} / {f[f'{prefix}_charts_wall_p95_ms']:.1f}), p50 / p95 over "
                   f"{f[f'{prefix}_moves']} moves")
        if f.get(f"{prefix}_first_p50_ms") is not None and f.get(f"{prefix}_later_p50_ms") is not None:
            out.append(f"slider {when}, to the number by the move's place in its load: moves 1-{FIRST_MOVES} "
                       f"{f[f'{prefix}_first_p50_ms']:.1f} / {f[f'{prefix}_first_p95_ms']:.1f} ms, the others "
                       f"{f[f'{prefix}_later_p50_ms']:.1f} / {f[f'{prefix}_later_p95_ms']:.1f} ms")
    warm_ups = [w for w in f.get("warm_up") or [] if w and w.get("steps") is not None]
    if warm_ups:
        out.append("warm-up: " + ", ".join(f"{w['steps']} steps, {w['python_ms']:.0f} ms of Python in {w['wall_ms']:.0f} ms"
                                           for w in warm_ups))
    return out


def _report(site: Path, info: dict, figures: dict, runs: int) -> None:
    print(f"\nkvlab site_load v{METHOD_VERSION}: {figures['label']} ({figures['site_bytes'] / 1e6:.1f} MB on disk, "
          f"+ {figures['copy_bytes'] / 1e6:.1f} MB of precompressed copies), {runs} runs")
    if EXTRA_CHROMIUM_ARGS:
        print(f"Chromium switches added for this probe: {' '.join(EXTRA_CHROMIUM_ARGS)}")
    snap = info.get("snapshot")
    print("Pyodide memory snapshot: " + (f"{snap['file']} ({snap['bytes'] / 1e6:.1f} MB)" if snap else "none"))
    fast = {n: f for n, f in figures["pages"].items() if "cold_ms" in f}
    if fast:
        print(f"bare Pyodide {info['pyodide_version']} boot in a module worker: {figures['bare_pyodide_ms']:.0f} ms (median of "
              f"{', '.join(f'{x:.0f}' for x in figures['bare_runs_ms'])})")
        print(f"{'page':<16}{'cold ms':>9}{'warm ms':>9}{'x bare':>8}{'slider p50':>12}{'p95 ms':>8}{'MB cold':>9}"
              f"{'boot':>10}{'python ms':>11}{'ready ms':>10}  load 1-min")
    for name, f in fast.items():
        ratio = f["cold_ms"] / figures["bare_pyodide_ms"] if f["live"] else float("nan")
        p50 = f"{f['slider_p50_ms']:.1f}" if f["slider_p50_ms"] is not None else "-"
        p95 = f"{f['slider_p95_ms']:.1f}" if f["slider_p95_ms"] is not None else "-"
        boot = "/".join(f["boot"]) or "-"
        python = f"{f['python_ms']:.0f}" if f["python_ms"] is not None else "-"
        ready = f"{f['ready_ms']:.0f}" if f["ready_ms"] is not None else "-"
        load = f"{min(f['load_1min']):.2f}-{max(f['load_1min']):.2f}"
        print(f"{name:<16}{f['cold_ms']:>9.0f}{f['warm_ms']:>9.0f}{ratio:>8.2f}{p50:>12}{p95:>8}{f['bytes'] / 1e6:>9.2f}"
              f"{boot:>10}{python:>11}{ready:>10}  {load}")
    _slow_report(figures)
    for name, f in figures["pages"].items():
        for line in _slider_lines(f):
            print(f"{name}: {line}")
    for name, f in figures["pages"].items():
        if f.get("later_sections_ms") is not None:
            print(f"{name}: its lower sections built {f['later_sections_ms']:.0f} ms after navigation start (cold, median)")
    if "lab_run" in figures:
        for compare, f in figures["lab_run"].items():
            what = "one 600-request run" if compare == "none" else "a 600-request run and its 600-request comparison"
            print(f"serving lab, {what}: {f['median_ms']:.0f} ms median (runs {', '.join(f'{x:.0f}' for x in f['runs_ms'])}), "
                  f"progress patches {f['progress_patches']}")


def _slow_report(figures: dict) -> None:
    slow = {n: f for n, f in figures["pages"].items() if "slow_cold_ms" in f}
    if not slow:
        return
    link = SLOW_LINK
    print(f"slow link ({link['downloadThroughput'] * 8 / 1e6:.0f} Mbit/s down, {link['uploadThroughput'] * 8 / 1e6:.0f} up, "
          f"{link['latency']} ms round trip): first answer, median (runs); targets cold <= {SLOW_TARGET_MS['cold'] / 1000:.0f} s, "
          f"warm <= {SLOW_TARGET_MS['warm'] / 1000:.0f} s")
    for name, f in slow.items():
        parts = []
        for visit in ("cold", "warm"):
            ok = "met" if f[f"slow_{visit}_ms"] <= SLOW_TARGET_MS[visit] else "MISSED"
            parts.append(f"{visit} {f[f'slow_{visit}_ms']:.0f} ms ({', '.join(f'{x:.0f}' for x in f[f'slow_{visit}_runs_ms'])}) {ok}")
        print(f"  {name:<14} " + "; ".join(parts) + f"; sent cold {f['slow_cold_bytes'] / 1e6:.2f} MB, warm "
              f"{f['slow_warm_bytes'] / 1e6:.2f} MB")
        for visit in ("cold", "warm"):
            if f.get(f"slow_{visit}_live_ms") is not None:
                print(f"  {name:<14} {visit}, its first live view's first move made at once, answered: "
                      f"{f[f'slow_{visit}_live_ms']:.0f} ms ({', '.join(f'{x:.0f}' for x in f[f'slow_{visit}_live_runs_ms'])})")
    for name, f in slow.items():
        files = sorted(f["slow_cold_files"], key=lambda r: -r[3])
        total = sum(r[3] for r in files)
        print(f"  {name}, cold, what the host sent (run 0): {len(files)} responses, {total / 1e6:.2f} MB; the largest:")
        for path, status, coding, size in files[:12]:
            print(f"    {size / 1e6:>7.3f} MB  {status} {coding or 'as is':<6} {path}")
        again = f["slow_warm_files"]
        print(f"  {name}, warm (run 0): {len(again)} requests reached the host "
              f"({sum(1 for r in again if r[1] == 304)} revalidated: 304, {sum(1 for r in again if r[1] == 200)} sent again, "
              f"{sum(r[3] for r in again) / 1e6:.3f} MB); every other file came from the browser's cache"
              + (": " + ", ".join(f"{p} {s}" for p, s, _, _ in again) if again else ""))
        if "slow_then_files" in f:
            then = f["slow_then_files"]
            shared = [r for r in then if r[0].startswith(("/pyodide/", "/snapshot/", "/wheels/", "/vendor/"))]
            print(f"  {name}, then {f['slow_then_page']} in the same context (run 0): first answer {f['slow_then_ms']:.0f} ms; "
                  f"{len(then)} requests reached the host, {sum(r[3] for r in then) / 1e6:.3f} MB; of Pyodide, the snapshot, "
                  f"the wheels and the vendor bundles: " + (", ".join(f"{p} {s} {b / 1e6:.3f} MB" for p, s, _, b in shared)
                                                             if shared else "none (all from the cache)"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", type=Path, action="append", help="a built site (default: build one into a temporary "
                        "folder); give it more than once to measure several builds interleaved")
    parser.add_argument("--runs", type=int, default=3, help="cold/warm loads per page (default: %(default)s)")
    parser.add_argument("--moves", type=int, default=50, help="slider moves per live page (default: %(default)s)")
    parser.add_argument("--lab-runs", type=int, default=5, help="600-request lab runs timed per setting (default: %(default)s)")
    parser.add_argument("--pages", nargs="*", help="page names (default: every page of the build)")
    parser.add_argument("--old-build", type=Path, help="a pyodide-worker build of the old way, to list its downloads")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--slider-only", action="store_true",
                        help="only the live panels' slider moves: --runs loads of each page per site (sites interleaved), "
                             "--moves moves after each; no load timing, bare boot, lab run or sizes")
    parser.add_argument("--links", nargs="+", choices=("fast", "slow"), default=["fast", "slow"],
                        help="fast: loads, slider and lab as before; slow: first answer cold and warm on the slow link "
                             "(default: both)")
    parser.add_argument("--identity-too", action="store_true",
                        help="also measure each site served as its files are (no precompressed copies), interleaved")
    parser.add_argument("--chromium-arg", action="append", default=[], metavar="SWITCH",
                        help="an extra Chromium switch for a probe, such as --chromium-arg=--js-flags=--no-wasm-tier-up "
                             "(repeatable; applies to every site measured)")
    args = parser.parse_args(argv)
    EXTRA_CHROMIUM_ARGS[:] = args.chromium_arg
    tmp = None
    sites = args.site
    if not sites:
        tmp = tempfile.TemporaryDirectory(prefix="kvlab-site-bench-")
        sites = [Path(tmp.name) / "site"]
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "kvlab", "build-site", "--out", str(sites[0])], cwd=ROOT, check=True,
                       capture_output=True)
        print(f"built the site in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    infos = [json.loads((site / "build-info.json").read_text()) for site in sites]
    names = [[p["name"] for p in info["pages"]] for info in infos]
    pages = [(p["name"], ("lab" if p["name"] == "serving_lab" else True) if p["bridge"] == "panel" else False)
             for p in infos[0]["pages"] if (not args.pages or p["name"] in args.pages) and all(p["name"] in n for n in names)]
    load = os.getloadavg()
    if args.slider_only:
        all_figures = measure_sliders(sites, pages, args.runs, args.moves)
        print(f"\nkvlab site_load v{METHOD_VERSION}, slider only: {args.runs} loads x {args.moves} moves per page and site")
        if EXTRA_CHROMIUM_ARGS:
            print(f"Chromium switches added for this probe: {' '.join(EXTRA_CHROMIUM_ARGS)}")
        for site, figures in zip(sites, all_figures, strict=True):
            for name, f in figures["pages"].items():
                for line in _slider_lines(f):
                    print(f"{str(site):<32} {name:<10} {line}")
                print(f"{str(site):<32} {name:<10} load average before each load {', '.join(f'{x:.2f}' for x in f['load_1min'])}")
        print("load average (1, 5, 15 min) at start and end: " + "; ".join(", ".join(f"{x:.2f}" for x in la)
                                                                           for la in (load, os.getloadavg())))
        if args.json:
            args.json.write_text(json.dumps(all_figures, indent=2))
        if tmp is not None:
            tmp.cleanup()
        return 0
    packed = [True] * len(sites)
    if args.identity_too:
        sites, infos, packed = sites + sites, infos + infos, packed + [False] * len(sites)
    all_figures = measure_sites(sites, pages, args.runs, args.moves, args.lab_runs, tuple(args.links), packed)
    end_load = os.getloadavg()
    for site, info, figures, copies in zip(sites, infos, all_figures, packed, strict=True):
        figures["load_average"] = [load, end_load]
        figures["site_bytes"], figures["copy_bytes"] = site_bytes(site)
        figures["method_version"] = METHOD_VERSION
        figures["site"] = str(site)
        figures["precompressed_served"] = copies
        figures["label"] = str(site) + ("" if copies else " served as its files are (no precompressed copies)")
        _report(site, info, figures, args.runs)
    print("load average (1, 5, 15 min) at start and end: " + "; ".join(", ".join(f"{x:.2f}" for x in la)
                                                                       for la in (load, end_load)))
    figures = all_figures[0] if len(all_figures) == 1 else {"sites": all_figures}
    if args.old_build:
        figures["old_build"] = old_build_downloads(args.old_build)
        print("\nold pyodide-worker build, per page (before the first slider answers):")
        for name, f in figures["old_build"].items():
            print(f"  {name}: {f['files']} downloads, {f['known_bytes'] / 1e6:.1f} MB in files of known size, "
                  f"+ {f['unknown_size']} packages whose size is not known offline")
        first = next(iter(figures["old_build"].values()))
        print("  downloads of one page:")
        for url, size in first["items"]:
            print(f"    {url}  {size / 1e6:.2f} MB" if size else f"    {url}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
