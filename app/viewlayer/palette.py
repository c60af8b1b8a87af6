"""Colours, chosen once so the same quantity has the same colour in every panel.

Okabe and Ito's eight-colour palette stays distinguishable under the common colour-vision
deficiencies (deuteranopia, protanopia, tritanopia). Each colour is bound to a meaning, not to a
chart: weights are blue wherever weights appear (HBM bar, step breakdown), the KV cache is
vermillion wherever the cache appears, and so on.
"""

from __future__ import annotations

OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "bluish_green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish_purple": "#CC79A7",
}

# Meaning -> colour. Neutral grey (not one of the eight) marks memory the engine never touches.
COLORS = {
    "context_reserve": "#9A9A9A",
    "non_torch": OKABE_ITO["reddish_purple"],
    "weights": OKABE_ITO["blue"],
    "activation": OKABE_ITO["yellow"],
    "kv_used": OKABE_ITO["vermillion"],
    "kv_free": "#F2C7A5",  # vermillion lightened: same hue family as the used pool, clearly "empty"
    "kv": OKABE_ITO["vermillion"],
    "compute": OKABE_ITO["bluish_green"],
    "allreduce": OKABE_ITO["reddish_purple"],
    "overhead": "#9A9A9A",
    "prefill": OKABE_ITO["orange"],
    "decode": OKABE_ITO["sky_blue"],
    "roof": "#6B6B6B",
}


def ink(dark: bool) -> str:
    """Text colour on the page background."""
    return "#EDEDED" if dark else "#1F2328"


def paper(dark: bool) -> str:
    """The page background behind the charts (their own fill is transparent): Bootstrap 5's
    --bs-body-bg in the light and dark themes, as Panel's Bootstrap template sets it."""
    return "#212529" if dark else "#FFFFFF"


def muted(dark: bool) -> str:
    return "#A0A7B0" if dark else "#5B6470"
