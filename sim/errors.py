"""Structured errors for bad user input.

The simulator never lets an exception escape to the caller for bad input: every problem becomes
an `Issue` that names the field, says what was wrong and what range is allowed. `InputError` is
raised internally and caught at the API boundary (`sim.evaluate`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Issue:
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"

    def to_dict(self) -> dict:
        return {"field": self.field, "message": self.message}


class InputError(ValueError):
    """One or more problems with user input; `issues` names each field."""

    def __init__(self, issues: list[Issue] | Issue):
        self.issues = [issues] if isinstance(issues, Issue) else list(issues)
        super().__init__("; ".join(str(i) for i in self.issues))


def require(condition: bool, field: str, message: str) -> None:
    if not condition:
        raise InputError(Issue(field, message))
