"""The one place the app calls the simulator.

Data flows one way: Settings (what the student chose) -> `sim.evaluate` -> an immutable
`sim.Result` (+ the two swept curves) -> views, which only display. Every setting change
recomputes everything in one `param.update`, so each view redraws once per change and Panel sends
the whole update to the browser as one message.
"""

from __future__ import annotations

import param
from kvlab.sim import Result

from ..viewlayer import series
from ..viewlayer.state import CURVES, FALLBACK_CONTEXT_TOKENS, ConfigCache, compute
from .state import SCENARIO_FIELDS, Settings
from .urlstate import encode_query


class Store(param.Parameterized):
    """Evaluates `settings` whenever any of them changes. Read-only for views."""

    settings = param.ClassSelector(class_=Settings, constant=True)
    result = param.ClassSelector(class_=Result, allow_None=True, doc="sim's answer; None while the config is unreadable")
    issues = param.List(default=[], doc="[{field, message}]: why there is no result, or what sim rejected")
    context_tokens = param.Integer(default=FALLBACK_CONTEXT_TOKENS, doc="the model's context length (slider range)")
    fit = param.ClassSelector(class_=series.FitCurve, allow_None=True)
    batch = param.ClassSelector(class_=series.BatchCurve, allow_None=True)
    query = param.String(default="", doc="the URL query string that reproduces this state")
    link_note = param.String(default="", doc="what the link cannot carry, if anything")
    url_notices = param.List(default=[], doc="values from the opening link that were ignored, and why")

    def __init__(self, settings: Settings | None = None, curves: tuple[str, ...] = CURVES, **params):
        super().__init__(settings=settings or Settings(), **params)
        self._curves = curves
        self._configs = ConfigCache()
        self.settings.param.watch(self._on_change, ["config_text", *SCENARIO_FIELDS])
        self.recompute()

    def _on_change(self, *_events) -> None:
        self.recompute()

    def recompute(self) -> None:
        """One `viewlayer.state.compute` (what the browser bridge calls too) and one update."""
        c = compute(self.settings.values(), self._curves, self.context_tokens, self._configs)
        query, note = encode_query(self.settings, c.config)
        self.param.update(result=c.result, issues=c.issues, context_tokens=c.context_tokens, fit=c.fit, batch=c.batch,
                          query=query, link_note=note or "")
