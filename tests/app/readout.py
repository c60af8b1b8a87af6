"""Reading what the views display, without a browser: the text of every data-kv element in the
panes' HTML (the same attributes the browser tests read from the DOM)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import panel as pn
from kvlab.app.views.base import TextPane


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: dict[str, str] = {}
        self._open: list[tuple[str | None, list[str]]] = []

    def handle_starttag(self, tag, attrs):
        key = dict(attrs).get("data-kv")
        self._open.append((key, []))

    def handle_endtag(self, tag):
        if not self._open:
            return
        key, parts = self._open.pop()
        text = "".join(parts)
        if key is not None:
            self.found[key] = text
        if self._open:
            self._open[-1][1].append(text)

    def handle_data(self, data):
        if self._open:
            self._open[-1][1].append(data)


def displayed(viewable) -> dict[str, str]:
    """{data-kv: text} over every text pane inside `viewable`."""
    out: dict[str, str] = {}
    for pane in pn.Column(viewable).select(TextPane):
        c = _Collector()
        c.feed(pane.object or "")
        out.update(c.found)
    return out


def number(text: str) -> float:
    """'2,296 tok/s' -> 2296.0; '27.9' -> 27.9."""
    m = re.search(r"-?[\d,]*\.?\d+", text)
    assert m, f"no number in {text!r}"
    return float(m.group(0).replace(",", ""))


def decimals(text: str) -> int:
    m = re.search(r"\.(\d+)", text)
    return len(m.group(1)) if m else 0


def assert_shows(text: str, value: float, scale: float = 1.0) -> None:
    """The displayed number equals sim's value rounded to the digits shown (half a unit in the last place)."""
    shown = number(text)
    tolerance = 0.5 * 10 ** -decimals(text) + 1e-9
    assert abs(shown - value * scale) <= tolerance, f"shows {text!r}, sim has {value * scale}"
