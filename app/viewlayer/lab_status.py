"""The serving lab's run at a glance: progress (with the Cancel button's state), input problems and
the headline numbers as distributions (p50 and p99 side by side, never a lone mean).

`run` is the lab's session (`lab_session.LabSession`: `result`, `compare`, `issues`, `trace_note`,
`status`, `running`, `progress`, `done_requests`, `total_requests`, `sweep`, `sweep_running`,
`sweep_progress`), in both runtimes.
"""

from __future__ import annotations

from . import html
from .format import seconds
from .lab_settings import policy_label
from .palette import COLORS

PROGRESS_MAX = 1000  # the progress bar's scale


def run_status(main, cancelled: bool) -> str:
    """The status line once the chosen policy's run has ended."""
    if main.ok:
        status = f"{main.completed:,} requests simulated ({main.events:,} events)"
        if main.cancelled:
            status = f"cancelled after {main.completed:,} of {main.num_requests:,} requests: partial results"
        return status
    return "cancelled" if cancelled else "no run: see the message above"


def view_lab_status(run, values=None) -> dict:
    """The progress bar, its caption and whether Cancel can be pressed."""
    busy = run.running or run.sweep_running
    fraction = run.progress if run.running else (run.sweep_progress if run.sweep_running else 1.0)
    label = run.status if run.running or not run.sweep_running else f"sweeping request rates\u2026 {run.sweep_progress:.0%}"
    if run.running:
        label = f"{run.status} {run.progress:.0%}"
        if run.total_requests:
            label += f" ({run.done_requests:,} of {run.total_requests:,} requests in this run)"
    return {"w.lab-progress": {"value": int(round(fraction * PROGRESS_MAX)), "active": bool(busy)},
            "text": {"html": f'<p class="kv-caption" data-kv="lab-status">{html.esc(label)}</p>'},
            "w.lab-cancel": {"disabled": not busy}}


def view_lab_notices(run, values=None) -> dict:
    """Why the configuration cannot run, what the trace holds, the memory budget's warnings, and
    (in the browser, where a typed value can reach it) a value the setting refused."""
    parts = []
    if getattr(run, "input_notice", ""):
        parts.append(html.notice("error", "Not applied:", [run.input_notice], "lab-input"))
    if run.issues:
        parts.append(html.notice("error", "This configuration cannot run:",
                                 [f"{i['field']}: {i['message']}" for i in run.issues], "lab-errors"))
    if run.trace_note:
        kind = "error" if run.trace_note.startswith("Trace refused") else "info"
        parts.append(html.notice(kind, "Trace", [run.trace_note], "lab-trace"))
    r = run.result
    if r is not None and r.warnings:
        parts.append(html.notice("warn", "The memory budget says:", r.warnings, "lab-warnings"))
    return {"pane": {"html": "".join(parts), "visible": bool(parts)}}


def _binding_limit(b: dict) -> str:
    """sim's verdict on which limit binds the run (sim/engine/diagnosis.py), with the signal that decided it."""
    if not b.get("verdict"):
        return ""
    return f'<p class="kv-caption" data-kv="lab-limit"><strong>What binds:</strong> {html.esc(b["verdict"])}.</p>'



def view_lab_summary(run, values: dict) -> dict:
    r = run.result
    if r is None:
        return {"pane": {"html": ""}}
    pre_caption = "no sequence lost its blocks" if not r.preemptions else f"{r.swaps:,} by swap, the rest recomputed"
    text = html.tiles(
        html.tile("lab-ttft-p50", "TTFT p50", seconds(r.ttft_s.p50), f"p99 {seconds(r.ttft_s.p99)}", COLORS["prefill"], hero=True),
        html.tile("lab-ttft-p99", "TTFT p99", seconds(r.ttft_s.p99), f"max {seconds(r.ttft_s.max)}", COLORS["prefill"]),
        html.tile("lab-itl-p50", "ITL p50", seconds(r.itl_s.p50), f"p99 {seconds(r.itl_s.p99)}", COLORS["decode"], hero=True),
        html.tile("lab-itl-p99", "ITL p99", seconds(r.itl_s.p99), f"max {seconds(r.itl_s.max)}", COLORS["decode"]),
        html.tile("lab-goodput", "Goodput", f"{r.goodput_per_s:.2f} req/s",
                  f"{r.goodput_fraction:.0%} meet TTFT \u2264 {r.ttft_target_s:g} s, ITL \u2264 {r.itl_target_s * 1e3:g} ms",
                  COLORS["compute"]),
        html.tile("lab-throughput", "Throughput", f"{r.output_tokens_per_s:,.0f} tok/s", f"{r.throughput_per_s:.2f} requests/s",
                  COLORS["weights"]),
        html.tile("lab-kv", "KV cache in use", f"{r.mean_kv_usage:.0%}", f"mean; peak {r.peak_kv_usage:.0%} "
                  f"of {r.kv_pool_tokens:,} tokens", COLORS["kv"]),
        html.tile("lab-preemptions", "Preemptions", f"{r.preemptions:,}", pre_caption, COLORS["kv"]),
        # Host time the GPU waits on (seed 000's CPU costs): zero unless the run's CPU costs are switched on.
        html.tile("lab-cpu", "Scheduler CPU time", seconds(r.scheduler_s),
                  f"block-table writes in the steps; tokenizing {seconds(r.tokenizer_s)}; the run {seconds(r.duration_s)}",
                  COLORS["compute"]),
    ) + _binding_limit(r.binding_limit) + (
        f'<p class="kv-caption" data-kv="lab-policy">{html.esc(policy_label(r.policy))}; {r.completed:,} requests on '
        f'{r.instances} instance(s), {r.gpus} GPU(s); mean running {r.mean_running:.1f}, waiting {r.mean_waiting:.1f}; '
        f'prefix hit rate {r.prefix_hit_rate:.0%}. The KV pool holds {r.kv_pool_tokens:,} tokens by '
        f'{html.esc(values["engine"])}\'s accounting (whole blocks, after its memory profiling); the admission '
        f'panel counts by the engine chosen there (its default, "textbook", has no blocks or profiling), so pick the '
        f'same engine there to compare pools.</p>'
    )
    return {"pane": {"html": text}}
