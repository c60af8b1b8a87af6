"""`kvlab build-site`'s command line: options, the report it prints, exit status 1 on a BuildError."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .assets import PYODIDE_CDN, PYODIDE_INSTALL, PYODIDE_NPM_DIR, PYODIDE_VERSION
from .build import DEFAULT_OUT, SiteOptions, _display_path, build
from .compress import site_bytes
from .discover import DEFAULT_PAGE_GLOBS, BuildError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kvlab build-site", description="Write kvlab's static site: every panel and lesson page, "
                                "pre-rendered, with every file it needs (BokehJS, Panel's CSS, Pyodide's core, kvlab's wheels). "
                                "Offline; the site needs no other host.")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder to write (default: site/ in the current folder); "
                   "replaced on each build")
    p.add_argument("--pages", nargs="+", metavar="GLOB", default=list(DEFAULT_PAGE_GLOBS),
                   help="page scripts to build, as globs relative to the repository or absolute (default: %(default)s)")
    host = p.add_mutually_exclusive_group()
    host.add_argument("--pyodide-dir", type=Path, metavar="DIR", help=f"the npm `pyodide` {PYODIDE_VERSION} package to copy "
                      f"into the site (default: {_display_path(PYODIDE_NPM_DIR)}, installed by `{PYODIDE_INSTALL}`)")
    host.add_argument("--pyodide-cdn", action="store_true", help=f"do not copy Pyodide's core; pages load it from {PYODIDE_CDN}")
    p.add_argument("--no-snapshot", action="store_true", help="do not make the Pyodide memory snapshot (made by default "
                   "with Node when Pyodide is copied into the site; pages then start Python from scratch)")
    p.add_argument("--no-precompress", action="store_true", help="do not write the gzip and brotli copies (F.gz, F.br) "
                   "of each compressible file, which static hosts that serve such copies send to browsers that accept them")
    p.add_argument("--title", default="kvlab", help="title of the plain page list, pages.html (default: %(default)s)")
    return p


NEXT_STEPS = """\
Next: serve the folder over HTTP and open it in a browser, for example
    python -m http.server --bind 127.0.0.1 --directory {out} 8000      # then http://127.0.0.1:8000/
or copy it to any static host (a course page, GitHub Pages). Opening {out}/index.html directly
(file://) will not work: browsers refuse to start a web worker and to fetch Pyodide's WebAssembly
and kvlab's wheels from file:// pages, so the pages would stay at their pre-rendered state."""


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.pyodide_dir is not None and not args.pyodide_dir.is_dir():
        parser.error(f"--pyodide-dir: {args.pyodide_dir} is not a folder")
    opts = SiteOptions(out_dir=args.out, page_globs=tuple(args.pages), pyodide_dir=args.pyodide_dir,
                       pyodide_cdn=args.pyodide_cdn, snapshot=not args.no_snapshot, precompress=not args.no_precompress,
                       title=args.title)
    try:
        report = build(opts)
    except BuildError as e:
        print(f"kvlab build-site: error: {e}", file=sys.stderr)
        return 1
    info = report.info
    size = site_bytes(report.out_dir)[0]  # the files a browser gets, not their precompressed copies
    print(f"kvlab build-site: {len(report.pages)} pages (light and dark) into {report.out_dir}, {size / 1e6:.1f} MB")
    for page in report.pages:
        live = "live" if page.bridge == "panel" else "static"
        print(f"  {page.name}.html  <- {_display_path(page.source)}  ({live})")
    print(f"  Pyodide {info['pyodide_version']} from {info['pyodide_url']}; BokehJS {info['bokeh_version']}, "
          f"Panel {info['panel_version']} files copied; wheels: {', '.join(info['wheels'])}")
    if snap := info["snapshot"]:
        print(f"  Pyodide memory snapshot with kvlab imported: {snap['file']}, {snap['bytes'] / 1e6:.1f} MB gzip "
              f"({snap['raw_bytes'] / 1e6:.1f} MB restored), made in {(snap['boot_ms'] + snap['import_ms']) / 1000:.1f} s")
    if packed := info["precompressed"]:
        print(f"  precompressed copies for static hosts that serve them: {packed['gzip_files']} .gz, {packed['br_files']} .br, "
              f"{packed['sibling_bytes'] / 1e6:.1f} MB beside the {size / 1e6:.1f} MB above (docs/site.md)")
    for note in report.notes:
        print(f"  note: {note}")
    print(NEXT_STEPS.format(out=_display_path(report.out_dir)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
