"""The URL query string <-> Settings: a copied link reopens exactly the state it was copied from.

Reading and writing links is `viewlayer.query` (standard library, shared with the browser
bridge); this module adds what needs param: checking a notebook's keyword arguments.
"""

from __future__ import annotations

import json

from ..viewlayer import query
from ..viewlayer.query import MAX_SHOWN_CHARS, parse_query, shown
from ..viewlayer.query_limits import MAX_KEYS, MAX_QUERY_CHARS, MAX_VALUE_CHARS  # noqa: F401 (re-exported)
from .state import CUSTOM_MODEL, SCENARIO_FIELDS, Settings

__all__ = ["MAX_KEYS", "MAX_QUERY_CHARS", "apply_values", "encode_query", "parse_query"]


def encode_query(settings: Settings, config: dict | None = None) -> tuple[str, str | None]:
    """('?k=v&...' or '', note) for a Settings object (see viewlayer.query.encode_query)."""
    return query.encode_query(settings.values(), config)


def apply_values(settings: Settings, values: dict) -> list[str]:
    """Set Python values (a notebook's keyword arguments) on `settings`, each checked like a link
    value: an unknown name or a value sim rejects is skipped with a notice, the rest applied."""
    notices = []
    good = {}
    for key, value in values.items():
        if key == "config_text" or key == "config":
            text = value if isinstance(value, str) else json.dumps(value)
            good["config_text"] = text
            good.setdefault("model", CUSTOM_MODEL)
            continue
        if key not in SCENARIO_FIELDS:
            notices.append(f"Ignored unknown setting {shown(str(key))}; known settings: {', '.join(SCENARIO_FIELDS)}.")
            continue
        why = None
        if key != "model":
            try:
                why = query.sim_check(key, value)
            except (TypeError, ValueError) as e:
                why = str(e)
        if why is None:
            try:
                Settings(**{key: value})  # param's own type and bounds check, on a scratch copy
            except (TypeError, ValueError):
                why = _coerce_error(key)
        if why:
            text = repr(value)
            text = text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS] + "\u2026"
            notices.append(f"Ignored {key}={text}: {why}.")
            continue
        good[key] = value
    settings.param.update(**good)
    return notices


def _coerce_error(name: str) -> str:
    try:
        query.coerce(name, "\x00")
    except ValueError as e:
        return str(e)
    return "is not allowed"
