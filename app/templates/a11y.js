// kvlab: names and states for the parts of Bokeh's widgets that carry none, kept up to date as
// the page changes. Bokeh draws each widget inside its own shadow root, where the page's HTML
// cannot reach, so this walks the open shadow roots and watches each one for new content.
//   - slider handles: an aria-label (the slider's title) and, for log2 sliders, aria-valuetext
//     in tokens or requests instead of the log2 position ("4,096 tokens", not "12.00");
//   - number boxes' spin buttons: "Increase <field>" / "Decrease <field>", out of the Tab order
//     (the arrow keys in the box do the same);
//   - checkboxes and inputs without a visible label: the text beside them or the widget's title;
//   - number boxes: a visible note when a typed value is outside the box's bounds (Bokeh ignores it);
//   - charts' event layers: out of the Tab order (no keyboard tools; the text summary has the numbers);
//   - button groups: role=group named by the title above them (.kv-group-title), and
//     aria-pressed on each option so the chosen one is announced;
//   - the big numbers (.kv-tile): once they have changed and then been still for a moment, one
//     polite status line names the ones that changed, for screen readers (WCAG 4.1.3; see announce);
//   - a lesson's prediction: once a choice is made, the focus goes to the explanation that appears
//     (see whyAfterChoice);
//   - on a narrow screen, a control that gets the keyboard's focus is never left under the settings
//     sheet pinned to the bottom of the screen (WCAG 2.4.11; see liftAboveSheet);
//   - file boxes with a kv-upload-max-<bytes> class: a file over the limit, or an empty one, is
//     refused here, before the browser reads and sends it (the server's websocket would drop a
//     larger message without a word), with a note naming the field and the limit.
(() => {
  const observed = new WeakSet();
  const clean = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const hasName = (el) => clean(el.getAttribute('aria-label')) || el.getAttribute('aria-labelledby');

  const sliderTitle = (root) => {
    const t = root.querySelector('.bk-slider-title');
    return t && t.firstChild ? clean(t.firstChild.textContent).replace(/:$/, '') : '';
  };

  // The nearest visible title: in this shadow root, then in the ones around it.
  const widgetLabel = (root) => {
    for (let r = root, i = 0; r && i < 4; i++, r = r.host ? r.host.getRootNode() : null) {
      const title = sliderTitle(r);
      if (title) { return title; }
      for (const l of r.querySelectorAll('label')) {
        if (l.style.display !== 'none' && clean(l.textContent)) { return clean(l.textContent); }
      }
    }
    return '';
  };

  const groupLabel = (host) => {
    const prev = host && host.previousElementSibling;
    if (prev && prev.classList.contains('kv-group-title')) {
      const title = (prev.shadowRoot || prev).querySelector('.kv-group-label');
      return title ? clean(title.textContent) : '';
    }
    return host && host.getAttribute('aria-label') ? host.getAttribute('aria-label') : '';
  };

  const log2Unit = (host) => {
    for (const c of (host ? host.classList : [])) { if (c.startsWith('kv-log2-')) { return c.slice(8); } }
    return '';
  };

  const valueText = (handle, unit) => {
    // aria-valuenow is rounded to one decimal; the slider's own value is exact.
    const target = handle.closest('.noUi-target');
    const exact = target && target.noUiSlider ? Number(target.noUiSlider.get(true)) : Number(handle.getAttribute('aria-valuenow'));
    const v = Math.round(2 ** exact);
    const text = `${v.toLocaleString('en-US')} ${unit}`;
    if (handle.getAttribute('aria-valuetext') !== text) { handle.setAttribute('aria-valuetext', text); }
  };

  const patch = (root) => {
    const host = root.host;
    for (const handle of root.querySelectorAll('.noUi-handle')) {
      if (!hasName(handle)) { const t = sliderTitle(root) || widgetLabel(root); if (t) { handle.setAttribute('aria-label', t); } }
      const unit = log2Unit(host);
      if (unit && !handle.dataset.kvValuetext) {
        handle.dataset.kvValuetext = '1';
        valueText(handle, unit);
        // noUiSlider rewrites aria-valuetext with every move; answer each move with tokens.
        new MutationObserver(() => valueText(handle, unit)).observe(handle, {attributes: true, attributeFilter: ['aria-valuenow', 'aria-valuetext']});
      }
    }
    for (const why of root.querySelectorAll('.kv-why')) {
      if (!why.dataset.kvSeen) { why.dataset.kvSeen = '1'; whyAfterChoice(why); }
    }
    for (const btn of root.querySelectorAll('.bk-spin-btn')) {
      if (!hasName(btn)) {
        const label = widgetLabel(root) || 'the value';
        btn.setAttribute('aria-label', `${btn.classList.contains('bk-spin-btn-up') ? 'Increase' : 'Decrease'} ${label}`);
        btn.setAttribute('tabindex', '-1');
      }
    }
    for (const box of root.querySelectorAll('input[type="checkbox"]')) {
      if (!hasName(box) && !(box.labels && box.labels.length)) {
        const label = box.nextElementSibling ? clean(box.nextElementSibling.textContent) : '';
        if (label) { box.setAttribute('aria-label', label); }
      }
    }
    for (const el of root.querySelectorAll('input:not([type="checkbox"]):not([type="radio"]):not([type="file"]), select, textarea')) {
      const visible = el.labels && [...el.labels].some((l) => l.style.display !== 'none' && clean(l.textContent));
      if (!visible && !hasName(el)) { const t = widgetLabel(root); if (t) { el.setAttribute('aria-label', t); } }
    }
    for (const group of root.querySelectorAll('.bk-btn-group')) {
      const buttons = group.querySelectorAll('button.bk-btn');
      if (buttons.length < 2) { continue; }
      if (!hasName(group)) {
        const label = groupLabel(host);
        group.setAttribute('role', 'group');
        if (label) { group.setAttribute('aria-label', label); }
      }
      for (const b of buttons) { b.setAttribute('aria-pressed', b.classList.contains('bk-active') ? 'true' : 'false'); }
    }
    // A chart's event layer takes focus for keyboard tools; the charts have none, and their
    // numbers are in the text summary under each, so it is left out of the Tab order.
    for (const layer of root.querySelectorAll('.bk-layer.bk-events[tabindex]')) {
      if (layer.getAttribute('tabindex') !== '-1') { layer.setAttribute('tabindex', '-1'); }
    }
    if (root.querySelector('input.bk-input')) { guardRanges(); }
    const maxBytes = uploadLimit(host);
    if (maxBytes && !root.kvUploadGuard) {
      // On the shadow root, capturing: it runs before the file box's own listener, which reads the file.
      root.kvUploadGuard = true;
      root.addEventListener('change', (event) => guardUpload(root, event, maxBytes), true);
    }
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) { watch(el.shadowRoot); }
    }
  };

  // A number box given a value outside its bounds: Bokeh keeps the typed text and sends nothing, so
  // the page silently goes on showing the old value. Say so beside the box, and put the value in
  // use back in it.
  const fmtNum = (x) => Number(x).toLocaleString('en-US', {maximumFractionDigits: 6});
  const checkRange = (view, input) => {
    const m = view.model;
    const typed = input.value.trim().replace(/,/g, '');
    const x = Number(typed);
    const wrapper = input.closest('.bk-input-group') || input.parentElement;
    let note = wrapper.querySelector('.kv-range-note');
    const bad = typed !== '' && (Number.isNaN(x) || (m.low != null && x < m.low) || (m.high != null && x > m.high));
    if (!bad) {
      if (note) { note.remove(); }
      input.removeAttribute('aria-invalid');
      return;
    }
    if (!note) {
      note = document.createElement('div');
      note.className = 'kv-range-note';
      note.setAttribute('role', 'alert');
      note.style.cssText = 'font-size: 0.85rem; margin-top: 3px; color: var(--kv-bad, #A83A00);';
      wrapper.appendChild(note);
    }
    const range = `${m.low != null ? fmtNum(m.low) : '…'} to ${m.high != null ? fmtNum(m.high) : '…'}`;
    const kept = m.value == null ? 'left empty' : `kept ${fmtNum(m.value)}`;
    note.textContent = `${input.value.trim()} is outside the allowed ${range}; ${kept}.`;
    input.setAttribute('aria-invalid', 'true');
    input.value = m.value == null ? '' : String(m.value);
  };
  const guardRanges = () => {
    if (!window.Bokeh || !Bokeh.index || !Bokeh.index.query) { return; }
    for (const v of Bokeh.index.query((v) => v.model && (v.model.type === 'Spinner' || v.model.type === 'NumericInput'))) {
      const input = v.input_el;
      if (!input || input.dataset.kvRange) { continue; }
      input.dataset.kvRange = '1';
      input.addEventListener('change', () => checkRange(v, input));
    }
  };

  // The largest file a file box accepts, from its kv-upload-max-<bytes> class (written by the page
  // from the parser's limit, sim/engine/trace.py MAX_TRACE_BYTES); 0 when it has none.
  const uploadLimit = (host) => {
    for (const c of (host ? host.classList : [])) { if (c.startsWith('kv-upload-max-')) { return Number(c.slice(14)) || 0; } }
    return 0;
  };
  const guardUpload = (root, event, maxBytes) => {
    const input = event.target;
    if (!input || input.type !== 'file' || !input.files) { return; }
    const wrapper = input.closest('.bk-input-group') || input.parentElement;
    let note = wrapper.querySelector('.kv-upload-note');
    const field = widgetLabel(root) || 'File';
    const limit = `${(maxBytes / 1e6).toLocaleString('en-US', {maximumFractionDigits: 1})} MB (${fmtNum(maxBytes)} bytes)`;
    const problems = [...input.files].map((f) => (f.size > maxBytes ? `${f.name} is ${fmtNum(f.size)} bytes; files up to ${limit} are accepted`
      : f.size === 0 ? `${f.name} is empty: choose a CSV or JSON lines file with a header and at least one request` : ''))
      .filter(Boolean);
    if (!problems.length) {
      if (note) { note.remove(); }
      input.removeAttribute('aria-invalid');
      return;
    }
    event.stopImmediatePropagation();
    input.value = '';
    if (!note) {
      note = document.createElement('div');
      note.className = 'kv-upload-note';
      note.setAttribute('role', 'alert');
      note.setAttribute('data-kv', 'upload-refused');
      note.style.cssText = 'font-size: 0.85rem; margin-top: 3px; color: var(--kv-bad, #A83A00);';
      wrapper.appendChild(note);
    }
    note.textContent = `${field}: ${problems.join('; ')}. Nothing was uploaded; the other settings are unchanged.`;
    input.setAttribute('aria-invalid', 'true');
  };

  // A lesson's choice, once made, disables every choice of its step, the focused one too: the focus
  // fell to <body>, and a screen reader said nothing of the explanation that appeared. So the
  // explanation (.kv-why) that appears after a choice was clicked (by key or pointer) takes the
  // focus and is read out. One that appears without a click (a link's answers, re-applied as the
  // page opens) does not.
  let choiceAt = -Infinity;
  document.addEventListener('click', (event) => {
    if (event.composedPath().some((n) => n.classList && n.classList.contains('kv-choice'))) { choiceAt = performance.now(); }
  }, true);
  const whyAfterChoice = (why, tries = 0) => {
    if (performance.now() - choiceAt > 10000) { return; }
    why.setAttribute('tabindex', '-1');
    why.focus();
    if (why.getRootNode().activeElement === why) { choiceAt = -Infinity; return; }
    if (tries < 30) { requestAnimationFrame(() => whyAfterChoice(why, tries + 1)); } // shown a frame or two later
  };

  // Below 768 px the settings are a sheet pinned to the bottom of the screen (app/shell/a11y.py,
  // PHONE_CSS). The browser scrolls a newly focused element only just into the window, which can
  // leave it under the sheet: scroll it above the sheet first, and the browser then has nothing to
  // scroll. Keyboard focus only (:focus-visible): a tap must not move the page under the finger.
  // (A CSS scroll-padding would lift the page's controls too, but the page would then also scroll
  // for each control inside the sheet, which is always on screen.) Focus moving inside one shadow
  // root reaches no listener outside it, so each watched root listens (watch, below); an event
  // crossing several of them is handled once.
  const lifted = new WeakSet();
  const liftAboveSheet = (event) => {
    const target = event.composedPath()[0];
    if (lifted.has(event) || !(target instanceof Element)) { return; }
    lifted.add(event);
    const sheet = document.getElementById('sidebar');
    if (!sheet || getComputedStyle(sheet).position !== 'sticky' || !target.matches(':focus-visible')) { return; }
    let outer = target;
    while (outer.getRootNode() !== document && outer.getRootNode().host) { outer = outer.getRootNode().host; }
    if (sheet.contains(outer)) { return; }
    const r = target.getBoundingClientRect();
    const sheetTop = sheet.getBoundingClientRect().top;
    if (r.bottom <= sheetTop || r.top < 0) { return; } // in view, or above it (the browser scrolls up to it)
    const gap = 8;
    const by = r.height <= sheetTop - 2 * gap ? r.bottom - sheetTop + gap : r.top - gap;
    window.scrollBy({top: by, behavior: 'instant'});
  };

  // A move changes the big numbers, which are neither focused nor live regions, so a screen reader
  // says nothing of its result. Once the numbers have been still for ANNOUNCE_QUIET_MS (a drag is
  // announced once, at its end, not at every step), a polite role=status line names the tiles that
  // changed: "Sequences that fit: 12, of 32,896 tokens each." A tile seen for the first time is
  // only remembered, so a page's or a run's first numbers announce nothing (a static page opened
  // from a link with settings does announce its numbers replacing the pre-rendered defaults).
  const ANNOUNCE_QUIET_MS = 700;
  const ANNOUNCE_MAX_TILES = 3;
  const tileTexts = new Map();
  let status = null;
  let announceTimer = 0;
  const deepTiles = (root, out) => {
    out.push(...root.querySelectorAll('.kv-tile'));
    for (const el of root.querySelectorAll('*')) { if (el.shadowRoot) { deepTiles(el.shadowRoot, out); } }
    return out;
  };
  const announce = () => {
    const changed = [];
    for (const t of deepTiles(document, [])) {
      const part = (sel) => { const el = t.querySelector(sel); return el ? clean(el.textContent) : ''; };
      const label = part('.label');
      if (!label) { continue; }
      const caption = part('.caption');
      const text = `${label}: ${part('.value')}${caption ? ', ' + caption : ''}.`;
      if (tileTexts.has(label) && tileTexts.get(label) !== text) { changed.push(text); }
      tileTexts.set(label, text);
    }
    // The first few in the page's order: a prompt move on the phases panel changes eight tiles,
    // half a minute of speech.
    const more = changed.length - ANNOUNCE_MAX_TILES;
    const said = changed.slice(0, ANNOUNCE_MAX_TILES).join(' ') + (more > 0 ? ` ${more} more ${more === 1 ? 'number' : 'numbers'} changed.` : '');
    if (changed.length && status) { status.textContent = said; }
  };
  const numbersMoved = () => { clearTimeout(announceTimer); announceTimer = setTimeout(announce, ANNOUNCE_QUIET_MS); };

  const pending = new Set();
  let scheduled = false;
  const schedule = (root) => {
    pending.add(root);
    if (!scheduled) {
      scheduled = true;
      requestAnimationFrame(() => {
        scheduled = false;
        const roots = [...pending];
        pending.clear();
        roots.forEach(patch);
        if (roots.some((r) => r.querySelector('.kv-tile'))) { numbersMoved(); }
      });
    }
  };

  function watch(root) {
    if (observed.has(root)) { return; }
    observed.add(root);
    root.addEventListener('focusin', liftAboveSheet);
    new MutationObserver(() => schedule(root)).observe(root, {childList: true, subtree: true, attributes: true, attributeFilter: ['class']});
    patch(root);
  }

  const start = () => {
    // In the page before any number changes: a live region added together with its text is not
    // read. Inside <main>, so that all text is within a landmark.
    status = document.createElement('div');
    status.setAttribute('role', 'status');
    status.setAttribute('data-kv', 'announce');
    status.style.cssText = 'position: absolute; top: 0; left: 0; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap;';
    (document.getElementById('main') || document.body).appendChild(status);
    watch(document.body);
    numbersMoved();
  };
  if (document.body) { start(); } else { document.addEventListener('DOMContentLoaded', start); }
  window.kvlabA11yPatch = () => patch(document.body);
})();
