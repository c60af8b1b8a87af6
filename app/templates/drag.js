// kvlab: handles on charts that a student drags, with the mouse, a finger or the keyboard, to set
// a setting where its effect is drawn (the HBM bar's utilisation edge, the prompt on the "sequences
// that fit" curve). A chart's handle is a Span whose tags say the setting it edits and how a place on
// the x axis maps to the setting's value (app/viewlayer/drag.py). A canvas has no parts the keyboard
// can reach, so the handle is an HTML element laid over the chart: role="slider", in the Tab order,
// named, its value announced through aria-valuenow and aria-valuetext; arrow keys move it by the
// slider's step (Page Up and Page Down by ten steps, Home and End to the ends), a drag anywhere along
// it moves it to the pointer. A move sets the slider's own Bokeh model, the one source of truth:
// under `kvlab serve` the model's change reaches the panel's param, in the static site the bridge
// (static/kvlab-bridge.js) watches the same model, and in both the numbers, the chart and the address
// bar follow. The slider is the one in the same lesson live view (.kv-live) or, on a panel's page, the
// page's only one; a handle without one, or whose slider is disabled, is not shown.
// The chart calls window.kvlabDrag.attach(plot) whenever it is laid out or its handle moves.
// Also here: a teaching figure's parts that a click selects (the step timeline's steps, marked
// data-kv-step, with the words for each in data-kv-says; see selectIn below).
(() => {
  const TARGET_PX = 44; // WCAG 2.5.5's target, as the lessons' choices
  const STYLE = `
.kv-drag { position: absolute; width: ${TARGET_PX}px; margin-left: -${TARGET_PX / 2}px; cursor: ew-resize; touch-action: none;
  z-index: 2; display: flex; align-items: center; justify-content: center; color: var(--panel-on-background-color, #1f2328); }
.kv-drag::before { content: ""; width: 10px; height: 60%; min-height: 24px; border-radius: 5px; border: 2px solid currentColor;
  background: var(--panel-background-color, #fff); box-sizing: border-box; }
.kv-drag.kv-grip-bottom { align-items: flex-end; }
.kv-drag.kv-grip-bottom::before { height: 28px; min-height: 0; }
.kv-drag:focus { outline: none; }
.kv-drag:focus-visible::before, .kv-drag.kv-dragging::before { outline: 3px solid var(--kv-focus, #0B5CAD); outline-offset: 2px; }
@media (forced-colors: active) { .kv-drag::before { border-color: ButtonText; background: ButtonFace; } }`;
  const state = new WeakMap(); // plot model -> {el, span, slider, label}
  const made = []; // every handle's state, in the order the charts were drawn (the page's order)

  const viewOf = (model) => {
    const index = window.Bokeh && window.Bokeh.index;
    if (!index || typeof index.query !== 'function') { return null; }
    for (const v of index.query((v) => v.model === model)) { return v; }
    return null;
  };

  // The slider a handle edits: under the nearest ancestor that holds one, never past the handle's own
  // lesson live view; on a page without live views, the document's only one.
  const sliderFor = (view, setting) => {
    const cls = 'kv-w-' + setting;
    const has = (m) => Boolean(m && (m.css_classes || []).includes(cls));
    const find = (v) => {
      if (has(v.model)) { return v.model; }
      for (const c of v.child_views || []) { const f = find(c); if (f) { return f; } }
      return null;
    };
    for (let v = view.parent; v; v = v.parent) {
      const f = find(v);
      if (f) { return f; }
      if ((v.model.css_classes || []).includes('kv-live')) { return null; }
    }
    const all = [...view.model.document.all_models].filter(has);
    return all.length === 1 ? all[0] : null;
  };

  const toX = (spec, v) => (spec.scale === 'log2' ? 2 ** v : spec.a + spec.b * v);
  const toValue = (spec, x) => (spec.scale === 'log2' ? Math.log2(x) : (x - spec.a) / spec.b);
  const words = (spec, v) => (spec.format === 'tokens' ? `${Math.round(2 ** v).toLocaleString('en-US')} tokens` : v.toFixed(2));

  // A value on the slider's grid, within its ends (float noise removed: 0.8500000001 is 0.85).
  const snap = (slider, v) => {
    const step = slider.step || 1, lo = slider.start, hi = slider.end;
    const on = lo + Math.round((v - lo) / step) * step;
    return Number(Math.min(hi, Math.max(lo, on)).toFixed(10));
  };

  // The shown handles named `label`: two of one name on a page (a lesson with two live views of one
  // chart) are told apart by their order on it.
  const name = (label) => {
    const peers = made.filter((h) => h.label === label && h.el.isConnected && h.el.style.display !== 'none');
    peers.forEach((h, i) => h.el.setAttribute('aria-label', peers.length > 1 ? `${label}, ${i + 1} of ${peers.length} on this page` : label));
  };

  const place = (plot) => {
    const s = state.get(plot);
    const view = viewOf(plot);
    if (!s || !view) { return; }
    const spec = (s.span.tags || []).find((t) => t && t.kv_drag);
    const shown = spec && s.span.location !== null && s.span.location !== undefined && !s.slider.disabled && view.frame;
    s.el.style.display = shown ? 'flex' : 'none';
    s.label = spec ? spec.label : null;
    if (!shown) { name(s.label); return; }
    s.el.classList.toggle('kv-grip-bottom', spec.grip === 'bottom');
    if (s.el.getRootNode() !== view.shadow_el) {
      view.shadow_el.append(s.style, s.el);
    }
    const box = view.frame.bbox;
    s.el.style.left = `${view.frame.x_scale.compute(s.span.location)}px`;
    s.el.style.top = `${box.top}px`;
    s.el.style.height = `${Math.max(box.height, TARGET_PX)}px`;
    const v = s.slider.value;
    name(spec.label);
    s.el.setAttribute('aria-valuemin', String(s.slider.start));
    s.el.setAttribute('aria-valuemax', String(s.slider.end));
    s.el.setAttribute('aria-valuenow', String(v));
    s.el.setAttribute('aria-valuetext', words(spec, v));
  };

  // A new value: the slider's (what every view and the link follow); the handle moves at once.
  const set = (plot, v) => {
    const s = state.get(plot);
    const spec = (s.span.tags || []).find((t) => t && t.kv_drag);
    const value = snap(s.slider, v);
    if (value !== s.slider.value) {
      s.slider.value = value;
      s.span.location = toX(spec, value);
    }
    place(plot);
  };

  const make = (plot, view, span, slider) => {
    const el = document.createElement('div');
    el.className = 'kv-drag';
    el.tabIndex = 0;
    el.setAttribute('role', 'slider');
    el.setAttribute('aria-orientation', 'horizontal');
    const style = document.createElement('style');
    style.textContent = STYLE;
    const s = {el, style, span, slider, label: null};
    state.set(plot, s);
    made.push(s);
    const specNow = () => (span.tags || []).find((t) => t && t.kv_drag);
    // The keys of an ARIA slider (WAI-ARIA Authoring Practices): Right and Up raise the value, Left and
    // Down lower it, whichever way the handle then moves on its axis (the utilisation edge's axis runs
    // the other way: a higher utilisation moves it left), so a screen reader's user hears the value
    // go the way the key says.
    el.addEventListener('keydown', (e) => {
      const step = s.slider.step || 1;
      const moves = {ArrowRight: step, ArrowLeft: -step, ArrowUp: step, ArrowDown: -step, PageUp: 10 * step, PageDown: -10 * step};
      let v = null;
      if (e.key in moves) { v = s.slider.value + moves[e.key]; }
      else if (e.key === 'Home') { v = s.slider.start; }
      else if (e.key === 'End') { v = s.slider.end; }
      if (v === null) { return; }
      e.preventDefault();
      set(plot, v);
    });
    const follow = (e) => {
      const v2 = viewOf(plot);
      if (!v2) { return; }
      const px = e.clientX - v2.canvas_view.el.getBoundingClientRect().left;
      set(plot, toValue(specNow(), v2.frame.x_scale.invert(px)));
    };
    el.addEventListener('pointerdown', (e) => {
      e.preventDefault();
      el.focus();
      el.setPointerCapture(e.pointerId);
      el.classList.add('kv-dragging');
      el.addEventListener('pointermove', follow);
    });
    const stop = (e) => {
      el.classList.remove('kv-dragging');
      el.removeEventListener('pointermove', follow);
      if (el.hasPointerCapture(e.pointerId)) { el.releasePointerCapture(e.pointerId); }
    };
    el.addEventListener('pointerup', stop);
    el.addEventListener('pointercancel', stop);
    const later = () => requestAnimationFrame(() => place(plot));
    slider.connect(slider.properties.value.change, later);
    slider.connect(slider.properties.disabled.change, later);
    plot.x_range.connect(plot.x_range.change, later);
    return s;
  };

  // A figure's selectable parts (app/viewlayer/step_timeline.py): a click on one selects it, and the
  // panel's line (.kv-pick, role="slider", its value the part's number) names it; on that line the
  // arrow keys select the part before or after, Home and End the first and the last. The figure is
  // an HTML pane's, inside a shadow root: the page's listeners find it through the event's path.
  const selectIn = (panel, k) => {
    const parts = [...panel.querySelectorAll('[data-kv-step]')];
    const pick = panel.querySelector('.kv-pick');
    const at = Math.min(Math.max(k, 1), parts.length);
    const chosen = parts[at - 1];
    if (!chosen || !pick) { return; }
    for (const g of parts) { g.classList.toggle('kv-picked', g === chosen); }
    pick.textContent = chosen.dataset.kvSays;
    pick.setAttribute('aria-valuenow', String(at));
    pick.setAttribute('aria-valuetext', chosen.dataset.kvSays);
  };
  const panelOf = (path) => path.find((n) => n.classList && n.classList.contains('kv-fig-panel'));
  document.addEventListener('click', (e) => {
    const path = e.composedPath();
    const part = path.find((n) => n.dataset && n.dataset.kvStep);
    const panel = part && panelOf(path);
    if (!panel) { return; }
    selectIn(panel, Number(part.dataset.kvStep));
    panel.querySelector('.kv-pick').focus({preventScroll: true}); // the keyboard goes on from the chosen step
  });
  document.addEventListener('keydown', (e) => {
    const path = e.composedPath();
    const pick = path[0];
    const panel = pick && pick.classList && pick.classList.contains('kv-pick') ? panelOf(path) : null;
    if (!panel) { return; }
    const now = Number(pick.getAttribute('aria-valuenow'));
    const moves = {ArrowRight: 1, ArrowUp: 1, ArrowLeft: -1, ArrowDown: -1, PageUp: 10, PageDown: -10};
    const k = e.key in moves ? now + moves[e.key] : e.key === 'Home' ? 1 : e.key === 'End' ? Infinity : null;
    if (k === null) { return; }
    e.preventDefault();
    selectIn(panel, k);
  });

  window.kvlabDrag = {
    attach(plot) {
      if (!state.has(plot)) {
        const view = viewOf(plot);
        const span = (plot.center || []).find((r) => (r.tags || []).some((t) => t && t.kv_drag));
        if (!view || !span) { return; }
        const spec = span.tags.find((t) => t && t.kv_drag);
        const slider = sliderFor(view, spec.kv_drag);
        if (!slider) { return; }
        make(plot, view, span, slider);
      }
      requestAnimationFrame(() => place(plot));
    },
  };
})();
