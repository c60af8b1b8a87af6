"""kvlab's view layer: what each view shows, as plain data, for the Panel server and the browser.

Contract (for every module here; "a11y" and "lessons" build on it):

- Standard library and `kvlab.sim` only, plus kvlab.app's standard-library helpers (`format`,
  `html`, `palette`, `config_paste`, `query_limits`). It runs unchanged in CPython and in Pyodide, where no Panel,
  Bokeh, param or numpy exists. tests/app/test_viewlayer.py imports it with those blocked.
- One module per view, each with a pure function `view_<name>(result, settings, ...) -> dict`:
  `result` is a `sim.Result` (or None when there is nothing to evaluate), `settings` a plain dict
  of every setting (`settings.defaults()` gives them all). Extra keyword arguments name what a
  view needs beyond the result (`fit=`, `batch=`, `phase=`, `issues=`).
- The dict maps a *part* of the view (a Bokeh model) to that model's properties:
  `{"bars": {"data": {...columns as lists...}}, "ridge": {"location": 203.0}, "pane": {"html": "...",
  "visible": True}}`. Column data are lists of JSON numbers and strings (NaN marks a gap on a
  log axis); widget parts carry values, bounds (`start`/`end`), options and `disabled`/`visible`.
- `html` values are finished HTML in which every interpolated string is already escaped (through
  `kvlab.app.viewlayer.html`); user text (a pasted config's model name, a link's value) can never become markup.
  To add a view-level fix (a label, an aria attribute, a text summary for a chart), change it
  here: both runtimes get it.
- Nothing here keeps state except the sessions: `lab_session.LabSession` (the serving lab's one
  session, which the Panel server's `LabStore` wraps) and the browser bridge's per-page sessions:
  `pages.PanelPage` (a panel), `lab_page.LabPage` (the lab's session plus the bridge's protocol) and
  `lesson_page.LessonPage` (a lesson's live views); `sessions.page_for` picks one.

Modules: `settings` (names, defaults, choices), `state` (one evaluation: result + curves),
`query` (links), `series` (the swept curves), `controls` (widget properties), one module per
view, `pages` (a whole page's models by Bokeh name) and `sessions` (the bridge's entry point). The serving
lab: `lab_settings` (the one table of its settings, presets, the EngineConfig of a state), `lab_url`
(its link codec), `lab_controls`, one `lab_*` module per lab view (they read a `LabSession`),
`lab_runs`, `lab_session` and `lab_page`.
"""
