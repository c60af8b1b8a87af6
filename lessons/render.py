"""Turns a `Lesson` (plain data, numbers already computed by sim) into a Panel page.

Page order: header (objective, prerequisites, minutes, next), setup, then each step's prediction.
A step's reveal, prose, live view and "try this" links stay hidden until the student picks a
choice (`model.visible_blocks` is the rule; the tests read the same function). Picking locks the
choices, marks the right one, explains every choice, and writes the pick into the address bar
(`?a1-llama=1`), so a reload or a shared link comes back with the same answers revealed. "Try
this" links open in a new tab, so the lesson tab keeps its place.

Live views are the panels' own views (app/views, app/engine_views) over a store of their own,
built when the step is revealed, at the state the text describes, with the lesson's controls.
"""

from __future__ import annotations

import json
from html import escape

import panel as pn
from kvlab.app.pages import building_site
from kvlab.app.shell.a11y import KvTemplate
from kvlab.app.shell.page import HEADER_COLOR, SITE
from kvlab.app.shell.share import nav_links, page_href, picks_buttons, share_buttons, step_buttons, theme_button
from kvlab.app.site.marks import (  # filled/read by kvlab build-site
    BODY_CLASS,
    BUILD_FILES,
    BUILD_LIVE_SPECS,
    RECAP_CLASS,
    STEP_CLASS_PREFIX,
)
from kvlab.app.viewlayer.figure import FIGURE_CSS
from kvlab.app.viewlayer.html import BASE_CSS, esc, shipped_css
from panel.links import Callback

from . import course
from .content import model
from .content.model import Lesson, LiveView, Prediction, Step, TryThis

# A lesson's lines: about 70 characters of its 16 px text (a measure of 60-75 reads best). rem, not em:
# a Bokeh host sets a font size of its own, and em would follow it.
READING_MEASURE = "36rem"

# 16 px body text; code in the page's own ink on its surface colour (>= 4.5:1 in both themes,
# since --kv-ink and --kv-surface switch together).
LESSON_CSS = BASE_CSS + shipped_css("""
:host { font-size: 16px; }
.kv-lesson, .kv-lesson p, .kv-lesson li { font-size: 16px; line-height: 1.6; }
/* The reading measure, about 70 characters a line (READING_MEASURE): in an HTML pane (.kv-lesson is a
   div inside it) and in a Markdown pane (.kv-lesson is the pane's own host). */
.kv-lesson p, .kv-lesson li, :host(.kv-lesson) p, :host(.kv-lesson) li { max-width: @MEASURE@; }
.kv-lesson code, .kv-lesson pre { color: var(--kv-ink); background: var(--kv-surface); border: 1px solid var(--kv-border);
                                  border-radius: 4px; padding: 0 4px; font-size: 15px; overflow-wrap: anywhere; }
.kv-lesson h1 { font-size: 1.8rem; margin: 4px 0 8px; }
.kv-lesson h2 { font-size: 1.3rem; margin: 16px 0 6px; }
.kv-lesson a { color: inherit; text-decoration: underline; }
.kv-head { border-bottom: 1px solid var(--kv-border); padding-bottom: 8px; }
.kv-lesson h1, .kv-lesson h2, .kv-head dd { overflow-wrap: break-word; }
.kv-head dl { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 2px 14px; margin: 6px 0; }
.kv-head dt { font-weight: 700; }
.kv-head dd { margin: 0; }
/* At 320 px (WCAG 1.4.10's reflow width) a term and its text side by side leave the text 150 px,
   less than one identifier (gpu_memory_utilization) needs: stack them. */
@media (max-width: 480px) { .kv-head dl { grid-template-columns: minmax(0, 1fr); gap: 0; } .kv-head dd { margin-bottom: 4px; } }
.kv-try { border-left: 5px solid #009E73; padding: 6px 14px; margin: 8px 0; background: var(--kv-surface); }
.kv-try a { font-weight: 600; }
.kv-box { border: 1px dashed var(--kv-border); border-radius: 8px; padding: 6px 14px; margin: 10px 0; }
.kv-why ul { padding-left: 20px; }
.kv-why li.right { font-weight: 600; }
.kv-caption { font-size: 15px; }
.kv-peek { border-left: 5px solid #0072B2; padding: 4px 14px; margin: 8px 0; background: var(--kv-surface); }
.kv-peek ul { padding-left: 20px; margin: 4px 0; }
""".replace("@MEASURE@", READING_MEASURE))

# A choice clicked in the static site: lock the choices, mark the right one (and a wrong pick),
# show the explanation and the reveal, and write the pick into the address bar; the same outcome
# as StepView.commit and LessonBody._answered on the server. The site's bridge runs this same
# script for each answer a link carries (static/kvlab-bridge.js, the buttons' names are
# answer:<key>:<index>), as LessonBody re-applies them on the server. The clicked button is
# `source` (the Bokeh model Panel passes every callback) and its siblings are found by their
# step's CSS class: a button named in `args` is never freed, because Panel keeps each callback
# in a WeakKeyDictionary keyed by its button, and a value that reaches its own key (or a
# sibling whose callback reaches back) keeps it alive (app/shell/share.py's copy buttons).
# An answered step shows the one after it (model.step_shown; LessonBody._show_steps on the server), unless
# the page shows one step alone (?step=<key>). The steps are the lesson body's children with a step class.
NEXT_STEP_JS = """
const stepOf = (m) => (m.css_classes || []).some((c) => c.startsWith(%(step_prefix)s));
const lessonBody = [...source.document.all_models].find((m) => (m.css_classes || []).includes(%(body_class)s));
if (lessonBody && !new URLSearchParams(window.location.search).has('step')) {
  const steps = lessonBody.children.filter(stepOf);
  const at = steps.findIndex((m) => m.css_classes.includes(%(step_prefix)s + %(key)s));
  if (at >= 0 && at + 1 < steps.length) { steps[at + 1].visible = true; }
}
"""
NEXT_STEP_ARGS = {"step_prefix": json.dumps(STEP_CLASS_PREFIX), "body_class": json.dumps(BODY_CLASS)}
STATIC_REVEAL_JS = """
const buttons = [...source.document.all_models].filter((m) => (m.css_classes || []).includes(%(step_class)s));
if (buttons.some((b) => b.disabled)) { return; }
const solid = (b, kind) => { b.button_type = kind; b.css_classes = b.css_classes.filter((c) => c !== 'outline'); };
for (const b of buttons) { b.disabled = true; if (b.label === %(answer)s) { solid(b, 'success'); } }
if (source.label !== %(answer)s) { solid(source, 'danger'); }
why.text = %(why)s;
why.visible = true;
body.visible = true;
const url = new URL(window.location.href);
url.searchParams.set(%(key)s, '%(index)d');
window.history.replaceState(window.history.state, '', url.pathname + url.search + url.hash);
""" + NEXT_STEP_JS + """
window.kvlabRecordPick(%(key)s, %(index)d);
"""
# The served page records a pick in the browser too (the site's script above does it there):
# "Copy my answers" reads them back (app/templates/share.js).
RECORD_PICK_JS = "window.kvlabRecordPick(%(key)s, %(index)d);"
# CSS classes that app/site/ turns into the Bokeh names the bridge looks up.
ANSWER_CLASS = "kv-answer-%s-%d"  # a choice button: step key, choice index


def step_class(key: str) -> str:
    """The CSS class every choice button of one step carries (step keys are unique in a lesson)."""
    return "kv-choice-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in key)


PANEL_NAMES = {"admission": "the admission panel", "phases": "the phases panel", "serving_lab": "the serving lab"}


def _md(text: str, **kw) -> pn.pane.Markdown:
    return pn.pane.Markdown(text, css_classes=["kv-lesson"], stylesheets=[LESSON_CSS], sizing_mode="stretch_width", **kw)


def _html(text: str, **kw) -> pn.pane.HTML:
    return pn.pane.HTML(f'<div class="kv-lesson">{text}</div>', stylesheets=[LESSON_CSS], sizing_mode="stretch_width", **kw)


def lesson_href(code: str) -> str:
    return page_href(course.slug(code), theme=True)


def _link(code: str) -> str:
    return f'<a href="{esc(lesson_href(code))}">{esc(code)} {esc(course.title(code))}</a>'


def try_this_link(step: TryThis) -> str:
    return page_href(step.panel, {k: str(v).lower() if isinstance(v, bool) else v for k, v in step.start.items()}, theme=True)


def header_html(lesson: Lesson) -> str:
    prereq = ", ".join(_link(c) for c in lesson.prerequisites) or "none"
    nxt = course.next_code(lesson.code)
    nxt_html = _link(nxt) if nxt else "the end of the course"
    return (f'<div class="kv-head"><h1>{esc(lesson.code)}. {esc(lesson.title)}</h1><dl>'
            f'<dt>Objective</dt><dd>{esc(lesson.objective)}</dd><dt>Prerequisites</dt><dd>{prereq}</dd>'
            f'<dt>Time</dt><dd>{lesson.minutes} minutes</dd><dt>Next</dt><dd>{nxt_html}</dd></dl></div>')


def _try_this(steps: tuple[TryThis, ...]) -> pn.pane.HTML:
    items = "".join(f'<li>{esc(s.change)} <a href="{esc(try_this_link(s))}" target="_blank" rel="noopener">'
                    f'Open {PANEL_NAMES.get(s.panel, s.panel)} at the starting state (new tab)</a></li>' for s in steps)
    return _html(f'<div class="kv-try"><strong>Try this</strong><ol>{items}</ol></div>')


def _steady_view(view: LiveView) -> pn.viewable.Viewable:
    from kvlab.app.views.admission_numbers import AdmissionNumbers
    from kvlab.app.views.batch_chart import BatchChart
    from kvlab.app.views.controls import Controls
    from kvlab.app.views.engine_log import EngineLog
    from kvlab.app.views.fit_curve import FitCurveChart
    from kvlab.app.views.hbm_bar import HbmBar
    from kvlab.app.views.kv_formula import KvFormula
    from kvlab.app.views.notices import Notices
    from kvlab.app.views.panels import make_store
    from kvlab.app.views.phase_numbers import PhaseNumbers
    from kvlab.app.views.roofline_chart import RooflineChart
    from kvlab.app.views.step_breakdown import StepBreakdown

    kinds = {"kv_formula": KvFormula, "hbm_bar": HbmBar, "fit_curve": FitCurveChart, "admission_numbers": AdmissionNumbers,
             "phase_numbers": PhaseNumbers, "step_breakdown": StepBreakdown, "roofline": RooflineChart,
             "batch_chart": BatchChart, "engine_log": EngineLog, "notices": Notices}
    curves = tuple(c for c, name in (("fit", "fit_curve"), ("batch", "batch_chart")) if name in view.views)
    store = make_store(view.state, curves=curves)
    controls = Controls(store)
    widgets = []
    for name in view.controls:
        if name in ("prompt_tokens", "output_tokens", "concurrency"):
            widgets.append({"prompt_tokens": controls.prompt, "output_tokens": controls.output,
                            "concurrency": controls.concurrency}[name])
        elif name == "model":
            widgets.append(controls.model)
        else:
            widgets.append(controls.widgets[name])
    parts = [kinds[k](store=store) for k in view.views]
    return _framed(view, widgets, parts)


# The site build renders every lesson in both themes: a live view's runs (deterministic, keyed by
# their configurations) are made for the first and shown again for the second. Build only: a served
# lesson builds a view when a student answers, and keeping every run would grow the server.
BUILD_LIVE_RUNS: dict = {}


def _lab_view(view: LiveView) -> pn.viewable.Viewable:
    from kvlab.app.engine_views import distribution, summary, sweep_chart, timeline
    from kvlab.app.engine_views.controls import LabControls
    from kvlab.app.engine_views.log_console import LogConsole
    from kvlab.app.engine_views.settings import LabSettings
    from kvlab.app.engine_views.store import SIZES, LabStore
    from kvlab.app.engine_views.ttft_by_prompt import TtftByPrompt
    from kvlab.app.viewlayer.lab_session import LabSession

    settings = LabSettings()
    state = dict(view.state)
    if "preset" in state:
        settings.preset = state.pop("preset")
    settings.param.update(**state)
    building = building_site()
    session = LabSession(settings.values(), known_runs=BUILD_LIVE_RUNS if building else None, **SIZES)
    store = LabStore(settings, synchronous=True, session=session)
    if building and not session.running and session.result is not None:
        BUILD_LIVE_RUNS[(session.config(), session.comparison_config())] = (session.result, session.compare)
    kinds = {"summary": summary.SummaryTiles, "distribution": distribution.LatencyDistribution, "timeline": timeline.Timeline,
             "sweep": sweep_chart.RateSweep, "log": LogConsole, "ttft_by_prompt": TtftByPrompt}
    controls = LabControls(store)
    widgets = [controls.widgets[name] for name in view.controls]
    parts = [kinds[k](store=store) for k in view.views]
    return _framed(view, widgets, parts)


def _framed(view: LiveView, widgets: list, parts: list) -> pn.Column:
    from kvlab.app.shell.a11y import labelled

    # A button group draws no title of its own: "1 2 4 8" alone names nothing, so it gets the
    # title the panels' sidebar gives it (the page script makes it the group's accessible name).
    widgets = [labelled(w, w.name) if isinstance(w, pn.widgets.RadioButtonGroup) and w.name else w for w in widgets]
    caption = _html(f'<p class="kv-caption"><strong>Live view.</strong> {esc(view.caption)}</p>')
    controls = pn.FlexBox(*[pn.Column(w, styles={"flex": "1 1 260px", "min-width": "0"}, margin=0) for w in widgets],
                          flex_wrap="wrap", sizing_mode="stretch_width", margin=0)
    return pn.Column(caption, controls, *parts, sizing_mode="stretch_width", css_classes=["kv-live"],
                     styles={"border": "1px solid var(--kv-border, #ccc)", "border-radius": "10px", "padding": "4px 8px"})




def live_view(view: LiveView) -> pn.viewable.Viewable:
    layout = _steady_view(view) if view.kind == "steady" else _lab_view(view)
    if building_site():
        layout.css_classes = [*layout.css_classes, f"kv-live-{len(BUILD_LIVE_SPECS)}"]
        BUILD_LIVE_SPECS.append({"kind": view.kind, "views": list(view.views), "state": dict(view.state)})
    return layout


def why_html(p: Prediction, picked: str) -> str:
    verdict = "Right." if picked == p.answer else f"Not quite: the simulator says <strong>{esc(p.answer)}</strong>."
    items = "".join(f'<li class="{"right" if c.label == p.answer else ""}">{esc(c.label)}'
                    f'{" (your pick)" if c.label == picked else ""}: {esc(c.why)}</li>' for c in p.choices)
    return f'<div class="kv-why"><p><strong>You predicted {esc(picked)}. {verdict}</strong></p><ul>{items}</ul></div>'


# The estimate box's label ("Your estimate: cost of a million output tokens, in dollars") wraps on a
# phone: Bokeh keeps a widget's title on one line, 44 px wider than a 320 px screen.
# Its box is as tall as a choice (CHOICE_CSS), at 16 px so a phone does not zoom into it.
ESTIMATE_BOX_CSS = (":host { max-width: min(100%, 360px) !important; } label { white-space: normal; } "
                    ".bk-input { min-height: 44px; font-size: 16px; }")

# A choice's label is a sentence at times: on a phone it wraps inside its button instead of making
# the page wider than the screen. Once a step is answered its choices are disabled, and Bokeh draws a
# disabled button at 65% opacity: the key came out at 2.5:1 (light) and 3.3:1 (dark).
# The key and a wrong pick keep full strength on the theme's state colours; the other choices, still
# to be read, stay at full contrast with a dashed outline that says they no longer take a click.
# Each is at least 44 x 44 CSS px, the target size of WCAG 2.5.5 (AAA) and Apple's HIG: a student taps
# one with a thumb, and a mis-tap is an answer that cannot be taken back. The host's 5 px margin
# keeps 10 px between two choices.
CHOICE_CSS = """:host { max-width: 100%; } .bk-btn { white-space: normal; text-align: left; height: auto;
  min-height: 44px; min-width: 44px; padding: 8px 14px; font-size: 16px; }
.bk-btn:disabled { opacity: 1; cursor: default; }
.bk-btn-default:disabled { border-style: dashed; }
.bk-btn-success:disabled { background: var(--kv-good, #006B4F); border-color: var(--kv-good, #006B4F); color: var(--kv-on-state, #FFF); }
.bk-btn-danger:disabled { background: var(--kv-bad, #A83A00); border-color: var(--kv-bad, #A83A00); color: var(--kv-on-state, #FFF); }"""


def _step_layout(key: str, title: str, asked: tuple, body: pn.Column) -> pn.Column:
    """A step's column: the question box (the question, its answer controls, the explanation), the
    step's own "Copy link to this step" and "Copy embed code for this step", then the reveal. Its class names it for
    `?step=<key>` (app/site/ and LessonBody show that step alone)."""
    box = pn.Column(*asked, css_classes=["kv-predict"], sizing_mode="stretch_width", margin=(12, 0),
                    styles={"border": "1px solid var(--kv-border, #ccc)", "border-radius": "10px", "padding": "8px 14px"})
    share = pn.FlexBox(*step_buttons(title, key), flex_wrap="wrap", align_items="center", sizing_mode="stretch_width", margin=0)
    return pn.Column(box, share, body, sizing_mode="stretch_width", margin=0, css_classes=[STEP_CLASS_PREFIX + key])


# A revealed step on a wide screen (1,200 px and up): its words in a column at a reading measure
# (READING_MEASURE) with its figure and live view beside them, so the
# student reads the sentence and sees the number it talks about without scrolling between them;
# below 1,200 px the two columns would each be too narrow (a chart under 500 px, or words under the
# measure), so the figure and the view stack under the words. The lesson's column widens to hold
# both (BODY_CSS).
BESIDE_CSS = f"""
:host {{ flex-direction: column; }}
@media (min-width: 1200px) {{
  :host {{ flex-direction: row !important; flex-wrap: nowrap !important; align-items: flex-start; }}
  .kv-reveal-words {{ flex: 0 0 {READING_MEASURE}; width: {READING_MEASURE} !important; }}
  .kv-reveal-shown {{ flex: 1 1 0; min-width: 0; width: auto !important; margin-left: 32px !important; position: sticky; top: 8px; }}
}}"""
BODY_CSS = "@media (min-width: 1200px) { :host { max-width: 1500px !important; } }"


def _beside(words: list, shown: list) -> list:
    """A step's reveal: `words` (reveal, peek, prose, try-this) with `shown` (figure, live view) beside them
    on a wide screen and under them on a narrow one (BESIDE_CSS); the words alone when nothing is shown."""
    if not shown:
        return words
    return [pn.FlexBox(pn.Column(*words, css_classes=["kv-reveal-words"], sizing_mode="stretch_width", margin=0),
                       pn.Column(*shown, css_classes=["kv-reveal-shown"], sizing_mode="stretch_width", margin=0),
                       css_classes=["kv-beside"], stylesheets=[BESIDE_CSS], sizing_mode="stretch_width", margin=0)]


def _reveal(step: Step, words: list) -> list:
    """Every step's reveal: its words, then its try-this links, with its figure and live view beside them."""
    shown: list = []
    if step.figure:
        shown.append(pn.pane.HTML(f'<div class="kv-lesson">{step.figure}</div>', stylesheets=[LESSON_CSS, FIGURE_CSS],
                                  sizing_mode="stretch_width"))
    if step.view is not None:
        shown.append(live_view(step.view))
    if step.try_this:
        words = [*words, _try_this(step.try_this)]
    return _beside(words, shown)


class StepView(pn.viewable.Viewer):
    """One step: the question and its choices; the rest appears once a choice is made."""

    def __init__(self, step: Step, on_answer, title: str = ""):
        super().__init__()
        self.step = step
        self.on_answer = on_answer
        p = step.prediction
        self.buttons = [pn.widgets.Button(label=c.label, color="default", variant="outline", stylesheets=[CHOICE_CSS],
                                          css_classes=["kv-choice", step_class(p.key)]) for c in p.choices]
        for i, b in enumerate(self.buttons):
            b.on_click(lambda _e, i=i: self.commit(i))
        self.picked: int | None = None
        self.why = _html("", visible=False)
        self.body = pn.Column(sizing_mode="stretch_width", visible=False, margin=0, css_classes=["kv-reveal"])
        question = _md(f"**Predict first.** {p.question}")
        self.layout = _step_layout(p.key, title, (question, pn.FlexBox(*self.buttons), self.why), self.body)
        if building_site():
            self._static_reveal()
        else:
            for i, b in enumerate(self.buttons):
                b.js_on_click(code=RECORD_PICK_JS % {"key": json.dumps(p.key), "index": i})

    def _reveal_parts(self) -> list:
        return _reveal(self.step, [_md(self.step.prediction.reveal), _md(self.step.prose)])

    def _static_reveal(self) -> None:
        """The static site runs no Python behind a lesson: the reveal is built now (hidden), and
        each choice shows it in the browser with the text `commit` would write (site's addition)."""
        p = self.step.prediction
        self.body.objects = self._reveal_parts()
        args = {"why": self.why, "body": self.body}  # never a button: see STATIC_REVEAL_JS
        for i, choice in enumerate(p.choices):
            why = escape(f'<div class="kv-lesson">{why_html(p, choice.label)}</div>')
            self.buttons[i].css_classes = [*self.buttons[i].css_classes, ANSWER_CLASS % (p.key, i)]
            self.buttons[i].js_on_click(args=args, code=STATIC_REVEAL_JS % {
                "step_class": json.dumps(step_class(p.key)), "index": i, "answer": json.dumps(p.answer),
                "why": json.dumps(why), "key": json.dumps(p.key), **NEXT_STEP_ARGS})

    def commit(self, index: int, notify: bool = True) -> None:
        if self.picked is not None:
            return
        p = self.step.prediction
        self.picked = index
        picked = p.choices[index].label
        for b in self.buttons:
            b.disabled = True
            if b.label == p.answer:
                b.color, b.variant = "success", "solid"
        if picked != p.answer:
            self.buttons[index].color, self.buttons[index].variant = "danger", "solid"
        self.why.object = f'<div class="kv-lesson">{why_html(p, picked)}</div>'
        self.why.visible = True
        if not self.body.objects:
            self.body.objects = self._reveal_parts()
        self.body.visible = True
        if notify:
            self.on_answer(p.key, index)

    def __panel__(self):
        return self.layout


# model.number in the browser: whole numbers with separators from 1,000 up, three significant figures below,
# half rounded up (Intl's default rounding, ROUND_HALF_UP in model.number). tests/browser compares the two.
NUMBER_JS = ("const number = (x) => new Intl.NumberFormat('en-GB', Math.abs(x) >= 1000 ? {maximumFractionDigits: 0} "
             ": {maximumSignificantDigits: 3}).format(x);")

# A numeric step checked in the static site (the button's click, or Enter in the box): the same rule as
# EstimateView.check on the server. A refused estimate shows model.estimate_problem's message and keeps the
# box; a taken one locks the step, shows model.estimate_verdict's sentence (written here with NUMBER_JS), the
# reveal and the math peek, and writes the estimate into the address bar. The bridge re-applies one from a
# link by running the button's script with {estimate: value} as its data (static/kvlab-bridge.js). The step's
# models are found by its CSS class, never named in `args` (see STATIC_REVEAL_JS).
ESTIMATE_JS = NUMBER_JS + """
const parts = [...source.document.all_models].filter((m) => (m.css_classes || []).includes(%(step_class)s));
if (parts.some((m) => m.disabled)) { return; }
const input = parts.find((m) => m.css_classes.includes('kv-estimate-input'));
const given = cb_data && cb_data.estimate !== undefined; // a link's estimate (the bridge), or Enter's (ENTER_JS)
const raw = String(given ? cb_data.estimate : (input.value_input || input.value || ''));
const cleaned = raw.replace(new RegExp(%(ignored)s, 'g'), '');
const value = new RegExp('^(?:' + %(pattern)s + ')$').test(cleaned) ? Number(cleaned) : NaN;
if (!(value > 0 && value <= %(limit)r)) { why.text = %(problem)s; return; }
const figure = %(figure)r;
const ratio = Math.max(value, figure) / Math.min(value, figure);
const off = ratio <= %(within)r ? 'within 10%%' : 'off by ' + number(ratio) + 'x (' + (value > figure ? 'too high' : 'too low') + ')';
const verdict = 'You said ' + number(value) + ' ' + %(unit)s + '; the simulator says ' + %(answer)s + ': ' + off + '.';
// Escaped twice: as the text of the HTML, and as an HTML pane's text is held (Panel decodes it once).
const h = (t) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#x27;');
why.text = %(result)s.replace('@@VERDICT@@', h(h(verdict)));
if (given) { input.value = raw; }
for (const m of parts) { m.disabled = true; }
body.visible = true;
const url = new URL(window.location.href);
url.searchParams.set(%(key)s, String(value));
window.history.replaceState(window.history.state, '', url.pathname + url.search + url.hash);
""" + NEXT_STEP_JS

# Enter in a numeric step's box (Panel's TextInput event) runs the step's button script with what was typed: one
# copy of ESTIMATE_JS a step (the site holds every lesson within 30 MB).
ENTER_JS = """
const button = [...source.document.all_models].find((m) => (m.css_classes || []).includes(%(step_class)s)
  && (m.tags || []).includes('kv-estimate'));
const callbacks = button.js_event_callbacks;
for (const cb of (callbacks instanceof Map ? callbacks.get('button_click') : callbacks.button_click) || []) {
  cb.execute(button, {estimate: source.value_input});
}
"""


def estimate_label(p: Prediction) -> str:
    """The estimate box's visible label, which is also its accessible name: what to estimate, and in what."""
    return f"Your estimate: {p.quantity}, in {p.unit}"


def _live(inner: str) -> str:
    """The estimate's message region: read out politely when its text changes (a refusal or the verdict)."""
    return f'<div role="status" aria-live="polite" class="kv-estimate-msg">{inner}</div>'


def _wrapped(inner: str) -> str:
    """An HTML pane's text as `_html` first wraps it (the site's script sets the pane's text whole)."""
    return f'<div class="kv-lesson">{inner}</div>'


def _refused_html(p: Prediction) -> str:
    return _live(f'<p class="kv-refused">{esc(model.estimate_problem(p))}</p>')


def _verdict_html(verdict: str) -> str:
    # .kv-why: a11y.js moves the focus to it after a click on the check button (.kv-choice), as for a choice.
    return _live(f'<div class="kv-why"><p><strong>{verdict}</strong></p></div>')


def peek_html(p: Prediction) -> str:
    """The math peek: the governing equation, written with this state's numbers (each line a checked claim)."""
    lines = "".join(f"<li><code>{esc(c.text)}</code></li>" for c in p.peek)
    return f'<div class="kv-peek"><strong>Math peek</strong><ul>{lines}</ul></div>'


class EstimateView(pn.viewable.Viewer):
    """A numeric step: the question, a labelled number box and "Check my estimate" (Enter checks too). A refused
    estimate gets a message naming the field and its range and keeps the box; a taken one shows how far off it
    is, the reveal and the math peek, and is written into the address bar (`?a1-bytes=150000`)."""

    def __init__(self, step: Step, on_answer, title: str = ""):
        super().__init__()
        self.step = step
        self.on_answer = on_answer
        p = step.prediction
        self.input = pn.widgets.TextInput(label=estimate_label(p), placeholder=f"a number, in {p.unit}",
                                          css_classes=["kv-estimate-input", step_class(p.key)], max_width=360,
                                          sizing_mode="stretch_width", stylesheets=[ESTIMATE_BOX_CSS])
        self.button = pn.widgets.Button(label="Check my estimate", color="primary", stylesheets=[CHOICE_CSS],
                                        css_classes=["kv-choice", step_class(p.key)], align="end")
        self.buttons = [self.button]
        self.button.on_click(lambda _e: self.check(self.input.value_input or self.input.value))
        self.input.param.watch(lambda _e: self.check(self.input.value_input or self.input.value), "enter_pressed")
        self.picked: float | None = None
        self.why = _html(_live(""))
        self.body = pn.Column(sizing_mode="stretch_width", visible=False, margin=0, css_classes=["kv-reveal"])
        question = _md(f"**Estimate first.** {p.question}")
        self.layout = _step_layout(p.key, title, (question, pn.FlexBox(self.input, self.button, align_items="flex-end"), self.why),
                                   self.body)
        if building_site():
            self._static_reveal()

    def _reveal_parts(self) -> list:
        p = self.step.prediction
        return _reveal(self.step, [_md(p.reveal), _html(peek_html(p)), _md(self.step.prose)])

    def _static_reveal(self) -> None:
        """The site's reveal, built now and hidden; the button and Enter run ESTIMATE_JS in the browser. The
        button carries the class the site turns into its name `answer:<key>:0`, and the tag that tells the
        bridge to hand it a link's estimate."""
        p = self.step.prediction
        self.body.objects = self._reveal_parts()
        self.button.css_classes = [*self.button.css_classes, ANSWER_CLASS % (p.key, 0)]
        self.button.tags = ["kv-estimate"]
        code = ESTIMATE_JS % {
            "step_class": json.dumps(step_class(p.key)), "ignored": json.dumps(model.ESTIMATE_IGNORED),
            "pattern": json.dumps(model.ESTIMATE_NUMBER), "limit": model.estimate_limit(p), "figure": p.figure, "within": model.WITHIN,
            # An HTML pane's text is held escaped (Panel decodes it): as STATIC_REVEAL_JS writes `why`.
            "problem": json.dumps(escape(_wrapped(_refused_html(p)))),
            "result": json.dumps(escape(_wrapped(_verdict_html("@@VERDICT@@")))),
            "unit": json.dumps(p.unit), "answer": json.dumps(p.answer), "key": json.dumps(p.key), **NEXT_STEP_ARGS}
        args = {"why": self.why, "body": self.body}  # never a button or the box: see STATIC_REVEAL_JS
        self.button.js_on_click(args=args, code=code)
        Callback(self.input, code={"event:enter-pressed": ENTER_JS % {"step_class": json.dumps(step_class(p.key))}})

    def check(self, text, notify: bool = True) -> bool:
        """Take the typed estimate (True), or show why not (False); once taken the step is locked."""
        if self.picked is not None:
            return False
        p = self.step.prediction
        value = model.read_estimate(text, p)
        if value is None:
            self.why.object = _wrapped(_refused_html(p))
            return False
        self.picked = value
        if not notify:  # a link's estimate: show it in the box it came from
            self.input.value = str(text)
        self.input.disabled = self.button.disabled = True
        self.why.object = _wrapped(_verdict_html(esc(model.estimate_verdict(value, p))))
        if not self.body.objects:
            self.body.objects = self._reveal_parts()
        self.body.visible = True
        if notify:
            self.on_answer(p.key, f"{value:.15g}")
        return True

    def __panel__(self):
        return self.layout


def _query_from_url() -> dict[str, str]:
    """The address bar's keys: each step's answer (a choice's index, or an estimate) and ?step=<key>."""
    loc = pn.state.location
    return {} if loc is None else {str(k): str(v) for k, v in (loc.query_params or {}).items()}


def _choice_index(text: str | None) -> int | None:
    """A choice's index as a link writes it; None for anything else (ignored, as a hand-edited link may say)."""
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def answers_buttons(box=None) -> list:
    """"Copy my answers" and "Download my answers", for the answer key page (app/shell/share.py)."""
    from kvlab.sim import __version__

    return picks_buttons(page_href("answers", theme=True), __version__, box)


class LessonBody(pn.viewable.Viewer):
    """The lesson's column: header, setup, steps, recap (hidden until every pick), limits box."""

    def __init__(self, lesson: Lesson):
        super().__init__()
        self.lesson = lesson
        self.only = False  # showing one step alone (?step=<key>)
        self.recap = pn.Column(visible=False, sizing_mode="stretch_width", margin=0, css_classes=[RECAP_CLASS])
        self.steps = [(EstimateView if s.prediction.numeric else StepView)(s, self._answered, f"{lesson.code} {lesson.title}")
                      for s in lesson.steps]
        query = _query_from_url()
        for sv in self.steps:
            given = query.get(sv.step.prediction.key)
            if isinstance(sv, EstimateView):
                if given is not None:
                    sv.check(given, notify=False)
                continue
            index = _choice_index(given)
            if index is not None and 0 <= index < len(sv.step.prediction.choices):
                sv.commit(index, notify=False)
        self._show_steps()
        self._show_recap()
        if building_site():  # the static site shows it once every step is answered
            self.recap.objects = self._recap_parts()
        missing = "".join(f"<li>{esc(t)}</li>" for t in lesson.not_captured)
        # "Copy link" carries the picks made so far (each is in the address bar), so a student can
        # send an instructor the page as answered; "Copy embed code" embeds the whole lesson.
        *buttons, box = share_buttons(f"{lesson.code} {lesson.title}")
        share = pn.FlexBox(*buttons, *answers_buttons(box), box, flex_wrap="wrap", align_items="center",
                           sizing_mode="stretch_width", margin=0)
        self.layout = pn.Column(
            _html(header_html(lesson)), share, _md(lesson.setup), *self.steps, self.recap,
            _html(f'<div class="kv-box"><strong>What this model does not capture</strong><ul>{missing}</ul></div>'),
            max_width=900, sizing_mode="stretch_width", css_classes=[BODY_CLASS], stylesheets=[BODY_CSS])
        self._only_step(query.get("step"))

    def _only_step(self, key: str | None) -> None:
        """?step=<key>: the page shows that step alone (the site's bridge does the same there)."""
        shown = next((sv.layout for sv in self.steps if sv.step.prediction.key == key), None)
        if shown is None:
            return
        self.only = True
        for child in self.layout.objects:
            child.visible = child is shown

    def _answered(self, key: str, index: int | str) -> None:
        """A pick (its choice's index) or an estimate (the number, as text) goes into the address bar."""
        if pn.state.location is not None:
            pn.state.location.update_query(**{key: index})
        self._show_steps()
        self._show_recap()

    def _show_steps(self) -> None:
        """Each step's question shows once the step before it is answered (model.step_shown)."""
        if self.only:
            return
        answered = [sv.picked is not None for sv in self.steps]
        for i, sv in enumerate(self.steps):
            sv.layout.visible = model.step_shown(i, answered)

    def _recap_parts(self) -> list:
        items = "".join(f"<li>{esc(r)}</li>" for r in self.lesson.recap)
        checked = "".join(f"<li>{'✓' if c.holds else '✗'} {esc(c.text)}</li>" for c in self.lesson.claims)
        return [_html(f"<h2>Recap</h2><ul>{items}</ul>"),
                pn.Card(_html(f"<ul>{checked}</ul>"), title="What the simulator checked when this page was built",
                        collapsed=True, sizing_mode="stretch_width")]

    def _show_recap(self) -> None:
        if self.only or self.recap.visible or any(sv.picked is None for sv in self.steps):
            return
        self.recap.objects = self._recap_parts()
        self.recap.visible = True

    def __panel__(self):
        return self.layout


def lesson_body(lesson: Lesson) -> LessonBody:
    return LessonBody(lesson)


def page(title: str, slug: str, body) -> KvTemplate:
    # KvTemplate (app/shell/a11y.py): skip link, landmarks, named widgets, focus rings, the phone layout.
    # Each body opens with its own <h1>, the page's one (title_heading).
    return KvTemplate(
        title=f"{SITE} · {title}", header=[nav_links(current=slug), theme_button()], main=[body], title_heading=False,
        header_background=HEADER_COLOR, theme="dark" if pn.config.theme == "dark" else "default")


def lesson_page(lesson: Lesson) -> KvTemplate:
    return page(f"{lesson.code} {lesson.title}", lesson.slug, lesson_body(lesson))


def course_map_html(level: int = 3) -> str:
    """Every unit and lesson in order; written lessons are links with their minutes, the core path marked.
    Units are headings of `level`: one below the heading the map sits under (the landing page's h2
    "Lessons", the course page's h1), as axe's heading-order rule asks."""
    units = []
    for letter, name, codes in course.UNITS:
        items = []
        for code in codes:
            core = ' <span class="kv-core">core</span>' if code in course.CORE_PATH else ""
            entry = course.CATALOG[code]
            if entry.module is not None:
                items.append(f'<li><a href="{esc(lesson_href(code))}">{esc(code)}. {esc(entry.title)}</a> '
                             f'<span class="kv-min">{entry.minutes} min</span>{core}</li>')
            else:
                items.append(f'<li>{esc(code)}. {esc(course.title(code))} <span class="kv-min">(not written yet)</span>{core}</li>')
        units.append(f'<section class="kv-unit"><h{level}>Unit {esc(letter)}: {esc(name)}</h{level}><ol>{"".join(items)}</ol></section>')
    core_minutes = sum(course.CATALOG[c].minutes for c in course.CORE_PATH if c in course.MODULES)
    return (f'<div class="kv-course"><p>The core path ({len(course.CORE_PATH)} lessons, marked <span class="kv-core">core</span>; '
            f'{core_minutes} minutes of it written) runs {", ".join(course.CORE_PATH)}. '
            f'Terms are defined in the <a href="{esc(page_href("glossary", theme=True))}">glossary</a>.</p>'
            f'<div class="kv-units">{"".join(units)}</div></div>')


COURSE_CSS = """
.kv-units { display: grid; grid-template-columns: repeat(auto-fit, minmax(280px, 1fr)); gap: 8px 24px; }
.kv-unit h2, .kv-unit h3 { font-size: 1.1rem; margin: 10px 0 4px; }
.kv-unit ol { padding-left: 20px; margin: 0; list-style: none; }
.kv-unit li { margin: 3px 0; }
.kv-core { font-size: 13px; font-weight: 700; border: 1px solid var(--kv-border); border-radius: 4px; padding: 0 4px; }
.kv-min { font-size: 14px; }
"""


def course_page() -> KvTemplate:
    body = pn.pane.HTML(f'<div class="kv-lesson"><h1>Lessons</h1><p>Each lesson asks you to predict first, then shows what '
                        f'the simulator computes, with the views it talks about inline.</p>{course_map_html(level=2)}'
                        f'<p>For instructors: the <a href="{esc(page_href("answers", theme=True))}">answer key</a>, every '
                        f'question with its key, the simulated figure behind it and the misconception each wrong choice '
                        f'tests (also <code>kvlab answer-key</code>).</p></div>',
                        stylesheets=[LESSON_CSS, COURSE_CSS], sizing_mode="stretch_width")
    # A student's picks across the lessons, kept in this browser: for the instructor's key page.
    answers = pn.FlexBox(*answers_buttons(), flex_wrap="wrap", align_items="center", sizing_mode="stretch_width", margin=0)
    return page("Lessons", "lessons", pn.Column(body, answers, max_width=1000, sizing_mode="stretch_width"))


def answers_page() -> KvTemplate:
    """The instructor's answer key (lessons/answer_key.py's Markdown, from the lesson data), as a page of
    the site and of kvlab serve."""
    from .answer_key import answer_key, to_json, to_markdown
    from .picks import reader

    key = answer_key()
    if building_site():  # the site publishes the key as data too
        BUILD_FILES["answers.json"] = to_json(key)
    # The lessons it keys, as links: what an instructor opens beside it (and the page's keyboard stops:
    # a scrolling page needs something to focus, axe's scrollable-region-focusable).
    links = " \u00b7 ".join(f'<a href="{esc(lesson_href(code))}">{esc(code)}</a>' for code in course.written())
    toc = _html(f'<p>The lessons: {links}.</p>')
    title, text = to_markdown(key).split("\n", 1)  # a student's answers, when a link brings them, under the title
    return page("Answer key", "answers", pn.Column(_md(title), reader(key, [LESSON_CSS]), _md(text), toc, max_width=900,
                                                   sizing_mode="stretch_width"))


def glossary_page() -> KvTemplate:
    from .content.glossary import TERMS

    rows = []
    for term, meaning, code in sorted(TERMS, key=lambda t: t[0].lower()):
        where = (f'<a href="{esc(lesson_href(code))}">{esc(code)}</a>' if code in course.MODULES
                 else f"{esc(code)} (not written yet)")
        rows.append(f"<dt>{esc(term)}</dt><dd>{esc(meaning)} Taught in {where}.</dd>")
    body = pn.pane.HTML(f'<div class="kv-lesson"><h1>Glossary</h1><dl class="kv-glossary">{"".join(rows)}</dl></div>',
                        stylesheets=[LESSON_CSS, ".kv-glossary dt { font-weight: 700; margin-top: 10px; } .kv-glossary dd { margin: 0; }"],
                        sizing_mode="stretch_width")
    return page("Glossary", "glossary", pn.Column(body, max_width=900, sizing_mode="stretch_width"))
