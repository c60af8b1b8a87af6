"""The URL query string <-> Settings: a copied link reopens exactly the state it was copied from.

Reading is defensive: a link may have been edited by hand, truncated by a chat client, or built
to attack the page. Every key is checked on its own; a bad one is dropped with a notice that
names it and says what is allowed, and every good one is kept. Range and choice checks are sim's
own (`sim.evaluate` on a scenario that differs from the defaults in that one field), so the
notice reads exactly like the error the simulator would give.

Writing carries only the settings that differ from the defaults, so links stay short and
readable (`?prompt_tokens=32768&kv_dtype=fp8`).
"""

from __future__ import annotations

import json
import math
import re
from urllib.parse import urlencode

import param
from kvlab.sim import Scenario

from kvlab import sim

from .config_paste import decode_from_link, encode_for_link, parse_config_text
from .query_limits import MAX_KEYS, MAX_QUERY_CHARS, MAX_VALUE_CHARS, query_pairs  # noqa: F401 (re-exported)
from .state import CUSTOM_MODEL, SCENARIO_FIELDS, Settings

MAX_SHOWN_CHARS = 40  # how much of a rejected value a notice repeats
RESERVED_KEYS = {"theme"}  # read by Panel's template, not by the app
_INT = re.compile(r"[+-]?\d{1,12}")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d{1,3})?")


def _shown(raw: str) -> str:
    return repr(raw if len(raw) <= MAX_SHOWN_CHARS else raw[:MAX_SHOWN_CHARS] + "\u2026")


def _coerce(p: param.Parameter, raw: str):
    """Text from the link -> a Python value of the param's type, or raise ValueError(why)."""
    if isinstance(p, param.Boolean):
        if raw.lower() in ("true", "1", "yes"):
            return True
        if raw.lower() in ("false", "0", "no"):
            return False
        raise ValueError("must be true or false")
    if isinstance(p, param.Selector):
        choices = list(p.objects.values()) if isinstance(p.objects, dict) else list(p.objects)
        for c in choices:
            if str(c) == raw:
                return c
        raise ValueError(f"must be one of {', '.join(map(str, choices))}")
    if p.allow_None and raw.lower() in ("", "none"):
        return None
    low, high = p.bounds
    if isinstance(p, param.Integer):
        if not _INT.fullmatch(raw):
            raise ValueError(f"must be an integer between {low:,} and {high:,}")
        return int(raw)
    if not _FLOAT.fullmatch(raw):
        raise ValueError(f"must be a number between {low:g} and {high:g}")
    value = float(raw)
    if not math.isfinite(value):
        raise ValueError(f"must be a number between {low:g} and {high:g}")
    return value


def _sim_check(name: str, value) -> str | None:
    """sim's complaint about `name = value` on its own, or None if sim accepts it."""
    result = sim.evaluate(Scenario(**{name: value}))
    for issue in result.errors:
        if issue["field"] == name:
            return issue["message"]
    return None


def _config_from_link(raw: str) -> tuple[str | None, str | None]:
    text, why = decode_from_link(raw)
    if text is None:
        return None, why
    config, issues = parse_config_text(text)
    if issues:
        return None, issues[0]["message"]
    errors = sim.evaluate(Scenario(config=config)).errors
    if errors:
        return None, f"describes no model sim can read ({errors[0]['field']}: {errors[0]['message']})"
    return text, None


def parse_query(search: str) -> tuple[dict, list[str]]:
    """('?a=1&b=2') -> ({param name: value}, [notice, ...]). Never raises."""
    pairs, notices = query_pairs(search)
    values: dict = {}
    known = set(SCENARIO_FIELDS)
    for key, raw in pairs:  # a repeated key: the last one wins, as in most web frameworks
        if key in RESERVED_KEYS:
            continue
        if key == "config":
            text, why = _config_from_link(raw)
            if text is None:
                notices.append(f"Ignored config from the link: it {why}.")
                values.pop("config_text", None)
            else:
                values["config_text"] = text
            continue
        if key not in known:
            notices.append(f"Ignored unknown setting {_shown(key)} from the link.")
            continue
        try:
            value = _coerce(Settings.param[key], raw)
        except ValueError as e:
            notices.append(f"Ignored {key}={_shown(raw)} from the link: {e}.")
            continue
        why = None if key == "model" else _sim_check(key, value)
        if why:
            notices.append(f"Ignored {key}={_shown(raw)} from the link: {why}.")
            continue
        values[key] = value
    if values.get("model") == CUSTOM_MODEL and "config_text" not in values:
        notices.append("Ignored model=custom from the link: it came without a usable config; showing the default model.")
        values.pop("model")
    elif "config_text" in values:
        values["model"] = CUSTOM_MODEL
    return values, notices


def encode_query(settings: Settings, config: dict | None = None) -> tuple[str, str | None]:
    """('?k=v&...' or '', note): the query string for this state; note says what a link cannot
    carry (a pasted config too large for a URL)."""
    items = []
    note = None
    for name, value in settings.non_default().items():
        if name == "config_text":
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif value is None:
            value = "none"
        items.append((name, str(value)))
    if settings.model == CUSTOM_MODEL:
        encoded = encode_for_link(config) if config is not None else None
        if encoded is None:
            note = "This pasted config.json is too large (or not valid) to travel in a link; the link opens the default model."
            items = [(k, v) for k, v in items if k != "model"]
        else:
            items.append(("config", encoded))
    return ("?" + urlencode(items)) if items else "", note


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
            notices.append(f"Ignored unknown setting {_shown(str(key))}; known settings: {', '.join(SCENARIO_FIELDS)}.")
            continue
        why = None
        if key != "model":
            try:
                why = _sim_check(key, value)
            except (TypeError, ValueError) as e:
                why = str(e)
        if why is None:
            try:
                Settings(**{key: value})  # param's own type and bounds check, on a scratch copy
            except (TypeError, ValueError):
                why = _coerce_error(settings.param[key])
        if why:
            shown = repr(value)
            shown = shown if len(shown) <= MAX_SHOWN_CHARS else shown[:MAX_SHOWN_CHARS] + "\u2026"
            notices.append(f"Ignored {key}={shown}: {why}.")
            continue
        good[key] = value
    settings.param.update(**good)
    return notices


def _coerce_error(p: param.Parameter) -> str:
    try:
        _coerce(p, "\x00")
    except ValueError as e:
        return str(e)
    return "is not allowed"
