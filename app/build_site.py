"""`kvlab build-site`: write the static Pyodide site into ./site (or --out).

    kvlab build-site                              # CDN for Pyodide, Panel and Bokeh (the default)
    kvlab build-site --pyodide-dir DIR --inline   # Pyodide and the JavaScript served from the site itself
    kvlab build-site --help

What it does, in order:
1. Finds the pages: every app/pages/*.py and lessons/*.py that calls `.servable(` (by glob, so
   new pages need no registration here).
2. Runs each page once under CPython, so a broken page stops the build with its traceback.
3. Writes kvlab's own code as two pure wheels (app/site_wheel.py): `kvlab_sim` and `kvlab_app`.
4. Converts each page with Panel's `convert_app` to the pyodide-worker runtime: a pre-rendered
   view plus a worker that loads Pyodide, installs Panel and Bokeh from their CDN and numpy from
   Pyodide's, and installs the two kvlab wheels from a zip packed next to the page (no PyPI).
5. Patches each page for graceful degradation (app/site_shell.py), rewrites hosts when asked,
   copies the assets, writes the index (unless a page is itself called `index`), pages.html and
   build-info.json (versions, URLs, wheel hashes: what tests/site checks).

Nothing here needs the network: the build is offline; only the reader's browser fetches from CDNs.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import html
import io
import json
import os
import re
import shutil
import sys
import tempfile
import zipfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from kvlab.app.site_shell import TemplateChanged, patch_page, patch_worker, rewrite, worker_pyodide_url
from kvlab.app.site_wheel import APP_WHEEL, ROOT, SIM_WHEEL, build_wheel, kvlab_version, package_files

# The current folder, never the package: an installed kvlab must not write into site-packages.
DEFAULT_OUT = Path("site")
DEFAULT_PAGE_GLOBS = ("app/pages/*.py", "lessons/*.py")
ASSETS_DIR = Path(__file__).resolve().parent / "site_assets"
OWN_PACKAGES = frozenset({"kvlab"})
INFO_FILE = "build-info.json"
# Written first, so a folder left by a failed build is still recognised as ours and replaced.
MARKER_FILE = ".kvlab-site"
# Files of a Pyodide distribution the browser never asks for.
PYODIDE_SKIP = ("*.map", "*.d.ts", "*.html", "README*", "package.json", "node_modules")


class BuildError(RuntimeError):
    """A build problem the user can fix; the message names the option or page."""


@dataclass(frozen=True)
class Page:
    source: Path
    name: str  # output file stem: NAME.html, NAME.js
    title: str  # the page's own title once it has run (Document.title), else from the docstring
    summary: str  # the docstring's first line, up to a colon
    group: str  # "panel" or "lesson"


@dataclass(frozen=True)
class SiteOptions:
    out_dir: Path = DEFAULT_OUT
    page_globs: tuple[str, ...] = DEFAULT_PAGE_GLOBS
    pyodide_url: str | None = None  # None: Panel's CDN URL for the Pyodide it pins
    pyodide_dir: Path | None = None
    wheels_url: str | None = None
    panel_cdn_root: str | None = None
    inline: bool = False
    title: str = "kvlab"


@dataclass(frozen=True)
class SiteReport:
    out_dir: Path
    pages: tuple[Page, ...]
    info: dict = field(repr=False)


def site_versions() -> dict:
    """Versions the built pages load: Pyodide as pinned by the installed Panel, Panel, Bokeh."""
    import bokeh
    import panel
    from panel.io import convert

    return {"pyodide": convert.PYODIDE_VERSION.lstrip("v"), "panel": panel.__version__, "bokeh": bokeh.__version__,
            "pyodide_cdn_url": convert.PYODIDE_URL, "panel_wheel_url": convert.PANEL_CDN_WHL,
            "bokeh_wheel_url": convert.BOKEH_CDN_WHL, "panel_cdn_root": convert.CDN_ROOT}


def _docstring_head(source: str) -> str:
    try:
        doc = ast.get_docstring(ast.parse(source)) or ""
    except SyntaxError:
        doc = ""
    first = doc.strip().splitlines()[0].strip() if doc.strip() else ""
    return first.split(":")[0].strip().rstrip(".")


def discover_pages(globs: tuple[str, ...] = DEFAULT_PAGE_GLOBS, root: Path = ROOT) -> list[Page]:
    """Pages are scripts that publish something with `.servable(`; helpers beside them are skipped."""
    pages: dict[str, Page] = {}
    for pattern in globs:
        base = Path(pattern)
        matches = sorted(base.parent.glob(base.name)) if base.is_absolute() else sorted(root.glob(pattern))
        for path in matches:
            source = path.read_text(encoding="utf-8")
            if path.name.startswith("_") or ".servable(" not in source:
                continue
            if path.stem in pages:
                raise BuildError(f"two pages would both be written as {path.stem}.html: {pages[path.stem].source} and {path}; rename one")
            summary = _docstring_head(source)
            group = "lesson" if "lessons" in path.parts else "panel"
            pages[path.stem] = Page(path.resolve(), path.stem, summary or path.stem.replace("_", " ").title(), summary, group)
    return list(pages.values())


def _absolute_imports(source: str) -> set[str]:
    """Top-level names of absolute imports (relative imports are the package's own modules)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def third_party_requirements(sources: list[str]) -> list[str]:
    """What micropip must install besides Panel, Bokeh and kvlab's wheels, from the imports of the
    pages and of everything in the kvlab_app wheel. Panel's own table maps import names to
    distributions (yaml -> pyyaml) and drops the standard library."""
    from panel.io.mime_render import find_requirements

    names = set().union(*(_absolute_imports(s) for s in sources)) - OWN_PACKAGES
    reqs = find_requirements("\n".join(f"import {n}" for n in sorted(names)))
    return sorted(set(reqs) - {"panel", "bokeh"})


def run_page(path: Path):
    """Run one page script under CPython as Panel's converter will, and return its Bokeh Document.

    Raises BuildError with the page's traceback when it fails or publishes nothing.
    """
    from bokeh.document import Document
    from panel.io.application import build_single_handler_application
    from panel.io.document import MockSessionContext
    from panel.io.state import set_curdoc, state

    app = build_single_handler_application(str(Path(path).resolve()))
    handler = app._handlers[0]
    doc = Document()
    doc._session_context = lambda: MockSessionContext(document=doc)  # what panel.io.convert does
    with set_curdoc(doc):
        app.initialize_document(doc)
        state._on_load(None)
    if getattr(handler, "failed", False):
        raise BuildError(f"page {path} failed under CPython: {handler.error}\n{handler.error_detail}")
    if not doc.roots:
        raise BuildError(f"page {path} publishes nothing: mark its layout .servable()")
    return doc


def _pyodide_dir_version(path: Path) -> str:
    if not (path / "pyodide.js").is_file():
        raise BuildError(f"--pyodide-dir: {path} has no pyodide.js (give the folder of a Pyodide release or npm package)")
    for meta, key in (("package.json", ("version",)), ("pyodide-lock.json", ("info", "version"))):
        if (path / meta).is_file():
            value = json.loads((path / meta).read_text(encoding="utf-8"))
            for k in key:
                value = value.get(k, {}) if isinstance(value, dict) else {}
            if isinstance(value, str):
                return value
    raise BuildError(f"--pyodide-dir: cannot tell the Pyodide version of {path} (no package.json or pyodide-lock.json)")


def _check_out(out: Path) -> None:
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / MARKER_FILE).is_file())):
        raise BuildError(f"--out: {out} is not empty and was not written by kvlab build-site; remove it or choose another folder")


def _staging_dir(out: Path) -> Path:
    """An empty folder beside `out`: the site is built there and swapped in only when complete, so
    a failed build leaves the previous site being served as it was."""
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}-building-", dir=out.parent))
    (stage / MARKER_FILE).write_text("written by kvlab build-site; the whole folder is replaced on each build\n", encoding="utf-8")
    return stage


def _swap_in(stage: Path, out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    stage.rename(out)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# Set while pages run at build time. A page can tell it is being pre-rendered for the static site
# (links must end in .html there) by this variable, and in the browser by sys.platform == "emscripten".
BUILD_ENV_VAR = "KVLAB_BUILD_SITE"


def _convert(page: Page, out: Path, requirements: list[str], inline: bool) -> Page:
    """Convert one page; return it with the title its document set."""
    from panel.io.convert import convert_app

    title = run_page(page.source).title
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):
        result = convert_app(str(page.source), out, requirements=requirements, runtime="pyodide-worker",
                             prerender=True, http_patch=False, inline=inline, verbose=False)
    if result is None or not (out / f"{page.name}.html").is_file():
        raise BuildError(f"Panel could not convert {page.source}: {captured.getvalue().strip()}")
    generic = {"", "Panel Application", "Bokeh Application"}
    return page if title in generic else replace(page, title=re.sub(r"^kvlab\s*[·|-]\s*", "", title))


def _postprocess(page: Page, out: Path, opts: SiteOptions, versions: dict, pyodide_url: str) -> None:
    html_path, js_path = out / f"{page.name}.html", out / f"{page.name}.js"
    page_html, worker = html_path.read_text(encoding="utf-8"), js_path.read_text(encoding="utf-8")
    if opts.wheels_url:
        base = opts.wheels_url.rstrip("/") + "/"
        for key in ("panel_wheel_url", "bokeh_wheel_url"):
            url = versions[key]
            worker = rewrite(worker, url, base + url.rsplit("/", 1)[1], "--wheels-url")
    if opts.panel_cdn_root:
        root = opts.panel_cdn_root.rstrip("/") + "/"
        if not opts.inline:  # inlined pages may no longer name the CDN in the HTML
            page_html = rewrite(page_html, versions["panel_cdn_root"], root, "--panel-cdn-root")
        page_html = page_html.replace(versions["panel_cdn_root"], root)
        worker = worker.replace(versions["panel_cdn_root"], root)
    worker = patch_worker(worker, pyodide_url)
    bokeh_src = next((s for s in _script_srcs(page_html) if "bokeh" in s), "")
    page_html = patch_page(page_html, "", {"pyodide_version": versions["pyodide"], "pyodide_url": pyodide_url,
                                           "pyodide_self_hosted": str(opts.pyodide_dir is not None).lower(),
                                           "bokeh_url": bokeh_src, "page": page.name})
    html_path.write_text(page_html, encoding="utf-8")
    js_path.write_text(worker, encoding="utf-8")


def _script_srcs(page_html: str) -> list[str]:
    return re.findall(r'<script[^>]*\bsrc="([^"]+)"', page_html)


def _index_html(pages: list[Page], title: str, versions: dict) -> str:
    groups = (("panel", "Panels"), ("lesson", "Lessons"))
    parts = []
    for key, heading in groups:
        items = [p for p in pages if p.group == key]
        if not items:
            continue
        lis = "\n".join(f'<li><a href="./{html.escape(p.name)}.html">{html.escape(p.title)}</a>'
                        + (f" — {html.escape(p.summary)}" if p.summary and p.summary != p.title else "") + "</li>" for p in items)
        parts.append(f"<h2>{heading}</h2>\n<ul>\n{lis}\n</ul>")
    body = "\n".join(parts)
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<link rel="stylesheet" href="./assets/kvlab-site.css" type="text/css">
</head>
<body class="kvlab-index">
<h1>{html.escape(title)}</h1>
<p>An interactive teaching simulator of the KV cache of LLM serving. Each page runs the simulator
in your browser with Pyodide {html.escape(versions["pyodide"])}: the first page you open downloads Python
and its packages (tens of MB, cached afterwards) and shows a preview until they are ready.</p>
{body}
<p class="kvlab-note">Built with Panel {html.escape(versions["panel"])} and Bokeh {html.escape(versions["bokeh"])}.
The same pages run locally with <code>kvlab serve</code>.</p>
</body>
</html>
"""


def build(opts: SiteOptions) -> SiteReport:
    """Build the site; raise BuildError with a message that names the option or page at fault."""
    if (ROOT / "kvlab").is_dir() and str(ROOT) not in sys.path:  # a checkout: pages import its kvlab.*
        sys.path.insert(0, str(ROOT))
    pages = discover_pages(opts.page_globs)
    if not pages:
        raise BuildError(f"no pages found: looked for scripts calling .servable( in {', '.join(opts.page_globs)}")
    versions = site_versions()
    pyodide_version = versions["pyodide"]
    if opts.pyodide_dir is not None:
        found = _pyodide_dir_version(opts.pyodide_dir)
        if found.lstrip("v") != pyodide_version:
            raise BuildError(f"--pyodide-dir: {opts.pyodide_dir} holds Pyodide {found}, but Panel {versions['panel']}'s worker "
                             f"loads Pyodide {pyodide_version} with importScripts(); give a {pyodide_version} release")
    final_out = opts.out_dir.resolve()
    _check_out(final_out)
    out = _staging_dir(final_out)
    try:
        info, pages = _build_into(out, pages, opts, versions)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    _swap_in(out, final_out)
    return SiteReport(final_out, tuple(pages), info)


def _build_into(out: Path, pages: list[Page], opts: SiteOptions, versions: dict) -> tuple[dict, list[Page]]:
    """Write the whole site into the empty folder `out`; return build-info and the converted pages."""
    pyodide_version = versions["pyodide"]
    with tempfile.TemporaryDirectory(prefix="kvlab-wheels-") as tmp:
        wheels = [build_wheel(SIM_WHEEL, Path(tmp))]
        if any((ROOT / p).is_dir() for p in APP_WHEEL.packages):
            wheels.append(build_wheel(APP_WHEEL, Path(tmp)))
        app_sources = [path.read_text(encoding="utf-8") for path, rel in package_files(APP_WHEEL) if rel.endswith(".py")]
        third_party = third_party_requirements([p.source.read_text(encoding="utf-8") for p in pages] + app_sources)
        requirements = third_party + [str(w) for w in wheels]
        wheel_info = {w.name: {"sha256": _sha256(w), "bytes": w.stat().st_size} for w in wheels}
        previous = os.environ.get(BUILD_ENV_VAR)
        os.environ[BUILD_ENV_VAR] = "1"
        try:
            pages = [_convert(page, out, requirements, opts.inline) for page in pages]
        finally:
            if previous is None:
                os.environ.pop(BUILD_ENV_VAR, None)
            else:
                os.environ[BUILD_ENV_VAR] = previous

    if opts.pyodide_dir is not None:
        shutil.copytree(opts.pyodide_dir, out / "pyodide", ignore=shutil.ignore_patterns(*PYODIDE_SKIP))
        pyodide_url = "./pyodide/pyodide.js"
    else:
        pyodide_url = opts.pyodide_url or worker_pyodide_url((out / f"{pages[0].name}.js").read_text(encoding="utf-8"))
    for page in pages:
        _postprocess(page, out, opts, versions, pyodide_url)

    shutil.copytree(ASSETS_DIR, out / "assets")
    index = _index_html(pages, opts.title, versions)
    (out / "pages.html").write_text(index, encoding="utf-8")
    if not any(p.name == "index" for p in pages):
        (out / "index.html").write_text(index, encoding="utf-8")

    info = {
        "kvlab_version": kvlab_version(), "panel_version": versions["panel"], "bokeh_version": versions["bokeh"],
        "pyodide_version": pyodide_version, "pyodide_url": pyodide_url,
        "pyodide_self_hosted": opts.pyodide_dir is not None, "inline": opts.inline,
        "panel_cdn_root": (opts.panel_cdn_root or versions["panel_cdn_root"]),
        "wheels_url": opts.wheels_url, "requirements": third_party, "wheels": wheel_info,
        "pages": [{**asdict(p), "source": _display_path(p.source), "html": f"{p.name}.html", "worker": f"{p.name}.js",
                   "resources": f"{p.name}.resources.zip"} for p in pages],
    }
    (out / INFO_FILE).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return info, pages


def _display_path(path: Path) -> str:
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def packed_wheels(resources_zip: Path) -> dict[str, bytes]:
    """The kvlab wheels packed next to a page, by file name (what the worker installs with emfs:)."""
    with zipfile.ZipFile(resources_zip) as zf:
        return {Path(n).name: zf.read(n) for n in zf.namelist() if n.endswith(".whl")}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kvlab build-site", description="Write kvlab's static Pyodide site (every panel and lesson "
                                "page, kvlab's wheels, an index) into a folder. Offline; CDNs are used only by the reader's browser.")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder to write (default: site/ in the current folder); "
                   "replaced on each build")
    p.add_argument("--pages", nargs="+", metavar="GLOB", default=list(DEFAULT_PAGE_GLOBS),
                   help="page scripts to convert, as globs relative to the repository or absolute (default: %(default)s)")
    host = p.add_mutually_exclusive_group()
    host.add_argument("--pyodide-url", metavar="URL", help="where pages load pyodide.js from (default: jsDelivr's CDN for "
                      "the Pyodide release the installed Panel pins); its folder must hold the full Pyodide distribution")
    host.add_argument("--pyodide-dir", type=Path, metavar="DIR", help="copy this Pyodide distribution into the site "
                      "(OUT/pyodide/) and load it from there, for networks that block the CDN")
    p.add_argument("--wheels-url", metavar="URL", help="folder URL holding the panel and bokeh wheels (default: Panel's CDN)")
    p.add_argument("--panel-cdn-root", metavar="URL", help="mirror of Panel's CDN for its CSS and bundles "
                   "(default: https://cdn.holoviz.org/panel/)")
    p.add_argument("--inline", action="store_true", help="inline BokehJS and Panel's JavaScript into each page "
                   "(about 3 MB a page) so no JavaScript CDN is needed")
    p.add_argument("--title", default="kvlab", help="title of the index page (default: %(default)s)")
    return p


def _check_url(parser: argparse.ArgumentParser, flag: str, value: str | None) -> None:
    if value is not None and not value.startswith(("https://", "http://", "./", "../", "/")):
        parser.error(f"{flag}: must be an http(s) URL or a path starting with / ./ or ../, got {value!r}")


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    for flag in ("pyodide_url", "wheels_url", "panel_cdn_root"):
        _check_url(parser, "--" + flag.replace("_", "-"), getattr(args, flag))
    if args.pyodide_dir is not None and not args.pyodide_dir.is_dir():
        parser.error(f"--pyodide-dir: {args.pyodide_dir} is not a folder")
    opts = SiteOptions(out_dir=args.out, page_globs=tuple(args.pages), pyodide_url=args.pyodide_url, pyodide_dir=args.pyodide_dir,
                       wheels_url=args.wheels_url, panel_cdn_root=args.panel_cdn_root, inline=args.inline, title=args.title)
    try:
        report = build(opts)
    except (BuildError, TemplateChanged) as e:
        print(f"kvlab build-site: error: {e}", file=sys.stderr)
        return 1
    info = report.info
    print(f"kvlab build-site: {len(report.pages)} pages into {report.out_dir}")
    for page in report.pages:
        print(f"  {page.name}.html  <- {_display_path(page.source)}")
    print(f"  Pyodide {info['pyodide_version']} from {info['pyodide_url']}; Panel {info['panel_version']}, Bokeh {info['bokeh_version']}")
    print(f"  packed wheels: {', '.join(info['wheels'])}; from micropip: {', '.join(info['requirements']) or 'nothing else'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
