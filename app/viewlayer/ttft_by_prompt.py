"""TTFT grouped by prompt length, from a time-domain run's per-request columns (standard library
only). The serving lab and lesson C1 show it.

Grouping shows what a single TTFT distribution hides: whether the slow first tokens belong to the
longest prompts (their own prefill is a floor no scheduler removes) or are spread over every
length (queueing behind someone else's work)."""

from __future__ import annotations

import math

from .html import esc

EDGES_TOKENS = (1024, 4096, 8192, 16384, 32768)


def _percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (the engine's own convention)."""
    rank = min(len(sorted_values), max(1, math.ceil(q * len(sorted_values))))
    return sorted_values[rank - 1]


def ttft_by_prompt_length(requests: dict, edges: tuple[int, ...] = EDGES_TOKENS) -> list[dict]:
    """Rows of {label, low_tokens, high_tokens, count, p50_s, p99_s, max_s} per prompt-length group
    with at least one request (requests: the EngineResult.requests columns)."""
    prompts, ttfts = requests.get("prompt_tokens", []), requests.get("ttft_s", [])
    bounds = [0, *edges, None]
    rows = []
    for low, high in zip(bounds, bounds[1:], strict=False):
        values = sorted(t for p, t in zip(prompts, ttfts, strict=False)
                        if t == t and p > low and (high is None or p <= high))
        if not values:
            continue
        label = f"{low + 1:,}\u2013{high:,}" if high is not None else f"over {low:,}"
        rows.append({"label": label, "low_tokens": low, "high_tokens": high, "count": len(values),
                     "p50_s": _percentile(values, 0.50), "p99_s": _percentile(values, 0.99), "max_s": values[-1]})
    return rows


def _seconds(x: float) -> str:
    return f"{x * 1e3:,.0f} ms" if x < 1 else f"{x:.2f} s"


def ttft_table_html(rows: list[dict]) -> str:
    body = "".join(f"<tr><th scope='row'>{esc(r['label'])}</th><td>{r['count']:,}</td><td>{esc(_seconds(r['p50_s']))}</td>"
                   f"<td>{esc(_seconds(r['p99_s']))}</td><td>{esc(_seconds(r['max_s']))}</td></tr>" for r in rows)
    return ("<table class='kv-ttft-table' data-kv='ttft-by-prompt'><caption>Time to first token by prompt length "
            "(tokens)</caption><thead><tr><th scope='col'>prompt tokens</th><th scope='col'>requests</th>"
            "<th scope='col'>p50</th><th scope='col'>p99</th><th scope='col'>max</th></tr></thead>"
            f"<tbody>{body}</tbody></table>")


TABLE_CSS = """
.kv-ttft-table { border-collapse: collapse; font-size: 15px; font-variant-numeric: tabular-nums; }
.kv-ttft-table caption { text-align: left; font-weight: 700; padding: 4px 0; }
.kv-ttft-table th, .kv-ttft-table td { padding: 3px 12px; border-bottom: 1px solid var(--kv-border); text-align: right; }
.kv-ttft-table th[scope='row'] { text-align: left; }
@media (max-width: 400px) { .kv-ttft-table th, .kv-ttft-table td { padding: 3px 5px; } }
"""


def view_ttft_by_prompt(result, settings=None) -> dict:
    """The table for an EngineResult (empty while there is none)."""
    ok = result is not None and result.ok
    return {"pane": {"html": ttft_table_html(ttft_by_prompt_length(result.requests)) if ok else ""}}
