"""kvlab's front end: Panel + Bokeh views over the `sim` package.

In a notebook:

    import panel as pn
    pn.extension()
    from kvlab.app import admission_panel, phases_panel
    admission_panel(prompt_tokens=32768, kv_dtype="fp8")

The names are imported lazily so that `import kvlab.app.serve` (the command line) does not pay for
Panel and Bokeh before it needs them.
"""

from __future__ import annotations

__all__ = ["AdmissionPanel", "PhasesPanel", "Settings", "Store", "admission_panel", "phases_panel"]

_LAZY = {
    "AdmissionPanel": "kvlab.app.panels",
    "PhasesPanel": "kvlab.app.panels",
    "admission_panel": "kvlab.app.panels",
    "phases_panel": "kvlab.app.panels",
    "Settings": "kvlab.app.state",
    "Store": "kvlab.app.store",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'app' has no attribute {name!r}")
