"""The shape of a lesson: sections of prose with live numbers, claims, "try this" steps and
predict-then-reveal questions. Plain frozen dataclasses, no UI: the page renders them, the tests
check them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Claim:
    """A statement the prose makes, and whether the simulator agrees right now."""

    text: str
    holds: bool


@dataclass(frozen=True)
class TryThis:
    """A step for the student: `state` is the panel's settings to open (changes from the defaults)."""

    text: str
    state: dict
    panel: str = "admission"


@dataclass(frozen=True)
class Prediction:
    """Commit to an answer first, then see what the simulator says."""

    question: str
    choices: list[str]
    answer: str
    reveal: str


@dataclass(frozen=True)
class Section:
    title: str
    markdown: str
    claims: list[Claim]
    try_this: list[TryThis] = field(default_factory=list)
    predictions: list[Prediction] = field(default_factory=list)


@dataclass(frozen=True)
class Lesson:
    slug: str
    title: str
    summary: str
    sections: list[Section]

    @property
    def claims(self) -> list[Claim]:
        return [c for s in self.sections for c in s.claims]
