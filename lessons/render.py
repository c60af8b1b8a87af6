"""Turns a `Lesson` (plain data, numbers already computed by sim) into a Panel page.

Predict-then-reveal: the answer stays hidden until the student commits to a choice, and the
choice locks once made. "Try this" steps are real links to the panels
with the state in the query string, so they open exactly the scenario the text describes.
"""

from __future__ import annotations

from urllib.parse import urlencode

import panel as pn
from kvlab.app.html import BASE_CSS, esc
from kvlab.app.page import HEADER_COLOR, SITE
from kvlab.app.share import nav_links, page_extension, theme_button

from .content.model import Lesson, Prediction, Section, TryThis

LESSON_CSS = BASE_CSS + """
.kv-lesson { max-width: 46em; font-size: 1.05rem; line-height: 1.55; }
.kv-try { border-left: 5px solid #009E73; padding: 6px 14px; margin: 8px 0; background: var(--kv-surface); }
.kv-try a { font-weight: 600; }
"""


PLACE = {"serving_lab": "Open it in the serving lab"}


def try_this_link(step: TryThis, ext: str = "") -> str:
    query = urlencode({k: str(v).lower() if isinstance(v, bool) else v for k, v in step.state.items()})
    return f"./{step.panel}{ext}?{query}"


def _try_this(steps: list[TryThis]) -> pn.pane.HTML:
    ext = page_extension()
    items = "".join(f'<li>{esc(s.text)} <a href="{esc(try_this_link(s, ext))}">{PLACE.get(s.panel, "Open it in the panel")}</a></li>'
                    for s in steps)
    return pn.pane.HTML(f'<div class="kv-try"><strong>Try this</strong><ol>{items}</ol></div>',
                        stylesheets=[LESSON_CSS], sizing_mode="stretch_width")


def _prediction(p: Prediction) -> pn.Column:
    """One button per choice: pressing one commits the prediction, locks the others and reveals."""
    buttons = [pn.widgets.Button(label=c, color="default", variant="outline") for c in p.choices]
    answer = pn.pane.Alert("", alert_type="light", visible=False, sizing_mode="stretch_width")

    def commit(button: pn.widgets.Button) -> None:
        right = button.label == p.answer
        for b in buttons:
            b.disabled = True
            if b.label == p.answer:
                b.color, b.variant = "success", "solid"
        if not right:
            button.color, button.variant = "danger", "solid"
        verdict = "Right." if right else f"Not quite: the simulator says {p.answer}."
        answer.object = f"**You predicted {button.label}. {verdict}** {p.reveal}"
        answer.alert_type = "success" if right else "warning"
        answer.visible = True

    for b in buttons:
        b.on_click(lambda _, b=b: commit(b))
    return pn.Column(pn.pane.Markdown(f"**Predict first, then see.** {p.question}"), pn.FlexBox(*buttons), answer,
                     styles={"border": "1px solid var(--kv-border, #ccc)", "border-radius": "10px", "padding": "8px 14px"},
                     sizing_mode="stretch_width", margin=(12, 0), css_classes=["kv-predict"])


def _section(s: Section) -> list:
    parts: list = [pn.pane.Markdown(f"## {s.title}\n{s.markdown}", css_classes=["kv-lesson"],
                                    stylesheets=[LESSON_CSS], sizing_mode="stretch_width")]
    parts += [_prediction(p) for p in s.predictions]
    if s.try_this:
        parts.append(_try_this(s.try_this))
    return parts


def lesson_page(lesson: Lesson) -> pn.template.BootstrapTemplate:
    main: list = [pn.pane.Markdown(f"# {lesson.title}\n*{lesson.summary}*", sizing_mode="stretch_width")]
    for section in lesson.sections:
        main += _section(section)
    checked = "\n".join(f"- {'✓' if c.holds else '✗'} {c.text}" for c in lesson.claims)
    main.append(pn.Card(pn.pane.Markdown(checked), title="What the simulator checked when this page was built",
                        collapsed=True, sizing_mode="stretch_width"))
    return pn.template.BootstrapTemplate(
        title=f"{SITE} · {lesson.title}", header=[nav_links(current=lesson.slug), theme_button()],
        main=[pn.Column(*main, max_width=900, sizing_mode="stretch_width")], header_background=HEADER_COLOR,
        theme="dark" if pn.config.theme == "dark" else "default")
