"""The shape of a lesson, as plain frozen dataclasses: no UI here. The page renders them
(lessons/render.py), the tests check them (tests/lessons).

A lesson is a header (objective, prerequisites, minutes, next), an optional setup paragraph that
poses the situation without answering anything, then steps. Each step opens with a prediction;
its reveal, prose, live view and "try this" links stay hidden until the student picks a choice.
The recap (which restates answers) stays hidden until every prediction is answered; the "what
this model does not capture" box is visible from the start because it answers nothing.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_UP, Decimal


@dataclass(frozen=True)
class Claim:
    """One statement the lesson makes, whether the simulator agrees right now, and the figure it
    actually computed (a failing test prints it)."""

    text: str
    holds: bool
    actual: str


def near(text: str, actual: float, expected: float, rel: float = 0.03) -> Claim:
    """`actual` within `rel` of `expected` (the fixed-point tolerance of design.md for times)."""
    return Claim(text, expected != 0 and abs(actual / expected - 1) <= rel, f"{actual:.6g} (expected {expected:g} ±{rel:.0%})")


def equal(text: str, actual, expected) -> Claim:
    return Claim(text, actual == expected, f"{actual!r} (expected {expected!r})")


def between(text: str, actual: float, low: float, high: float) -> Claim:
    return Claim(text, low <= actual <= high, f"{actual:.6g} (expected {low:g} to {high:g})")


def holds(text: str, condition: bool, actual: str) -> Claim:
    return Claim(text, bool(condition), actual)


@dataclass(frozen=True)
class Choice:
    """One answer a student can pick, and why someone would: for the right choice the reasoning,
    for a wrong one the misconception behind it."""

    label: str
    why: str


@dataclass(frozen=True)
class Prediction:
    """Commit to an answer first, then see what the simulator says. `answer` is the label of the
    right choice, computed from a simulation (never typed); `gives_away` are strings that state
    the answer (a figure as the reveal prints it) and must not be on the page before the choice."""

    key: str
    question: str
    choices: tuple[Choice, ...]
    answer: str
    reveal: str
    gives_away: tuple[str, ...] = ()
    # The simulated figure the key is read from and the edges of its buckets (`keyed` fills all
    # three). lessons/answers.json, the published key, holds answer and figure, so a key that flips when
    # sim changes fails a test instead of silently contradicting the explanations written for it.
    figure: float | None = None
    edges: tuple[float, ...] = ()
    # A numeric prediction (`estimate` fills these, with no choices): the student types a number of
    # `unit` for `quantity`, sees how far it is from `figure`, then the reveal and the "math peek":
    # the governing equation with this state's numbers, each line a claim the tests check.
    unit: str = ""
    quantity: str = ""
    peek: tuple[Claim, ...] = ()

    @property
    def numeric(self) -> bool:
        return bool(self.unit)

    def choice(self, label: str) -> Choice:
        return next(c for c in self.choices if c.label == label)


@dataclass(frozen=True)
class TryThis:
    """Open `panel` at the *starting* state `start` (settings for the steady-state panels, or a
    lab preset and changes) in a new tab; `change` names what to do there."""

    change: str
    start: dict
    panel: str = "admission"


@dataclass(frozen=True)
class LiveView:
    """Views shown inline at the state the text describes, with the lesson's own controls.

    `kind` "steady" builds a panel store over `state` (sim.Scenario fields) and shows the named
    steady-state views (kv_formula, hbm_bar, fit_curve, admission_numbers, phase_numbers,
    step_breakdown, roofline, batch_chart, engine_log); "lab" runs the time-domain engine from a
    preset plus `state` and shows lab views (summary, distribution, ttft_by_prompt, timeline,
    sweep, log). `controls` are the settings the lesson lets the student move."""

    kind: str
    views: tuple[str, ...]
    state: dict
    controls: tuple[str, ...] = ()
    caption: str = ""


@dataclass(frozen=True)
class Step:
    prediction: Prediction
    prose: str  # Markdown with sim's figures; hidden until the prediction is answered
    claims: tuple[Claim, ...]
    view: LiveView | None = None
    try_this: tuple[TryThis, ...] = ()
    # A teaching figure (app/viewlayer: cache_grid, block_map, step_timeline): HTML computed from sim
    # when the lesson is built, shown in the reveal after the prose; its caption's facts are claims.
    figure: str = ""


@dataclass(frozen=True)
class Lesson:
    code: str  # "A1"
    slug: str  # the page: lessons/<slug>.py
    title: str
    objective: str
    prerequisites: tuple[str, ...]  # lesson codes
    minutes: int
    setup: str  # poses the situation; states no answer
    steps: tuple[Step, ...]
    recap: tuple[str, ...]
    not_captured: tuple[str, ...]
    ideas: tuple[str, ...] = field(default=())  # seed ideas taught (ids in lessons/course.py)
    extra_claims: tuple[Claim, ...] = ()  # claims of the recap and setup

    @property
    def claims(self) -> list[Claim]:
        return [c for s in self.steps for c in (*s.claims, *s.prediction.peek)] + list(self.extra_claims)

    @property
    def predictions(self) -> list[Prediction]:
        return [s.prediction for s in self.steps]


def bucket(value: float, edges: list[tuple[float, str]], last: str) -> str:
    """The first label whose upper edge is above `value`: turns a simulated figure into the
    matching choice, so the answer key is computed, not typed."""
    for edge, label in edges:
        if value < edge:
            return label
    return last


def keyed(value: float, edges: list[tuple[float, str]], last: str) -> dict:
    """A prediction's answer, figure and edges (Prediction keyword arguments): the label `bucket`
    picks for the simulated `value`, kept with the value and the edges it was compared to. A
    yes-or-no key is one edge: `keyed(a / b, [(1.0, "b")], "a")`."""
    return {"answer": bucket(value, edges, last), "figure": float(value), "edges": tuple(float(e) for e, _ in edges)}


def number(x: float) -> str:
    """The one way a lesson's estimate and its figure are written: whole numbers with thousands separators from
    1,000 up, three significant figures below (55.7, 0.624), half rounded up, no float noise. The static
    site's twin is render.NUMBER_JS (Intl.NumberFormat with the same rule; a browser test compares them)."""
    if not math.isfinite(x) or x == 0:
        return f"{x:g}"
    places = 0 if abs(x) >= 1000 else 2 - math.floor(math.log10(abs(x)))
    text = f"{Decimal(x).quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP):,f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


# What the estimate box accepts once commas, underscores and spaces are dropped: a plain decimal number,
# optionally with an exponent ("1.5e5"). Not "inf", "nan" or "0x10", which float() or JavaScript's Number() read.
ESTIMATE_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
ESTIMATE_IGNORED = r"[,_\s]"
WITHIN = 1.1  # an estimate within 10% of the figure (either way) is "within 10%", not "off by"


def estimate(figure: float, quantity: str, unit: str) -> dict:
    """A numeric prediction's keyword arguments: no choices; the answer is the figure as the page writes it."""
    return {"choices": (), "answer": f"{number(figure)} {unit}", "figure": float(figure), "quantity": quantity, "unit": unit}


def estimate_limit(p: Prediction) -> float:
    """The largest estimate the box takes: ten thousand times the figure's order of magnitude (anything above
    is a slip of the keyboard, not a guess)."""
    return 10.0 ** (math.floor(math.log10(p.figure)) + 4)


def estimate_problem(p: Prediction) -> str:
    """The message for an estimate the box refuses: the field and the range it takes."""
    return f"{p.quantity}: enter a number above 0 and at most {number(estimate_limit(p))} ({p.unit})."


def read_estimate(text: str, p: Prediction) -> float | None:
    """The typed estimate as a number, or None when the box refuses it (`estimate_problem` says why)."""
    cleaned = re.sub(ESTIMATE_IGNORED, "", str(text))
    if not re.fullmatch(ESTIMATE_NUMBER, cleaned):
        return None
    value = float(cleaned)
    return value if 0 < value <= estimate_limit(p) else None


def estimate_verdict(value: float, p: Prediction) -> str:
    """"You said X; the simulator says Y: off by N x (too high)", or "within 10%". render.ESTIMATE_JS writes the
    same sentence in the static site."""
    ratio = max(value, p.figure) / min(value, p.figure)
    off = "within 10%" if ratio <= WITHIN else f"off by {number(ratio)}x ({'too high' if value > p.figure else 'too low'})"
    return f"You said {number(value)} {p.unit}; the simulator says {p.answer}: {off}."


def equation(text: str, computed: float, simulated: float) -> Claim:
    """A math-peek line: `text` writes the equation with the state's numbers, `computed` is its arithmetic
    done on sim's own terms, `simulated` the figure sim reports; the line holds when they agree."""
    return near(text, computed, simulated, 1e-6)


def edge_margin(figure: float, edges: tuple[float, ...]) -> float:
    """How far the figure sits from its nearest bucket edge: the larger of the two over the smaller,
    less one (0.1: they differ by 10% of the smaller). inf without edges or with the figure at zero;
    figures and edges are positive."""
    return min((max(figure, e) / min(figure, e) - 1 if min(figure, e) > 0 else float("inf") for e in edges),
               default=float("inf"))


def step_shown(index: int, answered: list[bool]) -> bool:
    """Whether the page shows step `index`'s question, given which steps are answered (in page order):
    the first always, any other once the step before it is answered (or itself is, by a link). A later
    question, its choices among them, can then never say what an earlier one asks."""
    return index == 0 or answered[index] or answered[index - 1]


def visible_blocks(lesson: Lesson, answered: set[str]) -> list[tuple[str, str]]:
    """What the page shows, in page order, when the predictions in `answered` have been made:
    (kind, text) pairs. The renderer hides and shows its parts by this rule, and the test that no
    answer comes before its question reads it."""
    out = [("header", f"{lesson.code} {lesson.title} {lesson.objective}"), ("setup", lesson.setup)]
    flags = [s.prediction.key in answered for s in lesson.steps]
    for i, step in enumerate(lesson.steps):
        p = step.prediction
        if not step_shown(i, flags):
            continue
        out.append(("question", p.question + " " + " ".join(c.label for c in p.choices)))
        if p.key in answered:
            out.append(("reveal", " ".join([p.reveal, *(c.why for c in p.choices), *(c.text for c in p.peek)])))
            out.append(("prose", step.prose))
            if step.figure:
                out.append(("figure", step.figure))
            out += [("try", t.change) for t in step.try_this]
            if step.view is not None:
                out.append(("view", step.view.caption))
    if all(s.prediction.key in answered for s in lesson.steps):
        out.append(("recap", " ".join(lesson.recap)))
    out.append(("not_captured", " ".join(lesson.not_captured)))
    return out


def place_answers(lesson: Lesson, first: int) -> Lesson:
    """The lesson with each question's right choice moved to position `first`, `first + 1`, ... (modulo
    its number of choices), the wrong ones kept in their written order around it. Authors tend to put
    the right answer in the middle (24 of 41 three-choice questions did); taking turns by position
    spreads the keys over every place, and the same order reaches the page, the tests and the key."""
    steps = []
    for i, step in enumerate(lesson.steps):
        p = step.prediction
        if p.numeric:  # no choices to place
            steps.append(step)
            continue
        wrong = [c for c in p.choices if c.label != p.answer]
        wrong.insert((first + i) % len(p.choices), p.choice(p.answer))
        steps.append(replace(step, prediction=replace(p, choices=tuple(wrong))))
    return replace(lesson, steps=tuple(steps))

