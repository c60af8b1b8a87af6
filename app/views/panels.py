"""The two panels, as Viewers that work the same in a served page and in a notebook.

    import panel as pn
    pn.extension()
    from kvlab.app import admission_panel, phases_panel
    admission_panel(model="qwen3-32b", prompt_tokens=32768)   # displays in the notebook
    phases_panel(gpu="a100-80", prompt_tokens=128)

Each panel owns a Store (one sim.evaluate per change) and its sidebar Controls; `main` is what
the page template puts beside the sidebar. Passing `store=` lets several panels share one state.
"""

from __future__ import annotations

import panel as pn

from .admission_numbers import AdmissionNumbers
from .batch_chart import BatchChart
from .controls import Controls
from .engine_log import EngineLog
from .fit_curve import FitCurveChart
from .hbm_bar import HbmBar
from .kv_formula import KvFormula
from .notices import Notices
from .phase_numbers import PhaseNumbers
from .roofline_chart import RooflineChart
from .state import Settings
from .step_breakdown import StepBreakdown
from .store import CURVES, Store
from .urlstate import apply_values

SIDEBAR_WIDTH_PX = 330


def make_store(initial: dict | None = None, notices: list[str] | None = None, curves=CURVES) -> Store:
    """A store whose settings start from `initial`; values sim rejects become notices, not errors."""
    settings = Settings()
    problems = list(notices or []) + apply_values(settings, dict(initial or {}))
    return Store(settings, curves=curves, url_notices=problems)


def _pair(*items) -> pn.FlexBox:
    """Side by side on a laptop, stacked on a phone."""
    boxes = [pn.Column(item, sizing_mode="stretch_width", styles={"flex": "1 1 440px", "min-width": "0"}, margin=0)
             for item in items]
    return pn.FlexBox(*boxes, flex_wrap="wrap", sizing_mode="stretch_width", margin=0)


class KVPanel(pn.viewable.Viewer):
    title = ""
    slug = ""
    curves: tuple[str, ...] = CURVES

    def __init__(self, store: Store | None = None, **initial):
        super().__init__()
        self.store = store if store is not None else make_store(initial, curves=self.curves)
        self.controls = Controls(self.store)
        self.parts: list[pn.viewable.Viewer] = []  # every view, for tests and notebook users to inspect
        self.main = pn.Column(*self.views(), sizing_mode="stretch_width", margin=0)

    def add(self, view):
        self.parts.append(view)
        return view

    def views(self) -> list:
        raise NotImplementedError

    @property
    def settings(self) -> Settings:
        return self.store.settings

    def __panel__(self):
        sidebar = pn.Column(self.controls, width=SIDEBAR_WIDTH_PX)
        return pn.Row(sidebar, self.main, sizing_mode="stretch_width")


class AdmissionPanel(KVPanel):
    """Panel 1: how HBM is filled, and how many sequences the engine can hold."""

    title = "The admission decision"
    slug = "admission"
    curves = ("fit",)

    def views(self):
        st = self.store
        return [
            self.add(Notices(store=st)),
            self.add(AdmissionNumbers(store=st)),
            self.add(HbmBar(store=st)),
            _pair(self.add(KvFormula(store=st)), self.add(FitCurveChart(store=st))),
            self.add(EngineLog(store=st)),
        ]


class PhasesPanel(KVPanel):
    """Panel 2: prefill and decode, their step times, the roofline and batching."""

    title = "Two phases, opposite bottlenecks"
    slug = "phases"
    curves = ("batch",)

    def views(self):
        st = self.store
        return [
            self.add(Notices(store=st)),
            self.add(PhaseNumbers(store=st)),
            _pair(self.add(StepBreakdown("prefill", store=st)), self.add(StepBreakdown("decode", store=st))),
            _pair(self.add(RooflineChart(store=st)), self.add(BatchChart(store=st))),
            self.add(EngineLog(store=st)),
        ]


def admission_panel(store: Store | None = None, **initial) -> AdmissionPanel:
    """Panel 1 for a notebook: keyword arguments are the initial settings (e.g. prompt_tokens=32768)."""
    return AdmissionPanel(store=store, **initial)


def phases_panel(store: Store | None = None, **initial) -> PhasesPanel:
    """Panel 2 for a notebook: keyword arguments are the initial settings (e.g. gpu="a100-80")."""
    return PhasesPanel(store=store, **initial)
