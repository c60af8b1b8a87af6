"""What the KV cache keeps, layer by layer and head by head: one panel per model (lesson A2 sets
multi-head, grouped-query, multi-query and latent attention side by side). Standard library only.

Each drawn layer is a row of query heads (rings) above what is cached for them (vermillion): a
square per KV head, each under the query heads that share it, with a line from every query head to
the square it reads; MLA caches one latent per layer, a bar under all the heads. A large model is
drawn as a slice, labelled ("first 4 of 36 layers, 16 of 32 query heads"), never as 1,000 cells.
Every count and the bytes per token come from sim's model description (`grid_model`).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import format as fmt
from .figure import figure, line, panel, rect, ring, svg, text
from .html import key_legend
from .palette import COLORS

LAYERS_DRAWN = 4
HEADS_DRAWN = 16
WIDTH = 300
LEFT = 46  # the layer labels' column
ROW = 44  # one layer: query heads, lines, cache
TOP = 8


@dataclass(frozen=True)
class GridModel:
    """One model's attention as the grid draws it; kv_heads is 0 for MLA (one latent per layer)."""

    name: str
    kind: str  # sim's Architecture.attention_kind: MHA, GQA, MQA or MLA
    layers: int
    q_heads: int
    kv_heads: int
    bytes_per_token: float


def grid_model(arch, bytes_per_token: float) -> GridModel:
    """The grid's data from sim's Architecture (its cached layers and heads) and sim's bytes per token."""
    kind = arch.attention_kind
    return GridModel(arch.name, kind, arch.kv_layers, arch.num_q_heads, 0 if kind == "MLA" else arch.num_kv_heads,
                     bytes_per_token)


def slice_label(m: GridModel) -> str:
    """What part of the model a panel draws, in words."""
    layers = min(m.layers, LAYERS_DRAWN)
    heads = min(m.q_heads, HEADS_DRAWN)
    part_l = f"first {layers} of {m.layers} layers" if layers < m.layers else f"all {m.layers} layers"
    part_h = f"{heads} of {m.q_heads} query heads" if heads < m.q_heads else f"all {m.q_heads} query heads"
    return f"{part_l}, {part_h}"


def description(m: GridModel) -> str:
    """The panel's text alternative: what each layer caches, and the bytes per token."""
    if m.kind == "MLA":
        cached = f"one latent shared by all {m.q_heads} query heads"
    elif m.kv_heads == m.q_heads:
        cached = f"{m.kv_heads} KV heads, one per query head"
    else:
        cached = f"{m.kv_heads} KV head{'s' if m.kv_heads > 1 else ''} shared by {m.q_heads} query heads " \
                 f"({m.q_heads // m.kv_heads} per KV head)"
    return (f"{m.kind}, {m.name}: each of {m.layers} layers caches {cached}; "
            f"{fmt.per_token_bytes(m.bytes_per_token)} per token. Drawn: {slice_label(m)}.")


def _layer(m: GridModel) -> str:
    """One layer's heads and cache, at y = 0 (every drawn layer is the same: the panel repeats it)."""
    heads = min(m.q_heads, HEADS_DRAWN)
    step = (WIDTH - LEFT - 4) / heads
    xs = [LEFT + step * (h + 0.5) for h in range(heads)]
    q_y, kv_y = 6, 26
    parts = []
    if m.kind == "MLA":
        parts += [line(x, q_y + 4, x, kv_y) for x in xs]
        parts.append(rect(xs[0] - 5, kv_y, xs[-1] - xs[0] + 10, 10, COLORS["kv"]))
    else:
        group = m.q_heads // m.kv_heads
        for g in range(-(-heads // group)):
            members = xs[g * group:(g + 1) * group]
            centre = sum(members) / len(members)
            parts += [line(x, q_y + 4, centre, kv_y) for x in members]
            parts.append(rect(centre - 5, kv_y, 10, 10, COLORS["kv"]))
    parts += [ring(x, q_y, 4) for x in xs]
    return "".join(parts)


def grid_panel(m: GridModel, index: int) -> str:
    """One model's panel; `index` makes the id of its repeated layer unique on the page."""
    layers = min(m.layers, LAYERS_DRAWN)
    height = TOP + layers * ROW + 14
    ref = f"kv-cache-grid-layer-{index}"
    body = f'<g id="{ref}" transform="translate(0 {TOP})">{_layer(m)}</g>'
    body += "".join(f'<use href="#{ref}" y="{i * ROW}"/>' for i in range(1, layers))
    body += "".join(text(0, TOP + i * ROW + 20, f"layer {i + 1}", cls="small") for i in range(layers))
    body += text(WIDTH, height - 2, slice_label(m), anchor="end", cls="small")
    head = f"{m.kind} \u00b7 {m.name}: {fmt.per_token_bytes(m.bytes_per_token)} per token"
    return panel(head, svg(description(m), WIDTH, height, body))


def cache_grid_html(models: list[GridModel], caption: str) -> str:
    """The figure: one panel per model, a legend and the caption (all text escaped)."""
    legend = key_legend([(COLORS["kv"], "cached for every token: a KV head's K and V, or MLA's latent")])
    return figure("cache-grid", [grid_panel(m, i) for i, m in enumerate(models)], caption,
                  legend + '<p class="kv-caption">Rings are query heads; each line joins one to what it reads.</p>')
