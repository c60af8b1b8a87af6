"""Run by `panel serve --setup` before the server starts (app/server/serve.py passes it).

Applies every patch of Panel, Bokeh and Tornado that the server needs (app/server/patches.py: the
avoidable delays between a slider move and the updated numbers, design.md section 4, and the
closed pages' quiet ends), each only on the releases it was written for, and takes the full
garbage collections over (app/server/quiet_gc.py).

Nothing here is imported by the pages themselves: under Pyodide there is no server to tune.
"""

from __future__ import annotations

import panel as pn
from kvlab.app.server import patches, quiet_gc

patches.apply_server_patches()

# Full garbage collections at quiet moments, not in the middle of a lab run.
quiet_gc.install()
pn.state.schedule_task("kvlab.server_gc", quiet_gc.collect_if_due, period=f"{quiet_gc.CHECK_S:g}s")
