"""The URL query string <-> the panels' settings, standard library only (the Panel server and the
browser bridge both read and write links with it).

Reading is defensive: a link may have been edited by hand, truncated by a chat client, or built
to attack the page. Every key is checked on its own; a bad one is dropped with a notice that
names it and says what is allowed, and every good one is kept. Range and choice checks are sim's
own (`sim.evaluate` on a scenario that differs from the defaults in that one field), so the
notice reads exactly like the error the simulator would give.

Writing carries only the settings that differ from the defaults, so links stay short and
readable (`?prompt_tokens=32768&kv_dtype=fp8`).
"""

from __future__ import annotations

import math
import re
from urllib.parse import urlencode

from kvlab.sim import Scenario, evaluate
from kvlab.sim.scenario import FIELDS

from .config_paste import decode_from_link, encode_for_link, parse_config_text
from .format import link_number
from .query_limits import query_pairs
from .settings import COMBINED_FIELDS, CUSTOM_MODEL, FLAG_FIELDS, SCENARIO_FIELDS, choices, defaults

MAX_SHOWN_CHARS = 40  # how much of a rejected value a notice repeats
MAX_NAMED_UNKNOWN = 5  # unknown settings named in their one notice; the rest are counted
RESERVED_KEYS = {"theme", "embed"}  # read by the page shell, not by the settings
_INT = re.compile(r"[+-]?\d{1,12}")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d{1,3})?")


def shown(raw: str) -> str:
    return repr(raw if len(raw) <= MAX_SHOWN_CHARS else raw[:MAX_SHOWN_CHARS] + "\u2026")


def coerce(name: str, raw: str):
    """Text from the link -> a Python value of the setting's type, or raise ValueError(why)."""
    if name in FLAG_FIELDS:
        if raw.lower() in ("true", "1", "yes"):
            return True
        if raw.lower() in ("false", "0", "no"):
            return False
        raise ValueError("must be true or false")
    options = choices(name)
    if options is not None:
        values = list(options.values())
        for c in values:
            if str(c) == raw:
                return c
        raise ValueError(f"must be one of {', '.join(map(str, values))}")
    bound = FIELDS[name]
    if bound.optional and raw.lower() in ("", "none"):
        return None
    low, high = (int(bound.low), int(bound.high)) if bound.integer else (bound.low, bound.high)
    if bound.integer:
        if not _INT.fullmatch(raw):
            raise ValueError(f"must be an integer between {low:,} and {high:,}")
        return int(raw)
    if not _FLOAT.fullmatch(raw):
        raise ValueError(f"must be a number between {low:g} and {high:g}")
    value = float(raw)
    if not math.isfinite(value):
        raise ValueError(f"must be a number between {low:g} and {high:g}")
    return value


def sim_check(name: str, value) -> str | None:
    """sim's complaint about `name = value` on its own, or None if sim accepts it. A setting of
    COMBINED_FIELDS has no complaint on its own (its allowed values are its choices)."""
    if name in COMBINED_FIELDS:
        return None
    result = evaluate(Scenario(**{name: value}))
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
    errors = evaluate(Scenario(config=config)).errors
    if errors:
        return None, f"describes no model sim can read ({errors[0]['field']}: {errors[0]['message']})"
    return text, None


def unknown_notice(keys: list[str]) -> str:
    """One notice for every unknown setting of a link (a link with 60 stray keys gets one line, not
    60), naming the first few."""
    named = ", ".join(shown(k) for k in keys[:MAX_NAMED_UNKNOWN])
    if len(keys) == 1:
        return f"Ignored unknown setting {named} from the link."
    more = f" and {len(keys) - MAX_NAMED_UNKNOWN:,} more" if len(keys) > MAX_NAMED_UNKNOWN else ""
    return f"Ignored {len(keys):,} unknown settings from the link: {named}{more}."


def parse_query(search: str) -> tuple[dict, list[str]]:
    """('?a=1&b=2') -> ({setting name: value}, [notice, ...]). Never raises."""
    pairs, notices = query_pairs(search)  # every size limit, before any value is parsed
    values: dict = {}
    unknown: list[str] = []
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
            if key not in unknown:
                unknown.append(key)
            continue
        try:
            value = coerce(key, raw)
        except ValueError as e:
            notices.append(f"Ignored {key}={shown(raw)} from the link: {e}.")
            continue
        why = None if key == "model" else sim_check(key, value)
        if why:
            notices.append(f"Ignored {key}={shown(raw)} from the link: {why}.")
            continue
        values[key] = value
    if unknown:
        notices.append(unknown_notice(unknown))
    if values.get("model") == CUSTOM_MODEL and "config_text" not in values:
        notices.append("Ignored model=custom from the link: it came without a usable config; showing the default model.")
        values.pop("model")
    elif "config_text" in values:
        values["model"] = CUSTOM_MODEL
    return values, notices


def non_default(values: dict) -> dict:
    """Settings that differ from their defaults, in declaration order (what a link must carry)."""
    base = defaults()
    return {name: values[name] for name in ("model", "config_text", *SCENARIO_FIELDS[1:]) if values[name] != base[name]}


def encode_query(values: dict, config: dict | None = None) -> tuple[str, str | None]:
    """('?k=v&...' or '', note): the query string for the settings `values`; note says what a link
    cannot carry (a pasted config too large for a URL)."""
    items = []
    note = None
    for name, value in non_default(values).items():
        if name == "config_text":
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif value is None:
            value = "none"
        elif isinstance(value, int | float):
            value = link_number(value)
        items.append((name, str(value)))
    if values["model"] == CUSTOM_MODEL:
        encoded = encode_for_link(config) if config is not None else None
        if encoded is None:
            note = "This pasted config.json is too large (or not valid) to travel in a link; the link opens the default model."
            items = [(k, v) for k, v in items if k != "model"]
        else:
            items.append(("config", encoded))
    return ("?" + urlencode(items)) if items else "", note
