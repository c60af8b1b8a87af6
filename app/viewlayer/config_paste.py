"""Turning pasted text into the config dict sim reads, refusing anything that is not one.

Pasted text is untrusted: it may be huge, not JSON, JSON but not an object, or deeply nested to
exhaust the parser. It goes through the reader of every file a user hands kvlab (sim.userfile's
CONFIG_JSON, which `kvlab --config` reads too), so a paste and a file share their limits and their
text rules (byte-order mark, line endings). Each failure becomes an issue naming the `config`
field, in the same {field, message} shape as sim's own errors, so the page shows every problem the
same way. What *is* a sensible model is sim's decision (`sim.Scenario(config=...)`), not this module's.
"""

from __future__ import annotations

import base64
import binascii
import json

from kvlab.sim.userfile import CONFIG_JSON, MAX_CONFIG_BYTES, FileProblem

MAX_CONFIG_CHARS = MAX_CONFIG_BYTES  # a paste is limited in characters, a file in bytes: the same number


def parse_config_text(text: str) -> tuple[dict | None, list[dict]]:
    """(config dict, []) for a JSON object, else (None, [issue]). Never raises."""
    if not isinstance(text, str):
        text = ""
    try:
        return CONFIG_JSON.parse(text), []
    except FileProblem as e:
        return None, [{"field": "config", "message": m} for m in e.messages()]


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
