"""The notebook entry points: `from app import admission_panel, phases_panel`, keyword arguments
as the initial state, and a render without any server."""

import panel as pn
from kvlab.app.views.panels import AdmissionPanel, PhasesPanel
from kvlab.sim import Scenario, evaluate

from kvlab import app


def test_lazy_exports():
    assert app.admission_panel is not None and app.phases_panel is not None
    assert isinstance(app.admission_panel(), AdmissionPanel)
    assert isinstance(app.phases_panel(), PhasesPanel)


def test_keywords_set_the_initial_state_and_the_panel_renders_without_a_server():
    panel = app.admission_panel(model="qwen3-32b", prompt_tokens=32768, kv_dtype="fp8")
    assert panel.store.result == evaluate(Scenario(model="qwen3-32b", prompt_tokens=32768, kv_dtype="fp8"))
    root = pn.panel(panel).get_root()  # what a notebook cell's display builds, minus the comm
    texts = [m.text for m in root.references() if isinstance(getattr(m, "text", None), str)]
    headline = [t for t in texts if "max_sequences" in t]
    assert len(headline) == 1 and f"&gt;{panel.store.result.max_sequences}&lt;" in headline[0]


def test_two_panels_can_share_one_state():
    first = app.admission_panel(prompt_tokens=8192)
    second = app.phases_panel(store=first.store)
    first.settings.gpu = "h200"
    assert second.store.result.scenario["gpu"] == "h200"
