"""The serving lab's state in the URL: every setting that differs from its default, as
`name=value`, so a copied link reopens the same run. A preset in the link is applied first, then
the other values on top of it. Values the settings refuse become notices, never errors."""

from __future__ import annotations

from urllib.parse import urlencode

import param

from ..viewlayer.query_limits import query_pairs
from .settings import RUN_FIELDS, LabSettings

URL_FIELDS = ("preset", *RUN_FIELDS, "sweep_low_per_s", "sweep_high_per_s", "sweep_points")


def _convert(p: param.Parameter, text: str):
    if isinstance(p, param.Boolean):
        if text.lower() in ("true", "1", "yes", "on"):
            return True
        if text.lower() in ("false", "0", "no", "off"):
            return False
        raise ValueError(f"expected true or false, got {text[:30]!r}")
    if isinstance(p, param.Integer):
        return None if text == "" and p.allow_None else int(text)
    if isinstance(p, param.Number):
        return None if text == "" and p.allow_None else float(text)
    if isinstance(p, param.Selector):
        for option in p.objects.values() if isinstance(p.objects, dict) else p.objects:
            if str(option) == text:
                return option
        raise ValueError(f"must be one of {', '.join(map(str, p.objects))}, got {text[:30]!r}")
    return text


def apply_query(settings: LabSettings, query: str) -> list[str]:
    """Set what the query string holds (before a store watches the settings, so nothing runs
    yet); return a notice per value that was ignored."""
    read, notices = query_pairs(query)
    pairs = dict(read)
    order = (["preset"] if "preset" in pairs else []) + [k for k in pairs if k != "preset"]
    for key in order:
        if key not in URL_FIELDS:
            continue
        p = settings.param[key]
        try:
            setattr(settings, key, _convert(p, pairs[key]))  # the preset's watcher loads it; later keys override
        except (ValueError, TypeError) as e:
            notices.append(f"{key}: {e} (ignored)")
    return notices


_BASELINES: dict[str, dict] = {}


def _baseline(preset: str) -> dict:
    """The values a fresh LabSettings holds right after loading `preset`."""
    if preset not in _BASELINES:
        s = LabSettings()
        if preset != s.preset:
            s.preset = preset
        _BASELINES[preset] = {k: getattr(s, k) for k in URL_FIELDS}
    return _BASELINES[preset]


def encode_query(settings: LabSettings) -> str:
    """The preset, then only what differs from it: a short link that reopens the same state."""
    base = _baseline(settings.preset)
    out = {"preset": settings.preset} if settings.preset != settings.param["preset"].default else {}
    for key in URL_FIELDS:
        value = getattr(settings, key)
        if key != "preset" and value != base[key]:
            out[key] = "" if value is None else (str(value).lower() if isinstance(value, bool) else str(value))
    return urlencode(out)
