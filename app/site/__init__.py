"""`kvlab build-site`: write the static site into ./site (or --out).

    kvlab build-site                    # every page, Pyodide's core copied into the site
    kvlab build-site --pyodide-cdn      # pages load Pyodide's core from jsDelivr instead
    kvlab build-site --help

The Python that must run per interaction is small (sim and the view layer, standard library
only); the UI runtime is large. So the two are split:

- Build time (CPython, Panel): every page script runs once, and Panel lays it out exactly as
  `kvlab serve` shows it, in the light and the dark theme. Each layout is written as a static
  Bokeh document (PAGE.html, PAGE.dark.html) whose views and widgets carry stable Bokeh model
  names (`hbm_bar.bars`, `w.prompt_tokens`). Every file it needs (BokehJS from the bokeh wheel,
  the files of Panel's dist it names, kvlab's loader, bridge and CSS from static/) is copied
  into the site, so the site works from any static host, offline, behind a firewall.
- Run time (browser): the pre-rendered page shows at once. `kvlab/kvlab-bridge.js` starts a
  module worker that loads Pyodide's core, unpacks kvlab's two pure wheels from the site (one
  shared copy, no micropip, no PyPI) and runs `kvlab.app.viewlayer.pages.PanelPage`; each widget
  change becomes one call into Python whose patch is applied with `model.setv(...)`.
- With Node, the build also makes a Pyodide memory snapshot with kvlab imported (app/site/snapshot.py),
  which the worker restores instead of starting Python from scratch.

Nothing here needs the network.

One module per job: discover.py (which pages, each run under CPython), document.py (model names
and deferrals in a page's Bokeh document), render.py (one page into HTML), assets.py (Panel's and
Bokeh's files, Pyodide's core), snapshot.py (the Pyodide memory snapshot and its cut standard
library), wheels.py (kvlab's two pure wheels), compress.py (the files' gzip and brotli copies for
static hosts), build.py (the whole site), cli.py (the command line). marks.py is what a page marks
for the build while it runs (lessons import it); nothing here imports the lessons.
"""
