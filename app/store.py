"""The one place the app calls the simulator.

Data flows one way: Settings (what the student chose) -> `sim.evaluate` -> an immutable
`sim.Result` (+ the two swept curves) -> views, which only display. Every setting change
recomputes everything in one `param.update`, so each view redraws once per change and Panel sends
the whole update to the browser as one message.
"""

from __future__ import annotations

import param
from kvlab.sim import InputError, Result
from kvlab.sim.evaluate import resolve_architecture

from kvlab import sim

from . import series
from .config_paste import parse_config_text
from .state import CUSTOM_MODEL, SCENARIO_FIELDS, Settings
from .urlstate import encode_query

CURVES = ("fit", "batch")
FALLBACK_CONTEXT_TOKENS = 131_072  # slider range while a pasted config is unreadable


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
        self._config: dict | None = None
        self._config_issues: list[dict] = []
        self._parsed_text: str | None = None
        self.settings.param.watch(self._on_change, ["config_text", *SCENARIO_FIELDS])
        self.recompute()

    def _on_change(self, *_events) -> None:
        self.recompute()

    def _parse_config(self) -> None:
        text = self.settings.config_text
        if text != self._parsed_text:  # parse once per paste, not once per slider move
            self._config, self._config_issues = parse_config_text(text)
            self._parsed_text = text

    def scenario(self) -> sim.Scenario | None:
        """The scenario being shown, or None when the pasted config cannot be read."""
        if self.settings.model != CUSTOM_MODEL:
            return self.settings.scenario()
        self._parse_config()
        return None if self._config is None else self.settings.scenario(self._config)

    def recompute(self) -> None:
        s = self.scenario()
        custom = self.settings.model == CUSTOM_MODEL
        query, note = encode_query(self.settings, self._config if custom else None)
        if s is None:
            self.param.update(result=None, issues=list(self._config_issues), fit=None, batch=None,
                              query=query, link_note=note or "")
            return
        result = sim.evaluate(s)
        context = self.context_tokens
        try:
            context = resolve_architecture(s).max_position_embeddings
        except InputError:
            pass  # the result already carries the error that names the field
        fit = batch = None
        if result.ok and "fit" in self._curves:
            fit = series.fit_curve(s, context)
        if result.ok and "batch" in self._curves and result.max_sequences > 0:
            batch = series.batch_curve(s, min(result.max_sequences, result.effective_max_num_seqs or result.max_sequences))
        self.param.update(result=result, issues=list(result.errors), context_tokens=context, fit=fit, batch=batch,
                          query=query, link_note=note or "")
