"""The serving lab's link, read and written in one place for both runtimes: every setting that differs
from its preset's value, as `name=value`, so a copied link reopens the same run. A preset in the link
is applied first, then the other values on top of it. Values the settings refuse become notices, never
errors. `check_value` is also what the browser's widgets and a lesson's live view check a value with.
Standard library only: the fields, choices and bounds are `lab_settings.LAB_FIELDS`'."""

from __future__ import annotations

from urllib.parse import urlencode

from kvlab.sim.fields import Bound, check_number

from .format import link_number
from .lab_settings import BOOLEAN_FIELDS, URL_FIELDS, bound, lab_choices, lab_defaults, merge_values
from .query_limits import query_pairs


def check_value(name: str, value):
    """(the value as the setting holds it, None) or (None, why it is refused)."""
    options = lab_choices(name)
    if options is not None:
        try:
            ok = value in options and not isinstance(value, bool)
        except TypeError:
            ok = False
        return (value, None) if ok else (None, f"must be one of {', '.join(map(str, options))}")
    if name in BOOLEAN_FIELDS:
        return (value, None) if isinstance(value, bool) else (None, "must be true or false")
    b = bound(name)
    if b is None:
        return None, "is not a setting of the lab"
    low, high, integer, optional = b
    if value is None:
        return (None, None) if optional else (None, f"is required: a number between {low:g} and {high:g}")
    if isinstance(value, float) and integer and value.is_integer():
        value = int(value)
    elif isinstance(value, int) and not isinstance(value, bool) and not integer:
        value = float(value)
    issue = check_number(name, value, Bound(low, high, integer, "", optional))
    return (value, None) if issue is None else (None, issue.message)


def _from_text(name: str, text: str):
    """A link's text as the setting's value (then check_value decides); raise ValueError."""
    options = lab_choices(name)
    if options is not None:
        for option in options:
            if str(option) == text:
                return option
        raise ValueError(f"must be one of {', '.join(map(str, options))}, got {text[:30]!r}")
    if name in BOOLEAN_FIELDS:
        if text.lower() in ("true", "1", "yes", "on"):
            return True
        if text.lower() in ("false", "0", "no", "off"):
            return False
        raise ValueError(f"expected true or false, got {text[:30]!r}")
    b = bound(name)
    if b is not None and b[3] and text == "":
        return None
    return int(text) if b is not None and b[2] else float(text)


def parse_lab_query(search: str) -> tuple[dict, list[str]]:
    """A link -> (the lab's settings, a notice per value ignored)."""
    read, notices = query_pairs(search)
    pairs = dict(read)
    accepted = {}
    for key in sorted(pairs, key=lambda k: k != "preset"):  # the preset's notice first, as it is applied first
        if key not in URL_FIELDS:
            continue
        try:
            value, why = check_value(key, _from_text(key, pairs[key]))
            if why:
                raise ValueError(why)
        except (ValueError, TypeError) as e:
            notices.append(f"{key}: {e} (ignored)")
            continue
        accepted[key] = value
    return merge_values(lab_defaults(), accepted), notices


_BASELINES: dict[str, dict] = {}


def _baseline(name: str) -> dict:
    """The settings right after loading preset `name` into a fresh lab."""
    if name not in _BASELINES:
        _BASELINES[name] = merge_values(lab_defaults(), {"preset": name})
    return _BASELINES[name]


def encode_lab_query(values: dict) -> str:
    """The preset, then only what differs from it: a short link that reopens the same state."""
    base = _baseline(values["preset"])
    out = {"preset": values["preset"]} if values["preset"] != "default" else {}
    for key in URL_FIELDS:
        value = values[key]
        if key != "preset" and value != base[key]:
            out[key] = ("" if value is None else str(value).lower() if isinstance(value, bool)
                        else link_number(value) if isinstance(value, int | float) else str(value))
    return urlencode(out)
