"""`kvlab build-site` as a user runs it: offline, every resource inside the site, one copy of each
wheel, world-readable files, clear next steps, and a clear message for every bad option."""

from __future__ import annotations

import json
import re
import stat
import zipfile

import pytest
from kvlab.app.site.assets import PYODIDE_FILES, PYODIDE_VERSION, SHARED_PAGE_SCRIPTS
from kvlab.app.site.compress import is_sibling, original_files, site_bytes
from kvlab.app.site.discover import DEFAULT_PAGE_GLOBS, LIVE_PAGES, discover_pages
from kvlab.app.site.pack import unpacked_documents
from kvlab.app.site.wheels import ROOT, SIM_WHEEL, VIEW_WHEEL, build_wheel

from devtools import pyodide as harness
from tests.site.conftest import FIXTURE_PAGES, build_site

PAGES = discover_pages(DEFAULT_PAGE_GLOBS)


def test_build_needs_no_network_and_says_what_to_do_next(real_site):
    out, proc, offline = real_site
    if not offline:
        pytest.skip("this machine cannot make an empty network namespace (unshare -n)")
    assert "python -m http.server" in proc.stdout
    assert "file://" in proc.stdout and "will not work" in proc.stdout


def test_every_page_is_built_in_both_themes(real_site):
    out, _, _ = real_site
    info = json.loads((out / "build-info.json").read_text())
    assert {p["name"] for p in info["pages"]} == {p.name for p in PAGES}
    for page in PAGES:
        assert (out / f"{page.name}.html").is_file() and (out / f"{page.name}.dark.html").is_file()
    live = {p["name"] for p in info["pages"] if p["bridge"] == "panel"}
    assert live == set(LIVE_PAGES)


def test_no_page_names_another_host(real_site):
    """Every script, stylesheet, icon and model stylesheet the pages name is a file of the site (the
    model stylesheets are named in the pages' packed Bokeh documents)."""
    out, _, _ = real_site
    for page in sorted(out.glob("*.html")):
        html_text = page.read_text()
        docs = unpacked_documents(html_text)
        assert docs or page.name == "pages.html", f"{page.name} holds no Bokeh document"
        text = html_text + "".join(docs)
        assert "cdn.bokeh.org" not in text and "cdn.holoviz.org" not in text, page.name
        urls = re.findall(r'(?:src|href)="(\./[^"?#]+)', html_text) + [u for d in docs for u in re.findall(r'"url":"(\./[^"?#]+)"', d)]
        assert any(u.endswith(".css") for u in urls) or page.name == "pages.html", page.name  # the documents' stylesheets were read
        for url in urls:
            assert (out / url[2:]).is_file(), f"{page.name} names {url}, which the site lacks"


def test_pyodide_core_and_one_copy_of_each_wheel(real_site):
    out, _, _ = real_site
    info = json.loads((out / "build-info.json").read_text())
    if not info["pyodide_self_hosted"]:
        pytest.skip(harness.missing_reason("newest"))
    assert info["pyodide_version"] == PYODIDE_VERSION
    assert sorted(p.name for p in (out / "pyodide").iterdir() if not is_sibling(p)) == sorted(PYODIDE_FILES)
    assert sorted(p.name for p in out.rglob("*.whl")) == sorted(info["wheels"])  # one copy, shared by every page


SITE_BYTES_MAX = 30_000_000  # issue 9: the whole site (every page in both themes, Pyodide's core) within 30 MB


def test_whole_site_is_within_30_mb(real_site):
    """The bound counts the files a browser may be sent as they are, every one of them; the
    precompressed copies beside them (F.gz, F.br) are counted apart: a host sends one form of a
    file, never more, and a host that ignores the copies sends the originals."""
    out, _, _ = real_site
    size = sum(p.stat().st_size for p in original_files(out))
    assert size <= SITE_BYTES_MAX, f"the site is {size / 1e6:.1f} MB"
    info = json.loads((out / "build-info.json").read_text())
    originals, copies = site_bytes(out)
    assert (info["site_bytes"], info["precompressed"]["sibling_bytes"]) == (originals - (out / "build-info.json").stat().st_size, copies)
    assert size > 20_000_000  # Pyodide's core and the snapshot, at least: the count has not lost the originals


def test_pages_name_the_template_scripts_and_hold_no_copy(real_site):
    """The page template's scripts (a11y.js, bokeh_paint.js) are shipped once in kvlab/, as written
    in app/templates, and every page names them instead of holding its own copy (9.4 KB a page).
    The visit in test_site_in_browser.py sees every page load them without a console error."""
    from kvlab.app.shell.a11y import TEMPLATES, inline_script

    out, _, _ = real_site
    for script in SHARED_PAGE_SCRIPTS:
        assert (out / "kvlab" / script).read_bytes() == (TEMPLATES / script).read_bytes()
        for page in sorted(out.glob("*.html")):
            if page.name == "pages.html":  # the plain list: no Bokeh, no template
                continue
            text = page.read_text(encoding="utf-8")
            assert text.count(f'<script src="./kvlab/{script}"></script>') == 1, (page.name, script)
            assert inline_script(script) not in text, (page.name, script)


def test_pages_carry_no_css_comment(real_site):
    """kvlab's stylesheets explain their rules in comments that stay in the source
    (app.html.shipped_css): 125 KB of the site when every page carried them."""
    out, _, _ = real_site
    commented = [p.name for p in sorted(out.glob("*.html")) if re.search(r"/\*.*?\*/", p.read_text(encoding="utf-8"), re.S)]
    assert not commented


def test_no_file_defines_a_bokeh_css_variable(real_site):
    """app/templates/bokeh_paint.js answers BokehJS's lookups of --bk-* CSS properties with "" without
    asking the browser: true only while no stylesheet, page or script of the site can set one. Only
    BokehJS's own bundle may name the prefix (where it looks them up)."""
    out, _, _ = real_site
    naming = sorted(str(p.relative_to(out)) for p in out.rglob("*")
                    if p.is_file() and p.suffix in (".html", ".css", ".js", ".mjs") and b"--bk-" in p.read_bytes())
    assert naming == ["vendor/bokeh/" + p.name for p in sorted((out / "vendor" / "bokeh").glob("bokeh-3*.min.js"))]


def test_pages_name_only_the_bokehjs_bundles_their_models_need(real_site):
    """Panel names every BokehJS bundle; the build drops bokeh-gl (no page has a WebGL plot) and
    bokeh-mathjax (no page has TeX in a text), and keeps bokeh-widgets and bokeh-tables, which
    panel.min.js needs; the site holds exactly the bundles its pages name."""
    out, _, _ = real_site
    named = set()
    for page in sorted(out.glob("*.html")):
        bundles = set(re.findall(r'src="\./vendor/bokeh/(bokeh(?:-[a-z]+)?-[\d.]+\.min\.js)"', page.read_text()))
        if page.name != "pages.html":
            assert {re.sub(r"-[\d.]+\.min\.js$", "", b) for b in bundles} == {"bokeh", "bokeh-widgets", "bokeh-tables"}, page.name
        named |= bundles
    assert sorted(p.name for p in (out / "vendor" / "bokeh").iterdir() if not is_sibling(p)) == sorted(named)


def test_site_pyodide_is_the_one_the_build_and_the_tests_pin():
    """app/site/package.json is what `kvlab build-site` copies (and the tests' "newest" runtime, devtools/pyodide.py)."""
    assert json.loads((ROOT / "app" / "site" / "package.json").read_text())["dependencies"]["pyodide"] == PYODIDE_VERSION
    assert harness.RUNTIME_DIRS["newest"] == ROOT / "app" / "site" / "node_modules" / "pyodide"


def test_files_are_world_readable(real_site):
    out, _, _ = real_site
    for path in [out, *out.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o004, f"{path} is not readable by others ({oct(mode)})"
        if path.is_dir():
            assert mode & 0o001, f"{path} cannot be entered by others"


def test_view_wheel_holds_the_view_layer_and_no_panel_code(tmp_path):
    with zipfile.ZipFile(build_wheel(VIEW_WHEEL, tmp_path)) as zf:
        names = zf.namelist()
    assert "kvlab/app/viewlayer/pages.py" in names
    assert not [n for n in names if n.startswith("kvlab/app/views/") or n.endswith(("panels.py", "store.py", "build_site.py"))]
    assert not [n for n in names if n.startswith("kvlab/sim/")]  # sim comes in its own wheel, once


def test_sim_wheel_is_reproducible(tmp_path):
    a = build_wheel(SIM_WHEEL, tmp_path / "a").read_bytes()
    b = build_wheel(SIM_WHEEL, tmp_path / "b").read_bytes()
    assert a == b


def test_page_discovery_is_by_glob():
    names = {p.name for p in PAGES}
    assert {"index", "admission", "phases", "serving_lab"} <= names
    assert [p.name for p in discover_pages((FIXTURE_PAGES,))] == ["hello_kv"]  # not_a_page.py publishes nothing


@pytest.mark.parametrize("options, message", [
    (["--pyodide-dir", "/nonexistent"], "--pyodide-dir: /nonexistent is not a folder"),
    (["--pyodide-dir", "/tmp", "--pyodide-cdn"], "not allowed with argument"),
])
def test_bad_options_get_a_clear_message(tmp_path, options, message):
    proc = build_site(tmp_path / "site", *options)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_broken_page_names_the_file(tmp_path):
    proc = build_site(tmp_path / "site", "--pages", "tests/site/fixtures/broken/*.py", "--pyodide-cdn")
    assert proc.returncode == 1
    assert "broken_page.py failed under CPython" in proc.stderr


def test_without_its_pyodide_the_build_stops_and_says_what_to_run(tmp_path, monkeypatch, capsys):
    """No silent CDN fallback: with app/site's npm package absent, the build names the command that
    installs it (or --pyodide-cdn) and writes nothing."""
    from kvlab.app.site import assets, cli

    monkeypatch.setattr(assets, "PYODIDE_NPM_DIR", tmp_path / "no-node-modules" / "pyodide")
    assert cli.main(["--out", str(tmp_path / "site"), "--pages", FIXTURE_PAGES]) == 1
    err = capsys.readouterr().err
    assert f"Pyodide {PYODIDE_VERSION} (npm package `pyodide`) is not installed at {tmp_path / 'no-node-modules'}" in err
    assert f"run `npm ci --prefix {ROOT / 'app' / 'site'}` (scripts/test runs it), or pass --pyodide-cdn" in err
    assert not (tmp_path / "site").exists()


def test_pyodide_dir_must_be_the_pinned_release(tmp_path):
    rt = harness.runtime("site")  # the other npm Pyodide (Panel's pin), not the one the site runs
    if rt is None:
        pytest.skip(harness.missing_reason("site"))
    proc = build_site(tmp_path / "site", "--pages", FIXTURE_PAGES, "--pyodide-dir", str(rt.path))
    assert proc.returncode == 1
    assert "--pyodide-dir" in proc.stderr


def test_failed_build_leaves_the_previous_site_in_place(tmp_path):
    out = tmp_path / "site"
    assert build_site(out, "--pages", FIXTURE_PAGES, "--pyodide-cdn").returncode == 0
    before = (out / "hello_kv.html").read_text()
    proc = build_site(out, "--pages", "tests/site/fixtures/broken/*.py", "--pyodide-cdn")
    assert proc.returncode == 1
    assert (out / "hello_kv.html").read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["site"], "the staging folder must be cleaned up"


def test_refuses_to_replace_a_folder_it_did_not_write(tmp_path):
    out = tmp_path / "precious"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    proc = build_site(out, "--pages", FIXTURE_PAGES)
    assert proc.returncode == 1 and "--out:" in proc.stderr
    assert (out / "notes.txt").read_text() == "keep me"


def test_bundles_follow_the_models_and_tex_keeps_mathjax():
    from bokeh.document import Document
    from bokeh.models import Div
    from kvlab.app.site.document import unneeded_bokeh_bundles
    from panel.models.markup import HTML

    def unneeded(*models) -> list[str]:
        doc = Document()
        for m in models:
            doc.add_root(m)
        return unneeded_bokeh_bundles(doc)

    assert unneeded(HTML(text="<p>2 GiB at $3/h</p>")) == ["bokeh-gl", "bokeh-mathjax"]
    assert unneeded(HTML(text=r"<p>\(n_{kv}\)</p>")) == ["bokeh-gl"]
    assert unneeded(HTML(text="$$x$$", disable_math=True)) == ["bokeh-gl", "bokeh-mathjax"]
    assert unneeded(Div(text=r"\[x\]")) == ["bokeh-gl"]


def test_equal_stylesheets_become_one_shared_model():
    from bokeh.document import Document
    from bokeh.models import Column, Div, ImportedStyleSheet, InlineStyleSheet
    from kvlab.app.site.document import share_stylesheets

    imported = ImportedStyleSheet(url="./x.css")
    a, b = Div(stylesheets=[":host { color: red; }", imported]), Div(stylesheets=[":host { color: red; }", "p { margin: 0; }"])
    doc = Document()
    doc.add_root(Column(children=[a, b]))
    assert share_stylesheets(doc) == 2
    assert a.stylesheets[0] is b.stylesheets[0] and isinstance(a.stylesheets[0], InlineStyleSheet)
    assert a.stylesheets[0].css == ":host { color: red; }" and a.stylesheets[1] is imported
    assert b.stylesheets[1].css == "p { margin: 0; }"


def test_pages_that_run_python_load_the_boot_script_before_bokehjs(real_site):
    """kvlab-boot.js starts a live panel's worker from the <head>, before the 2.5 MB of BokehJS and
    Panel are parsed; it comes after <meta charset>, which must stay in a page's first 1024 bytes."""
    out, _, _ = real_site
    info = json.loads((out / "build-info.json").read_text())
    for page in info["pages"]:
        for name in (page["html"], page["dark"]):
            text = (out / name).read_text()
            assert "<meta charset" in text[:1024], name
            bridge = re.search(r'<script src="\./kvlab/kvlab-bridge\.js"[^>]* data-bridge="(\w+)"', text)[1]
            runs_python = bridge in ("panel", "lesson")  # a live panel, or a lesson with live views
            assert ("kvlab/kvlab-boot.js" in text) == runs_python, name
            if runs_python:
                assert text.index("kvlab/kvlab-boot.js") < text.index("vendor/bokeh/bokeh-"), name


def test_a_collapsed_cards_contents_wait_in_the_document_until_it_opens():
    from bokeh.document import Document
    from bokeh.models import Column, CustomJS, Div
    from kvlab.app.site.document import OPEN_DEFERRED_CARD_JS, defer_collapsed_cards
    from panel.models.layout import Card

    def card(collapsed: bool, name: str) -> Card:
        return Card(children=[Div(text="header"), Div(text="a", name=f"{name}.a"), Div(text="b", name=f"{name}.b")],
                    collapsed=collapsed)

    shut, open_, header_only = card(True, "shut"), card(False, "open"), Card(children=[Div(text="h")], collapsed=True)
    doc = Document()
    doc.add_root(Column(children=[shut, open_, header_only]))
    contents = shut.children[1:]
    assert defer_collapsed_cards(doc) == 1
    assert len(shut.children) == 1 and len(open_.children) == 3 and len(header_only.children) == 1
    (callback,) = shut.js_property_callbacks["change:collapsed"]
    assert isinstance(callback, CustomJS) and callback.code == OPEN_DEFERRED_CARD_JS
    assert callback.args["contents"] == contents and callback.args["card"] is shut
    # Still in the document, so the bridge finds them by name (and the saved page carries them).
    assert doc.get_model_by_name("shut.a") is contents[0] and doc.get_model_by_name("shut.b") is contents[1]
    assert not open_.js_property_callbacks


def test_a_later_sections_contents_wait_in_its_tags_until_the_page_is_up():
    from bokeh.document import Document
    from bokeh.models import Column, CustomJS, Div
    from kvlab.app.shell.page import LATER_CLASS
    from kvlab.app.site.discover import BuildError
    from kvlab.app.site.document import BUILD_LATER_SECTIONS_JS, defer_later_sections

    first = Column(children=[Div(text="tiles", name="tiles")])
    lower = [Column(children=[Div(text=f"s{i}", name=f"s{i}.a"), Div(text="b")], css_classes=[LATER_CLASS]) for i in range(2)]
    doc = Document()
    doc.add_root(Column(children=[first, *lower]))
    contents = [list(s.children) for s in lower]
    assert defer_later_sections(doc) == 2
    assert len(first.children) == 1 and all(s.children == [] for s in lower)
    assert [s.tags for s in lower] == contents
    (callback,) = doc.callbacks.js_event_callbacks["document_ready"]
    assert isinstance(callback, CustomJS) and callback.code == BUILD_LATER_SECTIONS_JS
    assert callback.args["sections"] == lower  # in page order, the order they come back in
    # Still in the document's index, so the bridge finds them by name.
    assert doc.get_model_by_name("s0.a") is contents[0][0] and doc.get_model_by_name("s1.a") is contents[1][0]
    tagged = Document()
    tagged.add_root(Column(children=[Div()], css_classes=[LATER_CLASS], tags=["mine"]))
    with pytest.raises(BuildError, match="tags of its own"):
        defer_later_sections(tagged)


def test_compressible_files_have_precompressed_copies(real_site):
    """Beside each file a browser gets compressible, its gzip and brotli copies (app/site/compress.py),
    each decoding to the file; the snapshot's brotli copy decodes to its memory (the gzip file's
    content), which the worker takes as it is. Zips and wheels get none. The build says so."""
    import gzip
    import shutil
    import subprocess

    out, proc, _ = real_site
    info = json.loads((out / "build-info.json").read_text())
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js makes the brotli copies")

    def unbrotli(path) -> bytes:
        script = "process.stdout.write(require('zlib').brotliDecompressSync(require('fs').readFileSync(process.argv[1])))"
        return subprocess.run([node, "-e", script, str(path)], capture_output=True, check=True, timeout=120).stdout

    bokeh = next(p.name for p in (out / "vendor" / "bokeh").glob("bokeh-3*.min.js"))
    named = ["admission.html", "kvlab/kvlab-worker.mjs", f"vendor/bokeh/{bokeh}"]
    if info["pyodide_self_hosted"]:
        named.append("pyodide/pyodide.asm.wasm")
    for name in named:
        data = (out / name).read_bytes()
        assert gzip.decompress((out / f"{name}.gz").read_bytes()) == data and unbrotli(out / f"{name}.br") == data, name
    for page in out.glob("*.html"):
        assert (out / f"{page.name}.gz").is_file() and (out / f"{page.name}.br").is_file(), page.name
    if info["snapshot"]:  # gzip files the worker also reads decoded: their brotli copies hold what they decode to
        for name in filter(None, (info["snapshot"]["file"], info["snapshot"]["stdlib"], info["lab_opening"])):
            assert unbrotli(out / f"{name}.br") == gzip.decompress((out / name).read_bytes()), name
            assert not (out / f"{name}.gz").exists(), name
    assert not [p for p in out.rglob("*") if is_sibling(p) and p.with_suffix("").suffix in (".whl", ".zip", ".png")]
    packed = info["precompressed"]
    pages = len(list(out.glob("*.html")))
    for coding, suffix in (("gzip", ".gz"), ("br", ".br")):
        assert packed[f"{coding}_files"] == sum(1 for p in out.rglob(f"*{suffix}") if is_sibling(p)) > pages
    br = [p for p in out.rglob("*.br") if is_sibling(p)]
    assert sum(p.stat().st_size for p in br) < sum(p.with_suffix("").stat().st_size for p in br) / 2  # 0.42 on 4 December
    assert "precompressed copies" in proc.stdout
