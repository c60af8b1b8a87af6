"""Small HTML builders for the app's text panes, with escaping built in.

Every string that reaches the page through these helpers is HTML-escaped, including text that
sim produced: a pasted config.json can put anything in `_name_or_path`, and sim echoes the model
name into its log lines. Nothing here ever passes markup through from the user, so a
`<script>` or `onerror=` payload arrives on screen as visible text.
"""

from __future__ import annotations

import re
from html import escape


def shipped_css(text: str) -> str:
    """`text` without its /* comments */: they say why a rule is there for whoever edits it here,
    and every page of the static site would otherwise carry them, most twice (its 30 MB budget)."""
    return re.sub(r"[ \t]*/\*.*?\*/[ \t]*\n?", "", text, flags=re.S)

# Panel's design variables (--panel-*) switch with the light/dark theme, and custom properties
# pierce the shadow DOM each pane lives in, so one stylesheet serves both themes.
BASE_CSS = shipped_css("""
:host { --kv-ink: var(--panel-on-background-color, #1f2328); --kv-surface: var(--panel-surface-color, #f6f8fa);
        --kv-border: var(--panel-border-color, #d0d7de); width: 100%; }
.kv-tiles { display: grid; grid-template-columns: repeat(auto-fit, minmax(158px, 1fr)); gap: 12px; width: 100%; }
.kv-tiles.three { grid-template-columns: repeat(3, minmax(0, 1fr)); }
@media (max-width: 700px) { .kv-tiles, .kv-tiles.three { grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 8px; } }
.kv-tile { background: var(--kv-surface); border: 1px solid var(--kv-border); border-radius: 10px;
           padding: 10px 14px 12px; border-top: 5px solid var(--kv-accent, #888); min-width: 0; container-type: inline-size; }
.kv-tile .label { font-size: 0.82rem; text-transform: uppercase; letter-spacing: 0.04em; opacity: 0.75; }
/* The number's size follows the window, capped by its own tile's width (cqi): six tiles in a row
   (the serving lab at 1,400 px) keep "96.8 ms" on one line instead of setting the unit under it. */
.kv-tile .value { font-size: min(clamp(1.7rem, 2.4vw, 2.4rem), max(1.3rem, 20cqi)); font-weight: 700; line-height: 1.15;
                  font-variant-numeric: tabular-nums; }
/* The digits never break; the unit goes under them when the card is too narrow for both (it never spills out). */
.kv-tile .value span { white-space: nowrap; }
.kv-tile .value small { font-size: 1rem; font-weight: 600; opacity: 0.85; margin-left: 2px; display: inline-block; white-space: nowrap; }
.kv-tile .caption { font-size: 0.85rem; opacity: 0.85; min-height: 1.2em; }
.kv-tile.hero .value { font-size: min(clamp(2rem, 3.2vw, 3.1rem), max(1.5rem, 24cqi)); }
.kv-formula { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.95rem;
              background: var(--kv-surface); border: 1px solid var(--kv-border); border-radius: 10px; padding: 12px 14px; }
.kv-formula .generic { opacity: 0.7; margin-bottom: 6px; }
.kv-formula .filled { font-size: 1.05rem; font-weight: 600; overflow-wrap: anywhere; }
.kv-formula .per-seq { margin-top: 8px; }
.kv-formula .model { font-family: system-ui, sans-serif; font-weight: 700; margin-bottom: 6px; overflow-wrap: anywhere; }
.kv-console { background: #161b22; color: #e6edf3; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
              font-size: 0.85rem; border-radius: 10px; padding: 10px 14px; line-height: 1.5; overflow-x: auto; }
.kv-console .line { white-space: pre-wrap; overflow-wrap: anywhere; }
.kv-console .line::before { content: "INFO  "; color: #7ee787; }
.kv-console .line.error { color: #ffb4a2; }
.kv-console .line.error::before { content: ""; }
.kv-console .line.warning { color: #f2cc60; }
.kv-console .line.warning::before { content: ""; }
.kv-console .line.warn::before { content: "WARN  "; color: #f2cc60; }
.kv-notice { border-radius: 8px; padding: 8px 12px; margin: 0 0 6px; border-left: 5px solid; font-size: 0.95rem; }
.kv-notice ul { margin: 4px 0 0; padding-left: 20px; }
.kv-notice.error { background: rgba(213, 94, 0, 0.12); border-color: #D55E00; }
.kv-notice.warn { background: rgba(230, 159, 0, 0.14); border-color: #E69F00; }
.kv-notice.info { background: rgba(86, 180, 233, 0.14); border-color: #56B4E9; }
.kv-notice code { overflow-wrap: anywhere; }
.kv-legend { display: flex; flex-wrap: wrap; gap: 6px 18px; font-size: 0.9rem; }
.kv-key { white-space: nowrap; display: inline-flex; align-items: center; gap: 6px; }
.kv-key .swatch { width: 14px; height: 14px; border-radius: 3px; border: 1px solid rgba(0,0,0,0.25); display: inline-block; }
.kv-caption { font-size: 0.9rem; opacity: 0.85; margin: 0; }
.kv-chart-title { font-size: 15px; font-weight: 700; line-height: 1.3; margin: 0; overflow-wrap: anywhere; }
""")


def esc(text) -> str:
    return escape(str(text), quote=True)


def tile(key: str, label: str, value: str, caption: str = "", accent: str | None = None, unit: str = "",
         hero: bool = False) -> str:
    """One big number. `key` becomes data-kv on the value, which the browser tests read. A unit
    written into the value ("27.9 ms") is split off and set smaller, so the digits get the room."""
    if not unit and " " in value:
        value, unit = value.rsplit(" ", 1)
        unit = " " + unit
    style = f' style="--kv-accent: {esc(accent)}"' if accent else ""
    unit_html = f"<small>{esc(unit)}</small>" if unit else ""
    cls = "kv-tile hero" if hero else "kv-tile"
    return (f'<div class="{cls}"{style}><div class="label">{esc(label)}</div>'
            f'<div class="value"><span data-kv="{esc(key)}">{esc(value)}</span>{unit_html}</div>'
            f'<div class="caption" data-kv="{esc(key)}_caption">{esc(caption)}</div></div>')


def tiles(*items: str, columns: int | None = None) -> str:
    cls = "kv-tiles three" if columns == 3 else "kv-tiles"
    return f'<div class="{cls}">{"".join(items)}</div>'


def notice(kind: str, title: str, lines: list[str], key: str) -> str:
    """kind: error | warn | info."""
    items = "".join(f"<li>{esc(line)}</li>" for line in lines)
    return f'<div class="kv-notice {esc(kind)}" role="alert" data-kv="{esc(key)}"><strong>{esc(title)}</strong><ul>{items}</ul></div>'


def console(lines: list[str]) -> str:
    rows = []
    for line in lines:
        cls = "line error" if line.startswith("ERROR") else "line warning" if line.startswith("WARNING") else "line"
        rows.append(f'<div class="{cls}">{esc(line)}</div>')
    return f'<div class="kv-console" role="log" aria-label="engine log" tabindex="0" data-kv="log">{"".join(rows)}</div>'


def chart_title(text: str) -> str:
    """A chart's title, written above its canvas (app/views/base.chart_title_pane says why)."""
    return f'<p class="kv-chart-title">{esc(text)}</p>'


def _swatch(color: str) -> str:
    return f'<span class="swatch" style="background:{esc(color)}"></span>'


def legend(items: list[tuple[str, str, str, str]]) -> str:
    """[(colour, name, value, key)] as a wrapping row of swatches."""
    cells = "".join(f'<span class="kv-key">{_swatch(color)}{esc(name)} <b data-kv="hbm_{esc(key)}">{esc(value)}</b></span>'
                    for color, name, value, key in items)
    return f'<div class="kv-legend">{cells}</div>'


def note(text: str, css_class: str) -> str:
    """One short paragraph of text (escaped) under a chart."""
    return f'<p class="{esc(css_class)}">{esc(text)}</p>'


def key_legend(items: list[tuple[str, str]]) -> str:
    """[(colour, name)]: what each colour of a chart means, as a row that wraps in a narrow window
    (a Bokeh legend is one row that runs past the canvas's edges there)."""
    cells = "".join(f'<span class="kv-key">{_swatch(color)}{esc(name)}</span>' for color, name in items)
    return f'<div class="kv-legend">{cells}</div>'

