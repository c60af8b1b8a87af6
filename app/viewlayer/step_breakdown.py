"""Where one step's time goes: memory traffic (weight read + KV read) against arithmetic.

Memory transfers and tensor-core work overlap, so a step takes the longer of the two rows, and
that row is drawn solid and marked as binding; the other is faded. All-reduce and launch overhead
do not overlap and add on after (their row appears only when they are non-zero).
"""

from __future__ import annotations

from . import format as fmt
from . import html, readouts
from .palette import COLORS

MEMORY, COMPUTE, SERIAL = "memory", "compute", "not overlapped"
FADED = 0.4
BAR_COLUMNS = ("row", "left", "right", "color", "alpha", "width", "term", "ms")
OVERHEAD_TOLERANCE = 1e-9  # of the step's time: below it, a launch overhead is float rounding (phase_terms)


def phase_terms(r, phase: str) -> dict[str, float] | None:
    """Seconds of each term of one step, from sim's result (None when the phase does not run)."""
    if r is None or not r.ok:
        return None
    if phase == "prefill":
        weight, kv, compute, allreduce, total = (r.prefill_weight_read_s, 0.0, r.prefill_compute_s,
                                                 r.prefill_allreduce_s or 0.0, r.ttft_s)
    else:
        if r.decode_step_s is None:
            return None
        weight, kv, compute, allreduce, total = (r.decode_weight_read_s, r.decode_kv_read_s, r.decode_compute_s,
                                                 r.decode_allreduce_s or 0.0, r.decode_step_s)
    overhead = total - max(weight + kv, compute) - allreduce
    # What the subtraction leaves of a step with no overhead is rounding (7e-16 s of a 14 ms step:
    # Qwen3-14B, 64 requests, TP 2), not a term to draw, key or name.
    overhead = overhead if overhead > OVERHEAD_TOLERANCE * total else 0.0
    return dict(weight=weight, kv=kv, compute=compute, allreduce=allreduce, overhead=overhead, total=total)


def view_step_breakdown(result, settings, phase: str = "decode", context_tokens: int | None = None) -> dict:
    r = result
    stop = readouts.blocked_in(r, settings, context_tokens)
    t = phase_terms(r, phase) if stop is None else None
    if t is None:
        return {"bars": {"data": {k: [] for k in BAR_COLUMNS}}, "labels": {"data": {"row": [], "x": [], "text": []}},
                "legend": {"html": ""},
                "y_range": {"factors": [COMPUTE, MEMORY]}, "x_range": {"end": 1.0},
                "title": readouts.title(f"{phase.capitalize()}: nothing runs" + (f" ({stop[0]})" if stop else "")),
                "summary": readouts.summary(f"summary-{phase}", readouts.step_summary(None, phase))}
    memory_s = t["weight"] + t["kv"]
    binding = COMPUTE if t["compute"] > memory_s else MEMORY
    serial_s = t["allreduce"] + t["overhead"]
    segments = [
        (MEMORY, 0.0, t["weight"], "weights", "weight read"),
        (MEMORY, t["weight"], memory_s, "kv", "KV read"),
        (COMPUTE, 0.0, t["compute"], "compute", "tensor-core compute"),
    ]
    rows = [COMPUTE, MEMORY]
    if serial_s > 0:
        segments += [(SERIAL, 0.0, t["allreduce"], "allreduce", "all-reduce"),
                     (SERIAL, t["allreduce"], serial_s, "overhead", "launch overhead")]
        rows = [SERIAL, *rows]
    data = {k: [] for k in BAR_COLUMNS}
    for row, left, right, color, term in segments:
        data["row"].append(row)
        data["left"].append(left * 1e3)
        data["right"].append(right * 1e3)
        data["color"].append(COLORS[color])
        data["alpha"].append(1.0 if row in (binding, SERIAL) else FADED)
        data["width"].append(3 if row == binding else 1)
        data["term"].append(term)
        data["ms"].append((right - left) * 1e3)
    ends = {MEMORY: memory_s, COMPUTE: t["compute"], SERIAL: serial_s}
    # The binding side is in the title (what the chart teaches); the prompt length, the batch and
    # every term are in the summary under the chart.
    bound = r.prefill_bound if phase == "prefill" else r.decode_bound
    title = f"{phase.capitalize()}: {fmt.ms(t['total'])}, {bound}-bound"
    what = (f"a {settings['prompt_tokens']:,}-token prompt" if phase == "prefill"
            else f"a batch of {readouts.plural(r.batch, 'sequence')}")
    return {
        "bars": {"data": data},
        "labels": {"data": {"row": rows, "x": [ends[row] * 1e3 for row in rows],
                            "text": [fmt.ms(ends[row]) + ("  \u25c0 binds" if row == binding else "") for row in rows]}},
        "y_range": {"factors": rows},
        # Room right of the longest bar for its label ("27.9 ms  \u25c0 binds") at every width down to 320 px.
        "x_range": {"end": max(ends.values()) * 1e3 * 2.0},
        "title": readouts.title(title),
        # A key for every colour drawn: weight read and KV read share the memory row.
        "legend": {"html": html.key_legend(list(dict.fromkeys((COLORS[color], term) for _, left, right, color, term in segments
                                                               if right > left)))},
        "summary": readouts.summary(f"summary-{phase}", readouts.step_summary(t, phase, what)),
    }
