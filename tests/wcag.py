"""WCAG 2.1's contrast ratio, for the tests that check colours the axe-core run cannot: text drawn
on the charts' canvases (tests/app/test_palette.py) and the outlines of controls (WCAG 1.4.11,
non-text contrast, which axe does not test: tests/browser/test_a11y.py, tests/site)."""

from __future__ import annotations

import re

AA_TEXT = 4.5  # success criterion 1.4.3, normal-size text
AA_NON_TEXT = 3.0  # success criterion 1.4.11, the parts of a control that identify it and its state


def rgba(colour: str) -> tuple[float, float, float, float]:
    """'#RRGGBB', 'rgb(r, g, b)' or 'rgba(r, g, b, a)' (as getComputedStyle writes it)."""
    if colour.startswith("#"):
        return (*(int(colour[i:i + 2], 16) for i in (1, 3, 5)), 1.0)
    parts = [float(x) for x in re.findall(r"[\d.]+", colour)]
    return (parts[0], parts[1], parts[2], parts[3] if len(parts) > 3 else 1.0)


def over(colour: str, behind: str) -> tuple[float, float, float]:
    """`colour` as seen over an opaque `behind` (its alpha blended)."""
    *fg, alpha = rgba(colour)
    bg = rgba(behind)[:3]
    return tuple(f * alpha + b * (1 - alpha) for f, b in zip(fg, bg, strict=True))


def luminance(rgb: tuple[float, float, float]) -> float:
    """Relative luminance of an sRGB colour (channels 0-255)."""
    r, g, b = (c / 255 / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """The contrast ratio of `a` over the opaque `b` (1 to 21)."""
    hi, lo = sorted((luminance(over(a, b)), luminance(rgba(b)[:3])), reverse=True)
    return (hi + 0.05) / (lo + 0.05)
