"""A benchmark client's result file replayed in the lab: what the run measured beside what this run
predicts (the figures and errors of `kvlab compare`, sim.engine.compare), and, for a file of several
runs (vLLM's --append-result, a JSON-lines file of SGLang's), the choice of which run to replay."""

from __future__ import annotations

from kvlab.sim.engine.bench_summary import bench_metrics
from kvlab.sim.engine.compare import METRICS, error
from kvlab.sim.fidelity import replay_line

from . import html

HINT = ('<p class="kv-caption" data-kv="lab-bench">Upload a <code>vllm bench serve --save-result</code> file (or SGLang\'s '
        "<code>bench_serving</code> JSON lines) as the trace file to replay that run here: its requests, rate and "
        "concurrency cap, with what it measured beside what the lab predicts.</p>")


CHOOSER = "w.lab-bench-run"


def sending(spec) -> str:
    """How a run's client sent its requests: its rate and concurrency cap."""
    rate = "all at once" if spec.request_rate is None else f"{spec.request_rate:g} per second"
    return rate + ("" if spec.max_concurrency is None else f", at most {spec.max_concurrency} in flight")


def run_labels(runs) -> list[str]:
    """One label per run of a result file, the chooser's options: its place, size, rate and cap."""
    return [f"Run {i}: {r.spec.num_prompts:,} requests, {sending(r.spec)}" for i, r in enumerate(runs, 1)]


def chooser(run, values) -> dict:
    """The run chooser: shown while a file of two runs or more is replayed."""
    runs = getattr(run, "bench_runs", [])
    labels = run_labels(runs)
    bench = getattr(run, "bench", None)
    value = next((label for label, r in zip(labels, runs, strict=True) if r is bench), "")
    return {"options": labels, "value": value, "visible": len(runs) > 1 and values.get("arrival") == "trace"}


def view_lab_bench(run, values) -> dict:
    choice = {CHOOSER: chooser(run, values)}
    bench = getattr(run, "bench", None)
    if bench is None or values.get("arrival") != "trace":
        return {"pane": {"html": HINT}, **choice}
    r = run.result
    if r is None or not r.completed:
        return {"pane": {"html": '<p class="kv-caption" data-kv="lab-bench">Replaying the benchmark run\u2026</p>'}, **choice}
    predicted = bench_metrics(r).flat()
    rows = []
    for key, label in METRICS:
        if key in bench.measured:
            measured = bench.measured[key]
            e = error(predicted[key], measured)
            rows.append(f"<tr><td>{html.esc(label)}</td><td>{measured:,.2f}</td><td>{predicted[key]:,.2f}</td>"
                        f"<td>{e:+.0%}</td></tr>")
    head = "<tr><th>Figure</th><th>Measured</th><th>Predicted (this run)</th><th>Error</th></tr>"
    line = replay_line(r.model_family)
    honest = line[0].upper() + line[1:] + "."
    caption = (f"Lengths: {html.esc(bench.lengths)}. The file does not say which GPU, how many, or which engine "
               f"version ran it: set them in the settings. {html.esc(honest)}")
    return {"pane": {"html": f'<table class="kv-compare" data-kv="lab-bench">{head}{"".join(rows)}</table>'
                             f'<p class="kv-caption">{caption}</p>'}, **choice}
