"""URL size limits apply before any value is parsed, on every page (ours and Panel's own parser)."""

from __future__ import annotations

import pytest
from kvlab.app.viewlayer.query_limits import MAX_QUERY_CHARS, MAX_VALUE_CHARS, query_pairs
from kvlab.app.views.urlstate import parse_query


def test_a_5000_digit_value_is_dropped_with_a_notice_and_the_rest_kept():
    values, notices = parse_query("?prompt_tokens=" + "9" * 5000 + "&concurrency=8")
    assert values == {"concurrency": 8}
    assert notices == [f"Ignored prompt_tokens='{'9' * 40}\u2026' from the link: it is 5,000 characters long "
                       f"(at most {MAX_VALUE_CHARS}); the default is shown."]


def test_an_oversize_query_gets_the_notice_and_the_defaults():
    values, notices = parse_query("?" + "concurrency=8&" * (MAX_QUERY_CHARS // 10))
    assert values == {}
    assert "characters long (at most 32,000); all were ignored" in notices[0]


def test_long_names_and_the_config_value():
    pairs, notices = query_pairs("?" + "k" * 100 + "=1&config=" + "A" * 5000)
    assert pairs == [("config", "A" * 5000)]
    assert "name is 100 characters long" in notices[0]


@pytest.mark.parametrize("bad", [None, 12, b"?a=1"])
def test_non_strings_are_an_empty_query(bad):
    assert query_pairs(bad) == ([], [])


def test_panels_own_query_parser_is_guarded():
    pytest.importorskip("panel")
    import kvlab.app.shell.share  # noqa: F401  (installs the guard, as every page does)
    from panel.io.location import Location
    loc = Location(search="?a=" + "9" * 5000 + "&b=3&c=" + "[" * 60)
    assert loc.query_params == {"b": 3}
