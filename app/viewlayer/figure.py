"""The pieces every teaching figure shares (cache_grid, block_map, step_timeline): inline SVG panels
in a figure with a caption, their stylesheet, and escaped text. Standard library only, so the same
functions run under CPython and Pyodide, and a figure is plain HTML computed when its page is built.

Layout: a figure is a grid of panels, side by side where the page is wide and stacked where it is
narrow, each panel one SVG whose viewBox is about as wide as a phone (300 units), so its words stay
near their written size from 320 px to a desktop column. Colours: fills from palette.COLORS (one
meaning, one colour); words and lines in `currentColor`, the page's ink in either theme. No font is
named: the SVG's words take the page's own font.
"""

from __future__ import annotations

from .html import esc, shipped_css

FIGURE_CSS = shipped_css("""
.kv-fig { margin: 12px 0; color: var(--kv-ink); }
.kv-fig-panels { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 250px), 1fr)); gap: 12px 20px; }
/* Panels compared along one time axis sit one above the other at every width. */
.kv-fig-panels.stacked { grid-template-columns: minmax(0, 1fr); max-width: 36rem; }
.kv-fig-panel { min-width: 0; max-width: 30rem; }
.kv-fig-head { margin: 0 0 2px; font-size: 15px; line-height: 1.35; overflow-wrap: anywhere; }
.kv-fig svg { display: block; width: 100%; height: auto; }
.kv-fig text { fill: currentColor; font-size: 12px; }
.kv-fig text.small { font-size: 11px; }
.kv-fig figcaption { font-size: 15px; margin-top: 6px; }
.kv-fig .kv-legend { margin-top: 6px; font-size: 14px; }
/* A key's words wrap beside its swatch at 320 px rather than push the page wider. */
.kv-fig .kv-key { white-space: normal; }
/* A figure whose parts a click selects (the step timeline): the selected one outlined in the ink, and the
   line that names it a 44 px target in the controls' outline (app/templates/drag.js moves the selection). */
.kv-fig [data-kv-step] { cursor: pointer; }
.kv-fig .kv-picked rect:not([fill="transparent"]) { stroke: currentColor; stroke-width: 2; }
.kv-fig .kv-picked rect[fill="transparent"] { stroke: currentColor; stroke-width: 0.8; stroke-dasharray: 2 2; }
.kv-fig .kv-pick { margin: 4px 0 0; min-height: 44px; padding: 6px 10px; font-size: 14px; line-height: 1.4;
  border: 1px solid var(--kv-control-border, #6E7781); border-radius: 8px; }
""")


def num(x: float) -> str:
    """A coordinate with at most one decimal: the SVG stays small, and a tenth of a unit is invisible."""
    return f"{x:.1f}".rstrip("0").rstrip(".")


def rect(x: float, y: float, w: float, h: float, fill: str, outline: bool = False) -> str:
    """A filled rectangle, or (`outline`) one drawn in the page's ink with `fill` inside."""
    stroke = ' stroke="currentColor"' if outline else ""
    return f'<rect x="{num(x)}" y="{num(y)}" width="{num(w)}" height="{num(h)}" fill="{esc(fill)}"{stroke}/>'


# Lines and rings carry their ink as attributes, not classes: a layer repeated with <use> is a
# shadow copy that the page's selectors do not reach.
def line(x1: float, y1: float, x2: float, y2: float) -> str:
    return f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" stroke="currentColor"/>'


def ring(x: float, y: float, r: float) -> str:
    return f'<circle cx="{num(x)}" cy="{num(y)}" r="{num(r)}" fill="none" stroke="currentColor"/>'


def text(x: float, y: float, words: str, anchor: str = "start", cls: str = "") -> str:
    klass = f' class="{esc(cls)}"' if cls else ""
    return f'<text x="{num(x)}" y="{num(y)}" text-anchor="{esc(anchor)}"{klass}>{esc(words)}</text>'


def svg(label: str, width: float, height: float, body: str) -> str:
    """One panel's drawing: an image whose accessible name (`label`) says what it shows, with its numbers."""
    return (f'<svg role="img" aria-label="{esc(label)}" viewBox="0 0 {num(width)} {num(height)}" width="100%" '
            f'preserveAspectRatio="xMinYMin meet">{body}</svg>')


def panel(head: str, drawing: str) -> str:
    """A panel: its heading (plain text, escaped) above its drawing."""
    return f'<div class="kv-fig-panel"><p class="kv-fig-head">{esc(head)}</p>{drawing}</div>'


def figure(key: str, panels: list[str], caption: str, legend: str = "", stacked: bool = False) -> str:
    """The whole figure: panels (already HTML), a legend (html.key_legend) and a caption (escaped here)."""
    cls = "kv-fig-panels stacked" if stacked else "kv-fig-panels"
    return (f'<figure class="kv-fig" data-kv="fig-{esc(key)}"><div class="{cls}">{"".join(panels)}</div>{legend}'
            f'<figcaption>{esc(caption)}</figcaption></figure>')
