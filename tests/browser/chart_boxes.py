"""Where each chart's words are: the screen box of every Label, LabelSet and point label (a Text
glyph) text, read from BokehJS's own views after layout (canvas text has no DOM box to measure), of every legend, and of
every chart title (HTML above its canvas, app/views/base.chart_title_pane); and whether each
legend entry's key was drawn.

Boxes are in the figure's canvas pixels: {plot, kind, text, left, right, top, bottom, canvas_width,
canvas_height}. Text widths come from the canvas's measureText with the label's own font.
"""

from .support import DEEP_ALL

BOXES_JS = """() => {
  const ctx = document.createElement('canvas').getContext('2d');
  const val = (p) => (p && typeof p === 'object' && 'value' in p) ? p.value : p;
  const font = (m, prefix) => [val(m[prefix + '_font_style']) || 'normal', val(m[prefix + '_font_size']) || '13px',
                               val(m[prefix + '_font']) || 'helvetica'].join(' ');
  const measure = (text, f) => { ctx.font = f; const t = ctx.measureText(text);
                                 return [t.width, (t.actualBoundingBoxAscent || 0) + (t.actualBoundingBoxDescent || 0)]; };
  const out = [];
  const plots = [...Bokeh.index.query((v) => v.model && v.model.type === 'Figure')];
  plots.forEach((pv, n) => {
    if (!pv.el || !pv.el.isConnected || pv.bbox.width === 0) { return; }
    const W = pv.bbox.width, H = pv.bbox.height;
    const base = {plot: n, canvas_width: W, canvas_height: H};
    for (const r of [...pv.model.center, ...pv.model.above, ...pv.model.below, ...pv.model.renderers]) {
      const rv = Bokeh.index.find_one(r);
      if (!rv || !r.visible) { continue; }
      if (r.type === 'Label' && r.text && rv._rect) {
        const q = rv._rect;
        const left = q.sx - q.anchor.x * q.width, top = q.sy - q.anchor.y * q.height;
        out.push({...base, kind: 'label', text: r.text, left, right: left + q.width, top, bottom: top + q.height});
      }
      if (r.type === 'LabelSet' && rv.sx) {
        const texts = r.source.data[val(r.text) && r.text.field ? r.text.field : 'text'] || [];
        const align = val(r.text_align) || 'left', baseline = val(r.text_baseline) || 'bottom';
        texts.forEach((source_text, i) => {
          // what the view draws: a transform may drop or change the source's text (the HBM bar's fit)
          const text = rv.text && typeof rv.text.get === 'function' ? rv.text.get(i) : source_text;
          if (!text) { return; }
          const [w, h] = measure(text, font(r, 'text'));
          const x = rv.sx[i] + (val(r.x_offset) || 0), y = rv.sy[i] - (val(r.y_offset) || 0);
          const left = align === 'right' ? x - w : align === 'center' ? x - w / 2 : x;
          const top = baseline === 'middle' ? y - h / 2 : baseline === 'top' ? y : y - h;
          out.push({...base, kind: 'labelset', text, left, right: left + w, top, bottom: top + h});
        });
      }
      if (r.type === 'GlyphRenderer' && r.glyph.type === 'Text' && rv && rv.glyph.sx) {  // a point's label
        const g = rv.glyph;
        for (let i = 0; i < g.sx.length; i++) {
          const text = g.text.get(i), v = g.visuals.text.values(i);
          if (!text || !isFinite(g.sx[i] + g.sy[i])) { continue; }
          const [w, h] = measure(text, [v.font_style, v.font_size, v.font].join(' '));
          const x = g.sx[i] + g.x_offset.get(i), y = g.sy[i] + g.y_offset.get(i);
          const left = v.align === 'right' ? x - w : v.align === 'center' ? x - w / 2 : x;
          const top = v.baseline === 'middle' ? y - h / 2 : v.baseline === 'top' ? y : y - h;
          out.push({...base, kind: 'point label', text, left, right: left + w, top, bottom: top + h});
        }
      }
      if (r.type === 'Legend' && rv.el && rv.el.isConnected) {  // drawn as HTML over the canvas
        const p = pv.el.getBoundingClientRect(), q = rv.el.getBoundingClientRect();
        if (q.width) { out.push({...base, kind: 'legend', text: r.items.map((i) => val(i.label)).join(', '),
                                 left: q.left - p.left, right: q.right - p.left, top: q.top - p.top, bottom: q.bottom - p.top}); }
      }
    }
  });
  return out;
}"""


def overlaps(a: dict, b: dict, slack_px: float = 1.0) -> bool:
    return (a["left"] < b["right"] - slack_px and b["left"] < a["right"] - slack_px
            and a["top"] < b["bottom"] - slack_px and b["top"] < a["bottom"] - slack_px)


def problems(boxes: list[dict]) -> list[str]:
    """Words cut off by the canvas edge, and pairs of words drawn over each other in one chart."""
    found = []
    for b in boxes:
        if b["left"] < -1 or b["right"] > b["canvas_width"] + 1:
            found.append(f"cut: {b['kind']} {b['text']!r} spans {b['left']:.0f}-{b['right']:.0f} px of {b['canvas_width']:.0f}")
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if a["plot"] == b["plot"] and overlaps(a, b):
                found.append(f"overlap: {a['text']!r} and {b['text']!r}")
    return found


# Pages whose default state is measured on loads made for other checks: test_a11y's at 1280 px (light
# theme), test_screenshots' phone load at 390 and 320 px; test_chart_labels covers every other page and width.
CHART_PAGES_CHECKED_HERE = frozenset({"/admission", "/phases", "/serving_lab"})


# Every shown chart title: its box in the window, and whether its text runs past its own box.
TITLES_JS = "() => { " + DEEP_ALL + """
  return deepAll('.kv-chart-title').filter((el) => el.getClientRects().length).map((el) => {
    const r = el.getBoundingClientRect();
    return {text: el.textContent, left: r.left, right: r.right, window_width: innerWidth,
            spills: el.scrollWidth > el.clientWidth + 1}; }); }"""


# Every shown legend entry, and whether its key (the glyph drawn beside its label) has a pixel.
LEGEND_KEYS_JS = "() => { " + DEEP_ALL + """
  const inLegend = (el) => { const root = el.getRootNode(); return root.host && root.host.classList.contains('bk-Legend'); };
  return deepAll('.bk-item').filter((el) => inLegend(el) && el.getClientRects().length).map((el) => {
    const c = el.querySelector('canvas');
    const d = c && c.width ? c.getContext('2d').getImageData(0, 0, c.width, c.height).data : [];
    let drawn = false;
    for (let i = 3; i < d.length && !drawn; i += 4) { drawn = d[i] > 0; }
    return {text: el.textContent, drawn}; }); }"""


def title_problems(titles: list[dict]) -> list[str]:
    return [f"cut: chart title {t['text']!r} spans {t['left']:.0f}-{t['right']:.0f} px of {t['window_width']}"
            + (", its text wider than its box" if t["spills"] else "")
            for t in titles if t["left"] < -1 or t["right"] > t["window_width"] + 1 or t["spills"]]


def assert_charts_legible(page, where: str) -> None:
    """Fail, listing every cut or overlapping word and every legend entry drawn without its key,
    unless the charts on `page` were found and every word fits."""
    boxes, titles, keys = page.evaluate(BOXES_JS), page.evaluate(TITLES_JS), page.evaluate(LEGEND_KEYS_JS)
    assert len(titles) >= 2 and len({b["plot"] for b in boxes}) >= 2, (titles, boxes)  # the charts were found and measured
    found = title_problems(titles) + problems(boxes) + [f"legend entry {k['text']!r} has no key" for k in keys if not k["drawn"]]
    assert not found, f"{where}:\n" + "\n".join(found)
