"""The serving lab's address bar follows every setting (it once raised AttributeError on each change)."""

from __future__ import annotations

import param
import pytest

pn = pytest.importorskip("panel")

from kvlab.app.engine_views import lab  # noqa: E402
from kvlab.app.engine_views.urlstate import URL_FIELDS, apply_query  # noqa: E402
from kvlab.app.shell.share import AddressBar  # noqa: E402
from kvlab.app.viewlayer.query_limits import MAX_VALUE_CHARS  # noqa: E402


def _other_value(p: param.Parameter, value):
    """A valid value of `p` different from `value`."""
    if isinstance(p, param.Boolean):
        return not value
    if isinstance(p, param.Selector):
        options = list(p.objects.values()) if isinstance(p.objects, dict) else list(p.objects)
        return next(o for o in options if o != value)
    low, high = p.bounds
    if value is None:
        return low
    if isinstance(p, param.Integer):
        return value + 1 if value + 1 <= high else value - 1
    step = (high - low) / 7
    return value + step if value + step <= high else value - step


@pytest.fixture(scope="module")
def page():
    served, bar = lab.lab_with_address_bar(synchronous=True)
    assert isinstance(bar, AddressBar)
    return bar, served.store.settings


@pytest.mark.parametrize("key", [k for k in URL_FIELDS if k != "preset"])
def test_every_lab_setting_updates_the_address_bar(page, key):
    bar, settings = page
    p = settings.param[key]
    before = bar.query
    new = _other_value(p, getattr(settings, key))
    setattr(settings, key, new)
    assert bar.query != before, key
    # The bar's query reopens the same value.
    fresh = type(settings)()
    assert not apply_query(fresh, bar.query)
    assert getattr(fresh, key) == getattr(settings, key)


def test_preset_change_updates_the_address_bar(page):
    bar, settings = page
    settings.preset = "seed004-cliff"
    assert "preset=seed004-cliff" in bar.query


def test_overlong_link_values_are_dropped_before_parsing():
    from kvlab.app.engine_views.settings import LabSettings
    s = LabSettings()
    notices = apply_query(s, "num_requests=" + "9" * 5000 + "&seed=7")
    assert s.seed == 7 and s.num_requests == LabSettings().num_requests
    assert any(f"at most {MAX_VALUE_CHARS}" in n for n in notices)
