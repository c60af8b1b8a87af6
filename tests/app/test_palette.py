"""Text drawn on the charts' canvases (which axe cannot read) reaches WCAG 2.1's 4.5:1 against the
page's background in both themes: the lab's mark labels and the charts' ink and muted text; the
marks' lines reach 3:1."""

from __future__ import annotations

import panel as pn
import pytest
from kvlab.app.engine_views.base import MARK_COLORS, MARK_LABEL_COLORS, MARK_LINE_COLORS
from kvlab.app.engine_views.distribution import LatencyDistribution
from kvlab.app.engine_views.store import LabStore
from kvlab.app.viewlayer.palette import ink, muted, paper

from tests.wcag import AA_NON_TEXT, AA_TEXT, contrast


def test_contrast_formula_on_known_pairs():
    assert contrast("#000000", "#FFFFFF") == pytest.approx(21.0)
    assert contrast("#777777", "#FFFFFF") == pytest.approx(4.48, abs=0.01)
    assert contrast("rgba(0, 0, 0, 0.5)", "#FFFFFF") == pytest.approx(contrast("#808080", "#FFFFFF"), rel=0.02)  # blended


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_chart_text_reaches_aa_on_the_page_background(dark):
    background = paper(dark)
    colours = {**{f"{mark} label": c for mark, c in MARK_LABEL_COLORS[dark].items()}, "ink": ink(dark), "muted": muted(dark)}
    low = {name: round(contrast(c, background), 2) for name, c in colours.items() if contrast(c, background) < AA_TEXT}
    assert not low, f"below {AA_TEXT}:1 on {background}: {low}"
    assert MARK_LABEL_COLORS[dark].keys() == MARK_COLORS.keys()


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_the_marks_lines_reach_3_to_1_on_the_page_background(dark):
    """A mark's line is a graphical object the chart needs (WCAG 2.1, 1.4.11): 3:1 against the page."""
    background = paper(dark)
    low = {mark: round(contrast(c, background), 2) for mark, c in MARK_LINE_COLORS[dark].items() if contrast(c, background) < AA_NON_TEXT}
    assert not low, low
    assert contrast(MARK_COLORS["mean"], paper(True)) < AA_NON_TEXT  # why the dark theme's mean has its own colour


def test_the_lines_colours_alone_would_not_do():
    """Why the labels have colours of their own: three of the four lines' colours are below 4.5:1 on white."""
    assert sum(contrast(c, paper(False)) < AA_TEXT for c in MARK_COLORS.values()) == 3


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_the_distribution_draws_its_labels_in_those_colours(dark, monkeypatch):
    monkeypatch.setattr(pn.config, "theme", "dark" if dark else "default")
    view = LatencyDistribution(store=LabStore(synchronous=True))
    view.__panel__()
    drawn = {(mark, tag): (label.text_color, label.background_fill_color) for (mark, tag), label in view.labels.items()}
    assert drawn == {(mark, tag): (MARK_LABEL_COLORS[dark][mark], paper(dark)) for mark in MARK_COLORS for tag in ("h", "c")}
    lines = {key: span.line_color for key, span in view.spans.items()}
    assert lines == {(mark, tag): MARK_LINE_COLORS[dark][mark] for mark in MARK_COLORS for tag in ("h", "c")}
