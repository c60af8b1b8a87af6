"""The engine's steps over time while one long prompt arrives among running answers (lesson C3):
one panel per scheduling policy, stacked on one time axis. Standard library only.

Each step is a bar as long as it ran, in two lanes: the prefill lane (orange) where the step
computed prompt tokens, the decode lane (sky blue) where it gave every running answer a token. A
whole prefill is one long orange bar with nothing under it: the answers wait. Chunked, orange and
blue share every step. Marked: the long prompt's time to first token (from its arrival), and the
longest wait between two tokens of the running answers. The steps are sim's (sim.engine.steps).

A student selects a step by clicking it, or from the keyboard on the line under the panel (a
role="slider" whose value is the step's number: the arrow keys go to the step before or after it);
that line says what the step did, in the words `step_words` writes here (app/templates/drag.js only
moves the selection and shows the words; the step the long prompt enters is selected at first).
"""

from __future__ import annotations

from dataclasses import dataclass

from .figure import figure, line, panel, rect, svg, text
from .format import seconds
from .html import esc, key_legend
from .palette import COLORS

WIDTH = 300
LEFT = 46
RIGHT = 296
PREFILL_Y, DECODE_Y, LANE = 24, 50, 18
AXIS_Y = 98


@dataclass(frozen=True)
class TimelinePanel:
    """One run's steps (sim StepRecords: start_s, end_s, prompt_tokens, decode_seqs), the long prompt's
    arrival and first token, and the longest gap between decode tokens (start_s, end_s)."""

    title: str
    steps: tuple
    arrival_s: float
    first_token_s: float
    gap_s: tuple[float, float]


def summary(p: TimelinePanel) -> str:
    carried = [s for s in p.steps if s.prompt_tokens and p.arrival_s <= s.start_s < p.first_token_s]
    with_decodes = sum(1 for s in carried if s.decode_seqs)
    return (f"{p.title}: the long prompt's prefill runs in {len(carried)} step{'s' if len(carried) != 1 else ''}, "
            f"{with_decodes} of them also carrying the running answers; its first token comes "
            f"{seconds(p.first_token_s - p.arrival_s)} after it arrives, and the longest wait between two tokens of "
            f"a running answer is {seconds(p.gap_s[1] - p.gap_s[0])}.")


def step_words(p: TimelinePanel, step, k: int, n: int) -> str:
    """What a selected step did: when it ran, for how long, and what it carried (sim's StepRecord)."""
    def when(t_s: float) -> str:
        d = t_s - p.arrival_s
        return f"{seconds(d)} after the long prompt arrives" if d >= 0 else f"{seconds(-d)} before the long prompt arrives"

    prompt = f"computes {step.prompt_tokens:,} prompt tokens" if step.prompt_tokens else "computes no prompt tokens"
    decode = (f"gives {step.decode_seqs:,} running answer{'s' if step.decode_seqs != 1 else ''} a token each" if step.decode_seqs
              else "gives no running answer a token")
    return f"Step {k} of {n}: starts {when(step.start_s)} and runs {seconds(step.end_s - step.start_s)}; it {prompt} and {decode}."


def _pickable(p: TimelinePanel, shown: list, x, parts: list) -> str:
    """Each shown step as a group a click selects (its lanes' bars and a clear area over both lanes, so a
    thin step is as tall a target as a thick one), and the line under the panel that names the selected step."""
    first = next((k for k, s in enumerate(shown, 1) if s.prompt_tokens and s.start_s >= p.arrival_s), 1)
    for k, s in enumerate(shown, 1):
        width = max(x(s.end_s) - x(s.start_s) - 0.3, 0.3)  # a hairline between steps shows each one
        bars = rect(x(s.start_s), PREFILL_Y - 2, width, DECODE_Y + LANE - PREFILL_Y + 4, "transparent")
        if s.prompt_tokens:
            bars += rect(x(s.start_s), PREFILL_Y, width, LANE, COLORS["prefill"])
        if s.decode_seqs:
            bars += rect(x(s.start_s), DECODE_Y, width, LANE, COLORS["decode"])
        picked = ' class="kv-picked"' if k == first else ""
        parts.append(f'<g data-kv-step="{k}" data-kv-says="{esc(step_words(p, s, k, len(shown)))}"{picked}>{bars}</g>')
    says = step_words(p, shown[first - 1], first, len(shown)) if shown else ""
    return (f'<p class="kv-pick" role="slider" tabindex="0" aria-label="{esc("Selected step, " + p.title)}" aria-valuemin="1" '
            f'aria-valuemax="{len(shown)}" aria-valuenow="{first}" aria-valuetext="{esc(says)}">{esc(says)}</p>')


def _bracket(x0: float, x1: float, y: float, label: str, above: bool) -> str:
    tick = -3 if above else 3
    words_y = y - 4 if above else y + 12
    anchor, at = ("start", x0) if x0 < (LEFT + RIGHT) / 2 else ("end", x1)
    return (line(x0, y, x1, y) + line(x0, y, x0, y - tick) + line(x1, y, x1, y - tick)
            + text(at, words_y, label, anchor))


def timeline_panel(p: TimelinePanel, window: tuple[float, float]) -> str:
    """One policy's steps between window[0] and window[1] (seconds of the run)."""
    t0, t1 = window
    scale = (RIGHT - LEFT) / (t1 - t0)

    def x(t: float) -> float:
        return LEFT + (min(max(t, t0), t1) - t0) * scale

    parts = [text(0, PREFILL_Y + 13, "prefill", cls="small"), text(0, DECODE_Y + 13, "decode", cls="small")]
    pick = _pickable(p, [s for s in p.steps if s.end_s > t0 and s.start_s < t1], x, parts)
    parts.append(_bracket(x(p.arrival_s), x(p.first_token_s), 12, f"TTFT {seconds(p.first_token_s - p.arrival_s)}", True))
    parts.append(_bracket(x(p.gap_s[0]), x(p.gap_s[1]), DECODE_Y + LANE + 5, f"longest gap {seconds(p.gap_s[1] - p.gap_s[0])}",
                          False))
    parts.append(line(LEFT, AXIS_Y, RIGHT, AXIS_Y))
    tick = next(t for t in (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 1e9) if (t1 - t0) / t <= 5)
    n = 0
    while p.arrival_s + n * tick <= t1:
        at = x(p.arrival_s + n * tick)
        parts += [line(at, AXIS_Y, at, AXIS_Y + 3), text(at, AXIS_Y + 14, f"{n * tick:g}", "middle")]
        n += 1
    parts.append(text(RIGHT, AXIS_Y + 27, "seconds after the long prompt arrives", "end", "small"))
    return panel(p.title, svg(summary(p), WIDTH, AXIS_Y + 31, "".join(parts)) + pick)


def step_timeline_html(panels: list[TimelinePanel], caption: str, lead_s: float = 0.1, tail_s: float = 0.25) -> str:
    """The figure: every panel over one window, from `lead_s` before the long prompt arrives to
    `tail_s` after the later first token, stacked, with a legend and the caption."""
    start = min(p.arrival_s for p in panels) - lead_s
    end = max(p.first_token_s for p in panels) + tail_s
    legend = key_legend([(COLORS["prefill"], "prefill: prompt tokens computed"),
                         (COLORS["decode"], "decode: every running answer gets a token")])
    return figure("step-timeline", [timeline_panel(p, (start, end)) for p in panels], caption, legend, stacked=True)
