"""The serving lab's state in the URL, for the param settings: the link is read and written by the view
layer's one codec (`viewlayer.lab_url`, the browser's too); this holds its answer in a `LabSettings`."""

from __future__ import annotations

from ..viewlayer.lab_settings import URL_FIELDS  # noqa: F401  (re-exported for tests)
from ..viewlayer.lab_url import encode_lab_query, parse_lab_query
from .settings import LabSettings


def apply_query(settings: LabSettings, query: str) -> list[str]:
    """Set what the query string holds (a preset first, then the other values on top); return a
    notice per value that was ignored."""
    values, notices = parse_lab_query(query)
    settings.set_values(values)
    return notices


def encode_query(settings: LabSettings) -> str:
    """The preset, then only what differs from it: a short link that reopens the same state."""
    return encode_lab_query(settings.values())
