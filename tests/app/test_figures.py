"""The teaching figures (app/viewlayer: cache_grid, block_map, step_timeline): what they draw is sim's,
every text is escaped, and each panel is drawn for a phone's width in the page's own ink and font."""

from __future__ import annotations

import re
from html import unescape

import pytest
from kvlab.app.viewlayer import block_map, cache_grid, step_timeline
from kvlab.app.viewlayer.format import per_token_bytes
from kvlab.app.viewlayer.palette import COLORS
from kvlab.lessons.content import a2_architecture, a5_paging, c3_chunked
from kvlab.sim import evaluate
from kvlab.sim.block_map import HELD, RESERVED, STRANDED
from kvlab.sim.resolve import resolve_architecture

EVIL = '<script>alert(1)</script>"&'


def _labels(html: str) -> list[str]:
    return re.findall(r'<svg role="img" aria-label="([^"]+)"', html)


@pytest.fixture(scope="module")
def figures():
    return {"cache-grid": a2_architecture.build().steps[1].figure, "block-map": a5_paging.map_figure(),
            "step-timeline": c3_chunked.timeline_figure()}


@pytest.mark.parametrize("key", ["cache-grid", "block-map", "step-timeline"])
def test_each_figure_is_named_narrow_and_inked_by_the_page(figures, key):
    html = figures[key]
    assert f'data-kv="fig-{key}"' in html and "<figcaption>" in html
    boxes = re.findall(r'viewBox="0 0 ([\d.]+) ([\d.]+)" width="100%"', html)
    assert boxes and len(boxes) == len(_labels(html)) and all(float(w) <= 320 for w, _ in boxes)
    assert "font-family" not in html and "font-size" not in html
    # Fills are the palette's; lines and words take the page's ink (currentColor) in either theme.
    assert set(re.findall(r'fill="(#[0-9A-Fa-f]{6})"', html)) <= set(COLORS.values())
    assert not re.search(r'stroke="#', html)


def test_the_cache_grid_draws_sims_heads_and_bytes():
    scenarios = [a2_architecture.BASE, a2_architecture.one_kv_head(), a2_architecture.BASE.with_(model="deepseek-v3")]
    models = [cache_grid.grid_model(resolve_architecture(s), evaluate(s).kv_bytes_per_token) for s in scenarios]
    gqa, mqa, mla = models
    assert (gqa.kind, gqa.layers, gqa.q_heads, gqa.kv_heads) == ("GQA", 36, 32, 8)
    assert (mqa.kind, mqa.kv_heads, mla.kind, mla.kv_heads, mla.layers) == ("MQA", 1, "MLA", 0, 61)
    for m in models:
        panel = cache_grid.grid_panel(m, 0)
        layer = panel[panel.index("<g "):panel.index("</g>")]
        drawn = min(m.q_heads, cache_grid.HEADS_DRAWN)
        assert layer.count("<circle") == drawn  # one ring per query head drawn
        squares = layer.count(f'fill="{COLORS["kv"]}"')
        assert squares == (1 if m.kind == "MLA" else -(-drawn // (m.q_heads // m.kv_heads)))
        assert panel.count("<use ") == min(m.layers, cache_grid.LAYERS_DRAWN) - 1
        assert per_token_bytes(evaluate(scenarios[models.index(m)]).kv_bytes_per_token) in _labels(panel)[0]
    assert "first 4 of 36 layers, 16 of 32 query heads" in cache_grid.slice_label(gqa)


def test_the_block_map_draws_sims_cells():
    maps = a5_paging.maps()
    span = max(m.steps for m in maps)
    for m in maps:
        panel = block_map.map_panel(m, span)
        scale = (block_map.RIGHT - block_map.LEFT) / span
        for state in (HELD, RESERVED, STRANDED):
            widths = re.findall(rf'width="([\d.]+)" height="{block_map.ROW}" fill="{block_map.FILLS[state]}"', panel)
            cells = sum(row.count(state) for row in m.cells)
            assert sum(float(w) for w in widths) == pytest.approx(cells * scale, rel=0.01, abs=0.5)
        assert f"At most {m.peak_running} of 6 requests" in _labels(panel)[0]


def test_the_step_timeline_draws_sims_steps():
    whole = c3_chunked.timeline("fcfs")
    p = c3_chunked._panel("whole", whole)
    window = (p.arrival_s - 0.1, p.first_token_s + 0.25)
    html = step_timeline.timeline_panel(p, window)
    inside = [s for s in whole.steps if s.end_s > window[0] and s.start_s < window[1]]
    assert html.count(f'fill="{COLORS["prefill"]}"') == sum(1 for s in inside if s.prompt_tokens)
    assert html.count(f'fill="{COLORS["decode"]}"') == sum(1 for s in inside if s.decode_seqs)
    gap = whole.longest_decode_gap()
    assert f"longest gap {step_timeline.seconds(gap[1] - gap[0])}" in html
    assert f"TTFT {step_timeline.seconds(c3_chunked.long_prompt_ttft_s(whole))}" in html


def test_each_step_of_the_timeline_is_selectable_and_says_what_sims_step_did():
    """A step a click selects carries the words the line under the panel shows for it: sim's prompt tokens
    and running answers of that step, its number of the steps shown; the step the long prompt enters is
    selected at first."""
    whole = c3_chunked.timeline("fcfs")
    p = c3_chunked._panel("whole", whole)
    window = (p.arrival_s - 0.1, p.first_token_s + 0.25)
    html = step_timeline.timeline_panel(p, window)
    inside = [s for s in whole.steps if s.end_s > window[0] and s.start_s < window[1]]
    says = [unescape(m) for m in re.findall(r'data-kv-says="([^"]*)"', html)]
    assert len(says) == len(inside) and re.findall(r'data-kv-step="(\d+)"', html) == [str(k) for k in range(1, len(inside) + 1)]
    for k, (step, words) in enumerate(zip(inside, says, strict=True), 1):
        assert words.startswith(f"Step {k} of {len(inside)}: starts ")
        assert (f"computes {step.prompt_tokens:,} prompt tokens" if step.prompt_tokens else "computes no prompt tokens") in words
        assert (f"gives {step.decode_seqs:,} running answer" if step.decode_seqs else "gives no running answer") in words
    first = next(k for k, s in enumerate(inside, 1) if s.prompt_tokens and s.start_s >= p.arrival_s)
    assert f'aria-valuenow="{first}"' in html and html.count("kv-picked") == 1
    assert re.search(rf'<g data-kv-step="{first}" data-kv-says="[^"]*" class="kv-picked">', html)


def test_every_text_is_escaped():
    m = cache_grid.GridModel(EVIL, "GQA", 2, 4, 2, 1024.0)
    html = cache_grid.cache_grid_html([m], EVIL)
    assert EVIL not in html and "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&amp;" in html
    t = step_timeline.TimelinePanel(EVIL, (), 0.0, 1.0, (0.0, 0.5))
    html = step_timeline.step_timeline_html([t], EVIL)
    assert "<script>" not in html and html.count("&lt;script&gt;") >= 3
