"""The curves behind two charts, each point one evaluation (`sim.sweep`; no formula re-derived here).

- sequences that fit against prompt length (panel 1): what the admission decision does as the
  prompt grows, with everything else held;
- aggregate and per-stream throughput against batch (panel 2): amortisation of the weight read
  flattening out as each sequence's own cache comes to dominate the step.

A point of a sweep costs about 0.015 ms in CPython (the 64-point fit curve 0.97 ms, the 40-point
batch curve 0.62 ms, each at a new state); curves are cached on the scenario minus the swept
field, so dragging the prompt slider only moves the marker on the sequences curve and re-sweeps
the batch curve once per new prompt length.
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from dataclasses import dataclass

from kvlab.sim import Scenario, sweep

POINTS = 64


@dataclass(frozen=True)
class FitCurve:
    prompt_tokens: tuple[int, ...]
    max_sequences: tuple[int, ...]


@dataclass(frozen=True)
class BatchCurve:
    batch: tuple[int, ...]
    tokens_per_s: tuple[float, ...]  # aggregate decode throughput
    per_stream_tokens_per_s: tuple[float, ...]
    itl_s: tuple[float, ...]


def log_grid(low: int, high: int, points: int = POINTS) -> tuple[int, ...]:
    """Distinct integers from low to high (both included), evenly spaced in log."""
    if high <= low:
        return (low,)
    step = (math.log(high) - math.log(low)) / (points - 1)
    return tuple(sorted({round(math.exp(math.log(low) + i * step)) for i in range(points)} | {low, high}))


def _key(s: Scenario, **drop) -> str:
    d = s.to_dict()
    d.update(drop)
    return json.dumps(d, sort_keys=True, default=str)


class _Memo:
    """A small LRU keyed on a string (a Scenario holding a pasted config dict is not hashable)."""

    def __init__(self, size: int = 64):
        self.size = size
        self.items: OrderedDict[str, object] = OrderedDict()

    def get(self, key: str, compute):
        if key in self.items:
            self.items.move_to_end(key)
            return self.items[key]
        value = self.items[key] = compute()
        if len(self.items) > self.size:
            self.items.popitem(last=False)
        return value


_fit_memo = _Memo()
_batch_memo = _Memo()


def fit_curve(s: Scenario, max_prompt_tokens: int) -> FitCurve:
    """max_sequences at prompt lengths from 16 tokens (or fewer) up to `max_prompt_tokens`."""
    key = f"{_key(s, prompt_tokens=None)}|{max_prompt_tokens}"
    return _fit_memo.get(key, lambda: _fit_curve(s, max_prompt_tokens))


def _fit_curve(s: Scenario, max_prompt_tokens: int) -> FitCurve:
    xs = log_grid(min(16, max_prompt_tokens), max_prompt_tokens)
    ys = tuple(r.max_sequences for r in sweep(s, "prompt_tokens", xs))
    return FitCurve(xs, ys)


def batch_curve(s: Scenario, max_batch: int) -> BatchCurve:
    """Decode throughput at batch sizes 1..max_batch (requests beyond the pool would only wait)."""
    key = f"{_key(s, concurrency=None)}|{max_batch}"
    return _batch_memo.get(key, lambda: _batch_curve(s, max_batch))


def _batch_curve(s: Scenario, max_batch: int) -> BatchCurve:
    xs, agg, per, itl = [], [], [], []
    for r in sweep(s, "concurrency", log_grid(1, max(max_batch, 1))):
        if r.itl_s is None:
            break
        xs.append(r.batch)
        agg.append(r.decode_tokens_per_s)
        per.append(r.per_stream_tokens_per_s)
        itl.append(r.itl_s)
    return BatchCurve(tuple(xs), tuple(agg), tuple(per), tuple(itl))
