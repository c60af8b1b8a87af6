"""Panel 2, prefill against decode: `panel serve app/pages/phases.py`."""

from kvlab.app.shell.page import build_page
from kvlab.app.views.panels import PhasesPanel

build_page(PhasesPanel, "Prefill is one long matrix multiply; decode is one token per sequence per step. "
                        "Drag the prompt and the batch and watch the binding term change sides.").servable()
