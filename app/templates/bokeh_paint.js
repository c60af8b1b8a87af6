// kvlab: two lookups BokehJS makes on every repaint of a chart that kvlab's pages do not need.
// BokehJS 3.9 lets a page restyle any glyph, axis or label through CSS custom properties (named
// "--bk" + "-<visual>-<property>"; spelt apart here on purpose), and to find them it calls
// getComputedStyle(el).getPropertyValue() for every visual property it paints: thousands of calls
// per slider move, and after any change to the page the first one makes the browser recompute its
// styles. No file of kvlab's pages defines such a property (tests/site/test_build_site.py checks
// that no file of the built site but BokehJS's own bundle names the prefix), so every lookup
// returns "" and BokehJS uses the model's value. Answering "" without asking paints the same
// pixels; in Chromium the lookups were about a quarter of a slider move's main-thread time
// (docs/benchmarks/2026-12-01-site.md, session 4).
(() => {
  const bokeh = window.Bokeh;
  const visual = bokeh && typeof bokeh.require === 'function' ? bokeh.require('core/visuals/visual') : null;
  const proto = visual && visual.VisualProperties && visual.VisualProperties.prototype;
  if (proto && typeof proto._get_css_value === 'function') {
    proto._get_css_value = () => '';
  }

  // Each repaint of a plot also asks for the plot's CSS font size (getComputedStyle(el).fontSize,
  // the base of relative font sizes) once per axis; after a patch has changed any text of the
  // page, the first such call makes the browser recompute the page's styles inside BokehJS's paint.
  // kvlab's pages never change a plot's font size once it is laid out (a theme is another page),
  // so each plot keeps the first size it finds.
  const canvas = bokeh && typeof bokeh.require === 'function' ? bokeh.require('models/plots/plot_canvas') : null;
  const plot = canvas && canvas.PlotView && canvas.PlotView.prototype;
  const font = plot && Object.getOwnPropertyDescriptor(plot, 'base_font_size');
  if (font && typeof font.get === 'function') {
    Object.defineProperty(plot, 'base_font_size', {
      configurable: true,
      get() {
        if (this.__kvlabFontSize == null) this.__kvlabFontSize = font.get.call(this);
        return this.__kvlabFontSize;
      },
    });
  }
})();
