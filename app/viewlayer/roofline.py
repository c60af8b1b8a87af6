"""The roofline: attainable FLOP/s against arithmetic intensity (FLOPs per byte moved), with
this configuration's prefill and decode steps plotted where they land.

The solid roof uses the efficiency profile's achieved fractions (what the step times in this
panel are computed with); the faint dashed roof is the datasheet. Left of the ridge a step is
limited by bandwidth, right of it by the tensor cores. Points sit at the step's FLOPs divided by
its time, so a step that also waits on an all-reduce or launch overhead sits below the roof.
"""

from __future__ import annotations

from . import format as fmt
from . import readouts
from .palette import COLORS

TITLE = "Roofline: where prefill and decode land"
POINT_COLUMNS = ("x", "y", "color", "marker", "name", "text", "flops", "dx", "align")


def view_roofline(result) -> dict:
    stop = readouts.refusal(result)
    out = _view_roofline(result if stop is None else None)
    if stop is not None:
        text = f"Nothing runs ({stop[0]}), so no step is plotted."
    else:
        bw = result.hbm_bandwidth_achieved_bytes_per_s if result is not None and result.ok else 0
        text = readouts.roofline_summary(result, bw, readouts.scenario(result).get("prompt_tokens", 0))
    out["summary"] = readouts.summary("summary-roofline", text)
    return out


def _view_roofline(result) -> dict:
    r = result
    if r is None or not r.ok:
        return {"roof": {"data": {"x": [], "y": []}}, "datasheet": {"data": {"x": [], "y": []}},
                "points": {"data": {k: [] for k in POINT_COLUMNS}}, "ridge": {"location": None},
                "x_range": {"start": 0.3, "end": 3e4}, "y_range": {"start": 1e9, "end": 1e16}, "title": readouts.title(TITLE)}
    bw_achieved = r.hbm_bandwidth_achieved_bytes_per_s
    peak_achieved = r.achieved_peak_flops
    pts = []
    if r.ttft_s:
        pts.append(("prefill", r.prefill_arithmetic_intensity, r.prefill_flops_per_s, "triangle",
                    f"prefill ({fmt.tokens(r.scenario['prompt_tokens'])} tokens)"))
    if r.decode_step_s:
        pts.append(("decode", r.decode_arithmetic_intensity, r.decode_flops_per_s, "circle",
                    f"decode (batch {r.batch:,})"))
    xs = [p[1] for p in pts if p[1] > 0] or [1.0]
    x0 = min(0.3, min(xs) / 4)
    x1 = max(3e4, max(xs) * 4)
    datasheet_ridge = r.datasheet_ridge_intensity
    return {
        "roof": {"data": {"x": [x0, r.ridge_intensity, x1], "y": [x0 * bw_achieved, peak_achieved, peak_achieved]}},
        "datasheet": {"data": {"x": [x0, datasheet_ridge, x1],
                               "y": [x0 * r.hbm_bandwidth_bytes_per_s, r.peak_flops, r.peak_flops]}},
        "points": {"data": {
            "x": [p[1] for p in pts], "y": [p[2] for p in pts], "color": [COLORS[p[0]] for p in pts],
            "marker": [p[3] for p in pts], "name": [p[4] for p in pts], "text": [p[0] for p in pts],
            "flops": [fmt.flops(p[2]) for p in pts],
            # prefill sits right of the ridge, decode left of it: label each on its open side
            "dx": [-14 if p[1] > r.ridge_intensity else 14 for p in pts],
            "align": ["right" if p[1] > r.ridge_intensity else "left" for p in pts]}},
        "ridge": {"location": r.ridge_intensity},
        "x_range": {"start": x0, "end": x1},
        "y_range": {"start": x0 * bw_achieved / 1.5, "end": r.peak_flops * 2.5},
        "title": readouts.title(f"Roofline: the ridge is at {r.ridge_intensity:,.0f} FLOP per byte"),
    }
