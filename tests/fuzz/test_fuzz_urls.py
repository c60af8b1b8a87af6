"""Fuzz links: any query string gives values the pages accept and notices, never an exception."""

from __future__ import annotations

from urllib.parse import quote

from hypothesis import given
from hypothesis import strategies as st
from kvlab.app.engine_views.settings import LabSettings
from kvlab.app.engine_views.urlstate import URL_FIELDS, apply_query
from kvlab.app.server.patches import guard_panel_location
from kvlab.app.viewlayer.query_limits import query_pairs
from kvlab.app.views.state import SCENARIO_FIELDS, Settings
from kvlab.app.views.urlstate import parse_query

from .support import batches, check_each, fuzz, hostile

guard_panel_location()
from panel.io import location  # noqa: E402  (Location.query_params calls it on every page)

KEYS = st.sampled_from([*SCENARIO_FIELDS, *URL_FIELDS, "config", "theme", "x", "", "a" * 100])
VALUES = st.one_of(hostile.map(str), st.text(max_size=40), st.just("9" * 5000), st.sampled_from(["true", "fp8", "2", "none"]))
pair = st.tuples(KEYS, VALUES).map(lambda kv: f"{quote(kv[0])}={quote(kv[1])}")
queries = st.one_of(st.lists(pair, max_size=12).map(lambda ps: "?" + "&".join(ps)), st.text(max_size=300),
                    st.just("?" + "a=1&" * 20_000))


@fuzz("links")
@given(batches(queries))
def test_links(batch):
    check_each(batch, _check_query)


def _check_query(query):
    """Each query through every reader of a link: the app's, the lab's, and Panel's own (guarded)."""
    values, notices = parse_query(query)
    assert all(isinstance(n, str) and len(n) < 2000 for n in notices)
    Settings().param.update(**values)  # what the link gave, the page accepts

    s = LabSettings()
    notices = apply_query(s, query)
    assert all(isinstance(n, str) for n in notices)
    s.config()  # the settings still make a config

    assert isinstance(location.parse_query(query if query.startswith("?") else "?" + query), dict)
    pairs, _ = query_pairs(query)
    assert all(len(v) <= 64 or k == "config" for k, v in pairs)
