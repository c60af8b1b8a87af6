"""p50 and p99 latency against request rate: where the curve leaves its floor is the cliff. Each
point is a full run of the current settings at that Poisson rate; the shaded band is p99 TTFT's
range over three random seeds of the workload, and the caption gives the knee's range."""

from __future__ import annotations

from . import html
from .format import seconds

FIRST_CAPTION = ('<p class="kv-caption" data-kv="lab-sweep">Press "Run the sweep" to run the current settings at each rate '
                 '(Poisson arrivals).</p>')


def sweep_rates(values: dict) -> list[float]:
    """The swept rates: `sweep_points` from low to high, evenly spaced on a log axis."""
    lo, hi = sorted((values["sweep_low_per_s"], values["sweep_high_per_s"]))
    n = values["sweep_points"]
    if hi <= lo:
        return [lo]
    ratio = (hi / lo) ** (1 / (n - 1))
    return [round(lo * ratio**i, 4) for i in range(n)]


def _note(sw) -> str:
    pts = sw.points
    k = sw.knee_rate_per_s
    if k is not None:
        at = next(p for p in pts if p.rate_per_s == k)
        times = at.ttft_p99_s / max(pts[0].ttft_p99_s, 1e-9)
        note = (f"The p99 TTFT leaves its floor at {k:g} requests/s ({seconds(at.ttft_p99_s)}, {times:.0f}x the lightest "
                f"load), with the KV cache {at.mean_kv_usage:.0%} full.")
    else:
        low, high = pts[0].rate_per_s if pts else 0, pts[-1].rate_per_s if pts else 0
        peak_kv = max((p.mean_kv_usage for p in pts), default=0.0)
        note = (f"The cliff is beyond this sweep: from {low:g} to {high:g} requests/s the p99 TTFT stays within 3x its "
                f"light-load value (the KV cache at most {peak_kv:.0%} full on average). Set \"Sweep to\" higher, "
                f"e.g. {2 * high:g}, and run it again to find it.")
    found = sorted(x for x in sw.seed_knees if x is not None)
    if len(sw.seed_knees) > 1:
        spread = (f"{found[0]:g} req/s in every seed" if found and found[0] == found[-1] and len(found) == len(sw.seed_knees)
                  else f"{found[0]:g} to {found[-1]:g} req/s" if found else "none in range")
        note += (f" Over {len(sw.seed_knees)} random seeds of the workload (shaded: the p99 range) the knee is at "
                 f"{spread}" + ("" if len(found) == len(sw.seed_knees) or not found else
                                f" ({len(sw.seed_knees) - len(found)} without a knee in range)") + ".")
    if sw.cancelled:
        note = "Sweep cancelled; the points shown finished. " + note
    if sw.errors:
        note = f"{sw.errors[0]['field']}: {sw.errors[0]['message']}"
    return note


def view_lab_sweep(run, values: dict) -> dict:
    out: dict = {"w.lab-sweep": {"disabled": bool(run.sweep_running)}}
    for name in ("sweep_low_per_s", "sweep_high_per_s", "sweep_points"):
        out[f"w.lab-{name.replace('_', '-')}"] = {"value": values[name]}
    sw = run.sweep
    if sw is None:
        out.update({"caption": {"html": FIRST_CAPTION}, "w.lab-sweep-chart": {"visible": False}})
        return out
    pts = sw.points
    out["w.lab-sweep-chart"] = {"visible": bool(pts)}
    out["src"] = {"data": {"rate": [p.rate_per_s for p in pts], "ttft50": [max(p.ttft_p50_s, 1e-4) for p in pts],
                           "ttft99": [max(p.ttft_p99_s, 1e-4) for p in pts], "e2e99": [max(p.e2e_p99_s, 1e-4) for p in pts],
                           "kv": [p.mean_kv_usage for p in pts], "tput": [p.throughput_per_s for p in pts]}}
    out["band"] = {"data": {"rate": [b.rate_per_s for b in sw.band], "low": [max(b.ttft_p99_low_s, 1e-4) for b in sw.band],
                            "high": [max(b.ttft_p99_high_s, 1e-4) for b in sw.band]}}
    k = sw.knee_rate_per_s
    out["knee"] = {"visible": k is not None}
    out["knee_label"] = {"visible": k is not None}
    if k is not None:
        out["knee"]["location"] = k
        out["knee_label"].update(x=k, text=f"knee at {k:g} req/s")
    out["caption"] = {"html": f'<p class="kv-caption" data-kv="lab-sweep">{html.esc(_note(sw))}</p>'}
    return out
