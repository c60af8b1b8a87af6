"""Turning pasted text into the config dict sim reads, refusing anything that is not one.

Pasted text is untrusted: it may be huge, not JSON, JSON but not an object, or deeply nested to
exhaust the parser. Each failure becomes an issue naming the `config` field, in the same
{field, message} shape as sim's own errors, so the page shows every problem the same way. What
*is* a sensible model is sim's decision (`sim.Scenario(config=...)`), not this module's.
"""

from __future__ import annotations

import base64
import binascii
import json

MAX_CONFIG_CHARS = 200_000  # a real config.json is 1-5 KB; 200 KB leaves room for long layer_types lists
MAX_NESTING = 20  # config.json nests 2-3 levels (text_config, rope_scaling); deeper is not a config


def _issue(message: str) -> list[dict]:
    return [{"field": "config", "message": message}]


def _depth(value, limit: int) -> int:
    """Nesting depth of parsed JSON, stopping early once `limit` is exceeded."""
    stack = [(value, 1)]
    deepest = 0
    while stack:
        item, d = stack.pop()
        deepest = max(deepest, d)
        if deepest > limit:
            return deepest
        if isinstance(item, dict):
            stack.extend((v, d + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, d + 1) for v in item)
    return deepest


def parse_config_text(text: str) -> tuple[dict | None, list[dict]]:
    """(config dict, []) for a JSON object, else (None, [issue]). Never raises."""
    if not isinstance(text, str) or not text.strip():
        return None, _issue("is empty: paste the contents of a Hugging Face config.json")
    if len(text) > MAX_CONFIG_CHARS:
        return None, _issue(f"is {len(text):,} characters; at most {MAX_CONFIG_CHARS:,} are accepted "
                            "(a config.json is a few KB)")
    # Python's json counts nesting against the recursion limit; count brackets first so a
    # 100,000-deep '[[[[...' cannot reach it.
    if text.count("[") + text.count("{") > 50_000:
        return None, _issue("has too many brackets to be a config.json")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        return None, _issue(f"is not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}")
    except (RecursionError, ValueError):
        return None, _issue("is not valid JSON")
    if not isinstance(value, dict):
        kind = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}.get(type(value), "null")
        return None, _issue(f"must be a JSON object ({{...}}), got {kind}")
    if _depth(value, MAX_NESTING) > MAX_NESTING:
        return None, _issue(f"nests deeper than {MAX_NESTING} levels; a config.json is two or three deep")
    return value, []


# ---- carrying a pasted config in a link ---------------------------------------------------
# The link holds the config as compact JSON in URL-safe base64: 1-3 KB for a real config, which
# every browser and server accepts. Larger ones are left out of the link (with a notice).
MAX_LINK_CONFIG_CHARS = 12_000


def encode_for_link(config: dict) -> str | None:
    text = json.dumps(config, separators=(",", ":"), sort_keys=True)
    encoded = base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")
    return encoded if len(encoded) <= MAX_LINK_CONFIG_CHARS else None


def decode_from_link(encoded: str) -> tuple[str | None, str | None]:
    """(config text, None) or (None, why it was refused)."""
    if len(encoded) > MAX_LINK_CONFIG_CHARS:
        return None, f"is {len(encoded):,} characters long; a link carries at most {MAX_LINK_CONFIG_CHARS:,}"
    try:
        raw = base64.b64decode(encoded + "=" * (-len(encoded) % 4), altchars=b"-_", validate=True)
        return raw.decode("utf-8"), None
    except (binascii.Error, ValueError):
        return None, "is not URL-safe base64 of a config.json"
