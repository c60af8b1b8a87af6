"""Every Bokeh property that reads a column names a column its source has.

A plain string given to a Bokeh data spec is a column's name, not a value: `text_font="helvetica"`
on the HBM bar's labels asked BokehJS for a column 'helvetica' ("nonexistent field" in the console of
every page with the bar) and its labels fell back to a serif font. Fixed values go through
bokeh.core.properties.value; this reads every model of the panels and the lab as Bokeh serializes it.
"""

import panel as pn
import pytest
from bokeh.core.serialization import Serializer
from bokeh.models import ColumnDataSource, GlyphRenderer
from kvlab.app import admission_panel, phases_panel
from kvlab.app.engine_views.lab import lab_with_address_bar


def _lab():
    lab, _ = lab_with_address_bar("?requests=60", synchronous=True)
    return lab.main


PAGES = {"admission": lambda: admission_panel().main, "phases": lambda: phases_panel().main, "serving_lab": _lab}


def _fields(model) -> dict[str, str]:
    """property -> column name, for each property Bokeh sends as a field."""
    attributes = Serializer(deferred=False).encode(model).get("attributes", {})
    return {name: rep["field"] for name, rep in attributes.items() if isinstance(rep, dict) and rep.get("type") == "field"}


@pytest.mark.parametrize("page", PAGES)
def test_every_field_names_a_column(page):
    root = pn.Column(PAGES[page]()).get_root()
    missing, checked = [], 0
    for model in root.references():
        if isinstance(model, GlyphRenderer) and isinstance(model.data_source, ColumnDataSource):
            owners = [(g, model.data_source) for g in (model.glyph, model.nonselection_glyph, model.selection_glyph,
                                                       model.hover_glyph, model.muted_glyph) if g is not None and g != "auto"]
        elif isinstance(getattr(model, "source", None), ColumnDataSource):
            owners = [(model, model.source)]
        else:
            continue
        for owner, source in owners:
            for prop, column in _fields(owner).items():
                checked += 1
                if column not in source.data:
                    missing.append(f"{type(owner).__name__}.{prop} = field {column!r}")
    assert checked > 20  # the walk reached the charts
    assert missing == []
