"""kvlab's front end: Panel + Bokeh views over the `sim` package.

In a notebook:

    import panel as pn
    pn.extension()
    from kvlab.app import admission_panel, phases_panel
    admission_panel(prompt_tokens=32768, kv_dtype="fp8")

The names are imported lazily so that `import kvlab.app.server.serve` (the command line) does not pay for
Panel and Bokeh before it needs them.
"""

from __future__ import annotations

__all__ = ["AdmissionPanel", "PhasesPanel", "Settings", "Store", "admission_panel", "phases_panel"]

_LAZY = {
    "AdmissionPanel": "kvlab.app.views.panels",
    "PhasesPanel": "kvlab.app.views.panels",
    "admission_panel": "kvlab.app.views.panels",
    "phases_panel": "kvlab.app.views.panels",
    "Settings": "kvlab.app.views.state",
    "Store": "kvlab.app.views.store",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'app' has no attribute {name!r}")
