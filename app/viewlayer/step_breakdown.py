"""Where one step's time goes, drawn as sim's step model computes it.

Two step models (sim/roofline.py), two pictures:

- ``whole_step`` (the textbook profile): memory traffic and tensor-core work overlap, so a step
  takes the longer of the two rows; that row (sim's bound) is drawn solid and marked as binding,
  the other faded. All-reduce and launch overhead do not overlap and add on after.
- ``per_kernel`` (measured profiles): the step is its kernels run one after another, each bound
  by its own resource. One bar per kernel of sim's kernel list, laid end to end so the last ends
  at the step's time; the kernels on the step's binding side (sim's bound: the side whose kernels
  take more of the step) are drawn solid, the others faded.

Every drawn term is one of sim's (Result's step fields or its kernel list): nothing is derived
by subtraction, so the terms add up to sim's step time and the marker is sim's bound.
"""

from __future__ import annotations

from . import format as fmt
from . import html, readouts
from .palette import COLORS

MEMORY, COMPUTE, SERIAL = "memory", "compute", "not overlapped"
FADED = 0.4
BAR_COLUMNS = ("row", "left", "right", "color", "alpha", "width", "term", "ms")
BINDS = "  \u25c0 binds"
# Figure heights: the whole-step chart's three rows, and per kernel row of the per-kernel chart.
WHOLE_STEP_HEIGHT_PX = 160
KERNEL_ROW_PX, KERNEL_CHART_BASE_PX = 24, 60
# sim's kernel kinds (roofline.KERNEL_KINDS) as the chart's rows name them.
KERNEL_ROWS = {"embedding": "embedding", "qkv": "QKV", "attention": "attention", "o": "O proj", "mlp": "MLP",
               "lm_head": "lm_head", "allreduce": "all-reduce", "overhead": "launches"}


def phase_terms(r, phase: str) -> dict | None:
    """sim's terms of one step, in seconds (None when the phase does not run): weight read, KV
    read, compute, all-reduce, launch overhead, the step's GPU time and its bound; `model` names
    the step model and, per kernel, `kernels` is sim's kernel list."""
    if r is None or not r.ok or r.refusal is not None:
        return None
    if phase == "prefill":
        if r.ttft_s is None:
            return None
        t = dict(weight=r.prefill_weight_read_s, kv=r.prefill_kv_read_s or 0.0, compute=r.prefill_compute_s,
                 allreduce=r.prefill_allreduce_s or 0.0, overhead=r.prefill_overhead_s or 0.0, total=r.ttft_s,
                 bound=r.prefill_bound)
    else:
        if r.decode_step_s is None:
            return None
        t = dict(weight=r.decode_weight_read_s, kv=r.decode_kv_read_s, compute=r.decode_compute_s,
                 allreduce=r.decode_allreduce_s or 0.0, overhead=r.decode_overhead_s or 0.0, total=r.decode_step_s,
                 bound=r.decode_bound)
    t["model"] = r.step_model
    if r.step_model == "per_kernel":
        t["kernels"] = [k for k in (r.prefill_kernels if phase == "prefill" else r.decode_kernels) if k["time_s"] > 0]
    return t


def _empty(phase: str, stop: tuple[str, str] | None) -> dict:
    return {"bars": {"data": {k: [] for k in BAR_COLUMNS}}, "labels": {"data": {"row": [], "x": [], "text": []}},
            "legend": {"html": ""}, "figure": {"height": WHOLE_STEP_HEIGHT_PX},
            "y_range": {"factors": [COMPUTE, MEMORY]}, "x_range": {"end": 1.0},
            "title": readouts.title(f"{phase.capitalize()}: nothing runs" + (f" ({stop[0]})" if stop else "")),
            "summary": readouts.summary(f"summary-{phase}", readouts.step_summary(None, phase))}


def view_step_breakdown(result, phase: str = "decode") -> dict:
    r = result
    t = phase_terms(r, phase)
    if t is None:
        return _empty(phase, readouts.refusal(r))
    what = (f"a {r.scenario['prompt_tokens']:,}-token prompt" if phase == "prefill"
            else f"a batch of {readouts.plural(r.batch, 'sequence')}")
    if t["model"] == "per_kernel":
        return _per_kernel(t, phase, what)
    return _whole_step(t, phase, what)


def _bar(data: dict, row: str, left: float, right: float, color: str, solid: bool, thick: bool, term: str) -> None:
    data["row"].append(row)
    data["left"].append(left * 1e3)
    data["right"].append(right * 1e3)
    data["color"].append(COLORS[color])
    data["alpha"].append(1.0 if solid else FADED)
    data["width"].append(3 if thick else 1)
    data["term"].append(term)
    data["ms"].append((right - left) * 1e3)


def _whole_step(t: dict, phase: str, what: str) -> dict:
    memory_s = t["weight"] + t["kv"]
    binding = t["bound"]  # sim's: the longer of the two overlapped sides
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
        _bar(data, row, left, right, color, row in (binding, SERIAL), row == binding, term)
    ends = {MEMORY: memory_s, COMPUTE: t["compute"], SERIAL: serial_s}
    # The binding side is in the title (what the chart teaches); the prompt length, the batch and
    # every term are in the summary under the chart.
    return {
        "bars": {"data": data},
        "labels": {"data": {"row": rows, "x": [ends[row] * 1e3 for row in rows],
                            "text": [fmt.ms(ends[row]) + (BINDS if row == binding else "") for row in rows]}},
        "figure": {"height": WHOLE_STEP_HEIGHT_PX},
        "y_range": {"factors": rows},
        # Room right of the longest bar for its label ("27.9 ms  \u25c0 binds") at every width down to 320 px.
        "x_range": {"end": max(ends.values()) * 1e3 * 2.0},
        "title": readouts.title(f"{phase.capitalize()}: {fmt.ms(t['total'])}, {binding}-bound"),
        # A key for every colour drawn: weight read and KV read share the memory row.
        "legend": {"html": html.key_legend(list(dict.fromkeys((COLORS[color], term) for _, left, right, color, term in segments
                                                               if right > left)))},
        "summary": readouts.summary(f"summary-{phase}", readouts.step_summary(t, phase, what)),
    }


def _kernel_color(k: dict) -> tuple[str, str]:
    """A kernel's colour and legend term: what binds it (latency kernels: their own colour)."""
    if k["bound"] == "latency":
        return k["kind"], KERNEL_ROWS[k["kind"]] if k["kind"] != "overhead" else "launch overhead"
    if k["bound"] == "compute":
        return "compute", "compute-bound kernel"
    return ("kv", "KV-read-bound kernel") if k["kind"] == "attention" else ("weights", "weight-read-bound kernel")


def _per_kernel(t: dict, phase: str, what: str) -> dict:
    binding = t["bound"]
    data = {k: [] for k in BAR_COLUMNS}
    rows, ends, texts, keys = [], [], [], []
    start = 0.0
    for k in t["kernels"]:
        row = KERNEL_ROWS.get(k["kind"], k["kind"])
        color, term = _kernel_color(k)
        on_binding_side = k["bound"] == binding
        _bar(data, row, start, start + k["time_s"], color, on_binding_side or k["bound"] == "latency", on_binding_side,
             f"{row}: {term}")
        start += k["time_s"]
        rows.append(row)
        ends.append(start * 1e3)
        texts.append(fmt.ms(k["time_s"]) + (BINDS if on_binding_side else ""))
        keys.append((COLORS[color], term))
    side_s = sum(k["time_s"] for k in t["kernels"] if k["bound"] == binding)
    title = f"{phase.capitalize()}: {fmt.ms(t['total'])}, {binding}-bound ({fmt.ms(side_s)} in {binding}-bound kernels)"
    return {
        "bars": {"data": data},
        "labels": {"data": {"row": rows, "x": ends, "text": texts}},
        "figure": {"height": KERNEL_CHART_BASE_PX + KERNEL_ROW_PX * len(rows)},
        # Bokeh lists factors bottom up: the first kernel at the top.
        "y_range": {"factors": rows[::-1]},
        "x_range": {"end": t["total"] * 1e3 * 1.5},
        "title": readouts.title(title),
        "legend": {"html": html.key_legend(list(dict.fromkeys(keys)))},
        "summary": readouts.summary(f"summary-{phase}", readouts.kernel_summary(t, phase, what)),
    }
