"""Size limits on a page's URL query, applied before anything parses a value.

Every reader of the query goes through `query_pairs`: the app's and the lab's link parsers, and
Panel's own `Location.query_params` (which would otherwise call int() on a 5,000-digit value and
raise on every page; app/server/patches.py's `guard_location` wraps it). Standard library only.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

MAX_QUERY_CHARS = 32_000
MAX_KEYS = 64
# No setting's value is longer than this (a catalog id, a 19-digit seed, a float in full): a longer
# one is dropped with a notice before anything parses it (a 5,000-digit integer would otherwise
# reach int() and param). Only `config` (a base64 config.json) may be longer.
MAX_VALUE_CHARS = 64
LONG_VALUE_KEYS = frozenset({"config"})
MAX_SHOWN_CHARS = 40


def _shown(raw: str) -> str:
    return repr(raw if len(raw) <= MAX_SHOWN_CHARS else raw[:MAX_SHOWN_CHARS] + "\u2026")


def query_pairs(search: str) -> tuple[list[tuple[str, str]], list[str]]:
    """('?a=1&b=2') -> ([(key, raw value), ...], [notice, ...]) with every size limit applied
    before any value is parsed: the whole query (MAX_QUERY_CHARS), the number of settings
    (MAX_KEYS) and each key and value (MAX_VALUE_CHARS; `config` may be longer). Every page
    that reads the URL reads it through this. Never raises."""
    search = search if isinstance(search, str) else ""
    search = search[1:] if search.startswith("?") else search
    if not search:
        return [], []
    if len(search) > MAX_QUERY_CHARS:
        return [], [f"The link's settings are {len(search):,} characters long (at most {MAX_QUERY_CHARS:,}); "
                    "all were ignored and the defaults are shown."]
    notices: list[str] = []
    pairs = parse_qsl(search, keep_blank_values=True)
    if len(pairs) > MAX_KEYS:
        notices.append(f"The link has {len(pairs)} settings; only the first {MAX_KEYS} were read.")
        pairs = pairs[:MAX_KEYS]
    kept = []
    for key, raw in pairs:
        if len(key) > MAX_VALUE_CHARS:
            notices.append(f"Ignored a setting whose name is {len(key):,} characters long (at most {MAX_VALUE_CHARS}).")
        elif len(raw) > MAX_VALUE_CHARS and key not in LONG_VALUE_KEYS:
            notices.append(f"Ignored {key}={_shown(raw)} from the link: it is {len(raw):,} characters long "
                           f"(at most {MAX_VALUE_CHARS}); the default is shown.")
        else:
            kept.append((key, raw))
    return kept, notices
