"""The built static site: it builds offline, names the right versions and hosts, packs kvlab's wheels."""

from __future__ import annotations

import hashlib
import json
import re
import zipfile

import pytest
from kvlab.app.build_site import DEFAULT_PAGE_GLOBS, MARKER_FILE, discover_pages, packed_wheels, site_versions
from kvlab.app.site_shell import TemplateChanged, patch_worker
from kvlab.app.site_wheel import APP_WHEEL, BUILD_ONLY, SIM_WHEEL, build_wheel
from kvlab.sim import model_ids

from tests.pyodide import harness
from tests.site.conftest import FIXTURE_PAGES, build_offline, build_site

URL = re.compile(r"""https?://[^\s"'`)<>\\]+""")


@pytest.fixture(scope="module")
def versions() -> dict:
    return site_versions()


@pytest.fixture(scope="module")
def info(cdn_site) -> dict:
    return json.loads((cdn_site[0] / "build-info.json").read_text())


def _worker(cdn_site) -> str:
    return (cdn_site[0] / "hello_kv.js").read_text()


def _micropip_list(worker_js: str) -> list[str]:
    m = re.search(r"micropip\.install\(\[(.*?)\]\)", worker_js)
    assert m, "the worker has no micropip.install([...]) call"
    return re.findall(r"'([^']+)'", m.group(1))


def test_build_needs_no_network(cdn_site):
    out, offline = cdn_site
    if not offline:
        pytest.skip("cannot create a network namespace here (unshare -n), so the build ran with the network present")
    assert (out / "hello_kv.html").is_file() and (out / "build-info.json").is_file()


def test_site_layout(cdn_site, info):
    out = cdn_site[0]
    for name in ("hello_kv.html", "hello_kv.js", "hello_kv.resources.zip", "index.html", "pages.html",
                 "assets/kvlab-loader.js", "assets/kvlab-site.css", MARKER_FILE):
        assert (out / name).is_file(), f"{name} missing from the built site"
    assert [p["name"] for p in info["pages"]] == ["hello_kv"], "not_a_page.py publishes nothing and must be skipped"
    assert info["pages"][0]["title"] == "Hello KV page", "the index uses the title the page gives itself"
    assert '<a href="./hello_kv.html">Hello KV page</a>' in (out / "index.html").read_text()


def test_real_site_builds_offline_with_every_page(tmp_path):
    """`kvlab build-site` as a user runs it, on the real panels and lessons: every discovered page
    converted, patched, and installing kvlab from its zip."""
    out, offline = build_offline(tmp_path / "static")
    info = json.loads((out / "build-info.json").read_text())
    expected = [p.name for p in discover_pages(DEFAULT_PAGE_GLOBS)]
    assert expected, "no real pages found"
    assert [p["name"] for p in info["pages"]] == expected
    listing = (out / "pages.html").read_text()
    assert listing.count("http") == 0, "the page list must work with no network at all"
    for page in info["pages"]:
        worker, page_html = (out / page["worker"]).read_text(), (out / page["html"]).read_text()
        assert 'kvlabFail("packages", e)' in worker and "KVLAB_PYODIDE_URL" in worker, page["name"]
        assert "assets/kvlab-loader.js" in page_html, page["name"]
        specs = _micropip_list(worker)
        assert sorted(s for s in specs if s.startswith("emfs:")) == sorted(f"emfs:packed_wheels/{w}" for w in info["wheels"])
        assert sorted(packed_wheels(out / page["resources"])) == sorted(info["wheels"])
        assert f'<a href="./{page["html"]}">' in listing
    assert (out / "index.html").is_file()
    if not offline:
        pytest.skip("built, but with the network present (unshare -n is not available here)")


def test_pages_load_the_versions_installed_here(cdn_site, info, versions):
    out, page = cdn_site[0], (cdn_site[0] / "hello_kv.html").read_text()
    worker = _worker(cdn_site)
    pyodide = versions["pyodide"]
    assert info["pyodide_version"] == pyodide
    assert f'const KVLAB_PYODIDE_URL = "https://cdn.jsdelivr.net/pyodide/v{pyodide}/full/pyodide.js"' in worker
    srcs = re.findall(r'<script[^>]*\bsrc="([^"]+)"', page)
    assert f"https://cdn.bokeh.org/bokeh/release/bokeh-{versions['bokeh']}.min.js" in srcs
    assert f"https://cdn.holoviz.org/panel/{versions['panel']}/dist/panel.min.js" in srcs
    wheels = _micropip_list(worker)
    assert f"https://cdn.holoviz.org/panel/{versions['panel']}/dist/wheels/panel-{versions['panel']}-py3-none-any.whl" in wheels
    assert f"https://cdn.holoviz.org/panel/wheels/bokeh-{versions['bokeh']}-py3-none-any.whl" in wheels
    # Every outside URL the page or worker names is one of the three CDNs the docs list.
    hosts = {u.split("/")[2] for u in URL.findall(page + worker) if "w3.org" not in u}
    assert hosts <= {"cdn.jsdelivr.net", "cdn.bokeh.org", "cdn.holoviz.org"}, hosts
    assert f'data-pyodide-version="{pyodide}"' in page
    assert (out / "index.html").read_text().count("http") == 0, "the page list must work with no network at all"


def test_site_pyodide_is_the_one_the_tests_run(versions):
    """tests/pyodide proves sim under the `site` runtime: it must be the release Panel's pages load."""
    rt = harness.runtime("site")
    if rt is None:
        pytest.skip(harness.missing_reason("site"))
    assert rt.version == versions["pyodide"], (f"tests/pyodide/package.json pins pyodide-panel to {rt.version} but Panel "
                                               f"{versions['panel']} loads {versions['pyodide']}: update the npm alias")


def test_kvlab_is_installed_from_packed_wheels_not_pypi(cdn_site, info):
    out = cdn_site[0]
    packed = packed_wheels(out / "hello_kv.resources.zip")
    assert sorted(packed) == sorted(info["wheels"])
    for name, data in packed.items():
        assert hashlib.sha256(data).hexdigest() == info["wheels"][name]["sha256"]
    specs = _micropip_list(_worker(cdn_site))
    for name in packed:
        assert f"emfs:packed_wheels/{name}" in specs
    names = {s for s in specs if "/" not in s and ":" not in s}  # what micropip would look up by name
    assert not names & {"kvlab", "sim", "app", "lessons", "kvlab_sim", "kvlab_app"}, names
    assert "pyodide-http" not in specs, "no page makes HTTP requests from Python; the patch would cost a PyPI lookup"


def test_packed_sim_wheel_is_the_reproducible_sim_only_wheel(cdn_site, tmp_path):
    fresh = build_wheel(SIM_WHEEL, tmp_path)
    packed = packed_wheels(cdn_site[0] / "hello_kv.resources.zip")[fresh.name]
    assert packed == fresh.read_bytes(), "the same sources must give the same wheel bytes"
    with zipfile.ZipFile(fresh) as zf:
        names = zf.namelist()
    assert "kvlab/__init__.py" in names
    assert all(n.startswith(("kvlab/sim/", "kvlab_sim-")) or n == "kvlab/__init__.py" for n in names), names[:5]
    assert "kvlab/sim/data/gpus.json" in names
    assert {f"kvlab/sim/data/models/{m}.json" for m in model_ids()} <= set(names)
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)


def test_app_wheel_leaves_out_build_time_files(tmp_path):
    with zipfile.ZipFile(build_wheel(APP_WHEEL, tmp_path)) as zf:
        names = zf.namelist()
    rel = [n.removeprefix("kvlab/") for n in names]
    assert not [n for n in rel if any(n == b or (b.endswith("/") and n.startswith(b)) for b in BUILD_ONLY)]
    assert all(n.startswith(("kvlab/app/", "kvlab/lessons/", "kvlab_app-")) for n in names)
    assert "kvlab/__init__.py" not in names, "the sim wheel carries the namespace's __init__; two copies would clash"
    meta = next(n for n in names if n.endswith("METADATA"))
    with zipfile.ZipFile(build_wheel(APP_WHEEL, tmp_path)) as zf:
        assert "Requires-Dist" not in zf.read(meta).decode(), "a declared dependency would send micropip to PyPI"


def test_pages_know_they_are_prerendered_for_the_static_site(cdn_site):
    assert "static site: True" in (cdn_site[0] / "hello_kv.html").read_text()


def test_page_discovery_is_by_glob():
    pages = discover_pages((FIXTURE_PAGES,))
    assert [p.name for p in pages] == ["hello_kv"]
    assert pages[0].summary == "Hello KV"


def test_hosts_can_be_moved_for_firewalled_classrooms(tmp_path):
    out = tmp_path / "site"
    proc = build_site(out, "--pages", FIXTURE_PAGES, "--wheels-url", "https://mirror.school.example/wheels/",
                      "--panel-cdn-root", "https://mirror.school.example/panel", "--pyodide-url",
                      "https://mirror.school.example/pyodide/v0.29.3/full/pyodide.js")
    assert proc.returncode == 0, proc.stderr
    page, worker = (out / "hello_kv.html").read_text(), (out / "hello_kv.js").read_text()
    assert "cdn.holoviz.org" not in page + worker and "cdn.jsdelivr.net" not in worker
    specs = _micropip_list(worker)
    assert f"https://mirror.school.example/wheels/panel-{site_versions()['panel']}-py3-none-any.whl" in specs
    assert 'KVLAB_PYODIDE_URL = "https://mirror.school.example/pyodide/v0.29.3/full/pyodide.js"' in worker
    assert "https://mirror.school.example/panel/" in page


@pytest.mark.parametrize(("options", "exit_code", "message"), [
    (["--pyodide-url", "ftp://example.org/pyodide.js"], 2, "--pyodide-url: must be an http(s) URL"),
    (["--pyodide-dir", "/nonexistent/pyodide"], 2, "--pyodide-dir: /nonexistent/pyodide is not a folder"),
    (["--pages", "tests/site/fixtures/nothing/*.py"], 1, "no pages found"),
    (["--pages", "tests/site/fixtures/broken/*.py"], 1, "this fixture page fails on purpose"),
])
def test_bad_options_get_a_clear_message(tmp_path, options, exit_code, message):
    proc = build_site(tmp_path / "site", *options)
    assert proc.returncode == exit_code
    assert message in proc.stderr
    assert "Traceback (most recent call last)" not in proc.stderr.split(message)[0]


def test_broken_page_names_the_file(tmp_path):
    proc = build_site(tmp_path / "site", "--pages", "tests/site/fixtures/broken/*.py")
    assert "broken_page.py failed under CPython" in proc.stderr


def test_pyodide_dir_must_match_the_release_panel_loads(tmp_path):
    rt = harness.runtime("newest")
    if rt is None:
        pytest.skip(harness.missing_reason("newest"))
    proc = build_site(tmp_path / "site", "--pages", FIXTURE_PAGES, "--pyodide-dir", str(rt.path))
    assert proc.returncode == 1
    assert f"--pyodide-dir: {rt.path} holds Pyodide {rt.version}" in proc.stderr


def test_failed_build_leaves_the_previous_site_in_place(tmp_path):
    out = tmp_path / "site"
    assert build_site(out, "--pages", FIXTURE_PAGES).returncode == 0
    before = (out / "hello_kv.html").read_text()
    proc = build_site(out, "--pages", "tests/site/fixtures/broken/*.py")
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


def test_worker_patch_fails_loudly_when_panel_changes_its_template():
    with pytest.raises(TemplateChanged, match="importScripts"):
        patch_worker("self.onmessage = () => {}\nstartApplication()\n", "./pyodide/pyodide.js")
