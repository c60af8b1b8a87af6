"""One panel state evaluated: the result, the two swept curves and the slider range (standard library only).

`app/views/store.py` (the Panel server) and the browser bridge both call `compute`, so a state gives the
same result, curves and context length in both runtimes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kvlab.sim import Result, evaluate

from . import series
from .config_paste import parse_config_text
from .settings import CUSTOM_MODEL, scenario

CURVES = ("fit", "batch")
FALLBACK_CONTEXT_TOKENS = 131_072  # slider range while a pasted config is unreadable


@dataclass(frozen=True)
class Computed:
    result: Result | None  # None while the pasted config cannot be read
    issues: list = field(default_factory=list)  # [{field, message}]
    context_tokens: int = FALLBACK_CONTEXT_TOKENS
    fit: series.FitCurve | None = None
    batch: series.BatchCurve | None = None
    config: dict | None = None  # the parsed pasted config, when model is custom


class ConfigCache:
    """Parse a pasted config once per distinct text, not once per slider move."""

    def __init__(self):
        self._text: str | None = None
        self._parsed: tuple[dict | None, list] = (None, [])

    def parse(self, text: str) -> tuple[dict | None, list]:
        if text != self._text:
            self._parsed = parse_config_text(text)
            self._text = text
        return self._parsed


def compute(values: dict, curves: tuple[str, ...] = CURVES, previous_context: int = FALLBACK_CONTEXT_TOKENS,
            configs: ConfigCache | None = None) -> Computed:
    """Evaluate the settings `values` (a dict of every setting); never raises for bad input."""
    config = None
    if values["model"] == CUSTOM_MODEL:
        config, config_issues = (configs or ConfigCache()).parse(values["config_text"])
        if config is None:
            return Computed(None, list(config_issues), previous_context)
    s = scenario(values, config)
    result = evaluate(s)
    # The model's context (the prompt slider's range): sim's, or the last one while the state is
    # an input error that stops before the model is read.
    context = result.context_tokens or previous_context
    fit = batch = None
    if result.ok and "fit" in curves:
        fit = series.fit_curve(s, context)
    if result.ok and "batch" in curves and result.max_sequences > 0:
        batch = series.batch_curve(s, min(result.max_sequences, result.effective_max_num_seqs or result.max_sequences))
    return Computed(result, list(result.errors), context, fit, batch, config)
