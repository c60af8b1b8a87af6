"""Aggregate decode throughput against batch size, beside perfect amortisation.

The dashed line is batch x the one-sequence rate: what batching would give if the weight read
were the whole step. The real curve bends away from it as each added sequence brings its own
cache to every step, and stops where the KV pool is full.
"""

from __future__ import annotations

from . import format as fmt
from . import readouts

TITLE = "Throughput against batch: amortisation flattens"


def view_batch_chart(result, batch=None) -> dict:
    stop = readouts.refusal(result)
    if stop is not None:  # nothing runs: no curve and no point, and the summary says why
        out = _view_batch_chart(result, None)
        out["summary"] = readouts.summary("summary-batch", f"Nothing runs ({stop[0]}), so there is no batch to draw.")
        return out
    out = _view_batch_chart(result, batch)
    out["summary"] = readouts.summary("summary-batch", readouts.batch_summary(batch, result))
    return out


def _view_batch_chart(result, batch=None) -> dict:
    c, r = batch, result
    if c is None or not c.batch or r is None or r.itl_s is None:
        return {"curve": {"data": {"x": [], "y": [], "per": [], "itl": []}}, "ideal": {"data": {"x": [], "y": []}},
                "point": {"data": {"x": [], "y": [], "text": []}}, "pool": {"location": None},
                "x_range": {"start": 0, "end": 1}, "y_range": {"end": 1}, "title": readouts.title(TITLE)}
    one = c.tokens_per_s[0] / c.batch[0]
    top = c.batch[-1]
    return {
        "curve": {"data": {"x": list(c.batch), "y": list(c.tokens_per_s), "per": list(c.per_stream_tokens_per_s),
                           "itl": [t * 1e3 for t in c.itl_s]}},
        "ideal": {"data": {"x": [0, top], "y": [0, one * top]}},
        "point": {"data": {"x": [r.batch], "y": [r.decode_tokens_per_s], "text": [f"{fmt.rate(r.decode_tokens_per_s)} tok/s"]}},
        "pool": {"location": r.max_sequences},
        "x_range": {"start": 0, "end": max(top, 1) * 1.04},
        "y_range": {"end": max(c.tokens_per_s) * 1.6},
        "title": readouts.title(f"Throughput against batch (pool full at {r.max_sequences:,})"),
    }
