"""The serving lab's settings as param: `LabSettings`, GENERATED from the view layer's one table
(`viewlayer.lab_settings.LAB_FIELDS`): a chosen-from-a-list setting becomes a `param.Selector`, a flag
a `param.Boolean`, a number a `param.Integer` or `param.Number` with the engine's bounds and help, each
with the table's label and the lab's default. A setting added to the table appears here, in the link
and in the browser with no edit to this file. Loading a preset sets every run setting
(`lab_settings.preset_values`, the values the browser's session loads).
"""

from __future__ import annotations

import param
from kvlab.sim import Scenario
from kvlab.sim.engine import EngineConfig

from ..viewlayer.lab_settings import (  # noqa: F401  (re-exported: the lab's modules and tests import them from here)
    LAB_FIELDS,
    LAB_PRESETS,
    NO_COMPARISON,
    PRESET_LABELS,
    RUN_FIELDS,
    SCENARIO_KEYS,
    URL_FIELDS,
    bound,
    field_help,
    lab_config,
    lab_defaults,
    lab_options,
    lab_scenario,
    preset_values,
)


def lab_parameter(name: str, label: str, default) -> param.Parameter:
    """The param.Parameter of one setting of the table."""
    doc = field_help(name)
    options = lab_options(name)
    if options is not None:
        return param.Selector(default=default, objects=options if isinstance(options, dict) else list(options),
                              label=label, doc=doc)
    b = bound(name)
    if b is None:
        return param.Boolean(default=default, label=label, doc=doc)
    low, high, integer, optional = b
    kind = param.Integer if integer else param.Number
    return kind(default=default, bounds=(int(low), int(high)) if integer else (low, high), allow_None=optional,
                doc=doc, label=label)


class LabSettings(param.Parameterized):
    """What the student has chosen in the serving lab: one parameter per row of `LAB_FIELDS` (added below)."""

    def __init__(self, **params):
        super().__init__(**params)
        self.param.watch(lambda e: self.apply_preset(e.new), "preset")

    def scenario(self) -> Scenario:
        return lab_scenario({k: getattr(self, k) for k in SCENARIO_KEYS})

    def values(self) -> dict:
        """Every setting as a plain dict (what the view layer's lab functions read), the views'
        display choices at their defaults."""
        return {**lab_defaults(), **{k: getattr(self, k) for k in URL_FIELDS}}

    def config(self, policy: str | None = None) -> EngineConfig:
        """The EngineConfig for this state (with `policy` instead of the chosen one if given)."""
        return lab_config(self.values(), policy)

    def apply_preset(self, name: str) -> None:
        self.param.update(**preset_values(name))

    def set_values(self, values: dict) -> None:
        """Hold `values` (a link's, `lab_url.parse_lab_query`): the preset first, which loads its own
        values, then every setting on top."""
        self.preset = values["preset"]
        self.param.update(**{k: values[k] for k in URL_FIELDS if k != "preset"})


_DEFAULTS = lab_defaults()
for _field in LAB_FIELDS:
    LabSettings.param.add_parameter(_field.name, lab_parameter(_field.name, _field.label, _DEFAULTS[_field.name]))
del _field
