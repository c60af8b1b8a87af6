"""Two policies on the same seeded workload, side by side: same requests, same arrival times,
different scheduling. The ratio column says which way each figure moved."""

from __future__ import annotations

from . import html
from .format import seconds
from .lab_settings import policy_label

# Smaller type on a phone: at 15 px the first column broke "Preemptions" inside the word at 390 px.
# Below 400 px a cell may still break inside a word; the long words carry soft hyphens (SHY) where
# they may break, so "(comparison)" becomes "(compar-" / "ison)" there, not "(compari" / "son)".
TABLE_CSS = """
.kv-compare { border-collapse: collapse; width: 100%; font-size: 15px; font-variant-numeric: tabular-nums; }
.kv-compare th, .kv-compare td { padding: 5px 10px; border-bottom: 1px solid var(--kv-border); text-align: right; }
.kv-compare th:first-child, .kv-compare td:first-child { text-align: left; }
.kv-compare .better { color: var(--kv-good, #006B4F); font-weight: 600; }
.kv-compare .worse { color: var(--kv-bad, #A83A00); font-weight: 600; }
@media (max-width: 480px) { .kv-compare { font-size: 13px; } }
@media (max-width: 400px) { .kv-compare { font-size: 12px; } .kv-compare th, .kv-compare td { padding: 4px; overflow-wrap: anywhere; } }
"""

SHY = "\u00ad"

# (label, getter, formatter, lower is better)
ROWS = [
    ("TTFT p50", lambda r: r.ttft_s.p50, seconds, True),
    ("TTFT p99", lambda r: r.ttft_s.p99, seconds, True),
    ("ITL p50", lambda r: r.itl_s.p50, seconds, True),
    ("ITL p99", lambda r: r.itl_s.p99, seconds, True),
    ("ITL max", lambda r: r.itl_s.max, seconds, True),
    ("E2E p99", lambda r: r.e2e_s.p99, seconds, True),
    (f"Through{SHY}put (tok/s)", lambda r: r.output_tokens_per_s, lambda x: f"{x:,.0f}", False),
    (f"Good{SHY}put (req/s)", lambda r: r.goodput_per_s, lambda x: f"{x:.2f}", False),
    (f"Pre{SHY}emp{SHY}tions", lambda r: r.preemptions, lambda x: f"{x:,}", True),
    ("Mean KV usage", lambda r: r.mean_kv_usage, lambda x: f"{x:.0%}", None),
]


def view_lab_comparison(run, values=None) -> dict:
    a, b = run.result, run.compare
    if a is None or b is None:
        return {"pane": {"html": '<p class="kv-caption" data-kv="lab-compare">Choose a policy under "Compare with" to run it on '
                                 'the same requests.</p>'}}
    head = (f"<tr><th>Figure</th><th>{html.esc(a.policy)} (this run)</th><th>{html.esc(b.policy)} (compar{SHY}ison)</th>"
            f"<th>{html.esc(b.policy)} / {html.esc(a.policy)}</th></tr>")
    rows = []
    for label, get, fmt, lower in ROWS:
        x, y = get(a), get(b)
        ratio = y / x if x else None
        cls = verdict = ""
        if ratio is not None and lower is not None and abs(ratio - 1) > 0.05:
            # The verdict is about the comparison policy, in words as well as colour.
            cls = "better" if (ratio < 1) == lower else "worse"
            verdict = f" ({b.policy} {cls})"
        r_text = ("\u2014" if ratio is None else f"{ratio:.2f}x") + verdict
        rows.append(f'<tr><td>{html.esc(label)}</td><td>{html.esc(fmt(x))}</td><td>{html.esc(fmt(y))}</td>'
                    f'<td class="{cls}">{html.esc(r_text)}</td></tr>')
    caption = (f"{html.esc(a.policy)}: {html.esc(policy_label(a.policy))}. {html.esc(b.policy)}: {html.esc(policy_label(b.policy))}. "
               f"The last column says whether {html.esc(b.policy)}, the comparison, does better or worse than this run "
               "(by more than 5%; lower latency and preemptions, higher throughput and goodput are better).")
    return {"pane": {"html": f'<table class="kv-compare" data-kv="lab-compare">{head}{"".join(rows)}</table>'
                             f'<p class="kv-caption">{caption}</p>'}}
