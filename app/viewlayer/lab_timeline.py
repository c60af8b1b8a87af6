"""The run over time: KV cache usage (with preemptions marked) and running against waiting
requests, the picture of seed 001's saturation: the cache pinned near full while the running
batch stays far below max_num_seqs and the queue grows."""

from __future__ import annotations


def series(r) -> dict:
    if r is None:
        return {"t": [], "kv": [], "running": [], "waiting": []}
    s = r.series
    return {"t": list(s["t_s"]), "kv": list(s["kv_usage"]), "running": list(s["running"]), "waiting": list(s["waiting"])}


def view_lab_timeline(run, values: dict) -> dict:
    r = run.result
    out = {"main": {"data": series(r)}, "other": {"data": series(run.compare)}}
    if r is None:
        out["preempt"] = {"data": {"t": [], "kv": [], "n": []}}
        out["caption"] = {"html": ""}
        return out
    s = r.series
    marks = [(t, kv, p - q) for t, kv, p, q in zip(s["t_s"][1:], s["kv_usage"][1:], s["preemptions"][1:], s["preemptions"],
                                                  strict=False) if p > q]
    out["preempt"] = {"data": {"t": [m[0] for m in marks], "kv": [m[1] for m in marks], "n": [m[2] for m in marks]}}
    limit = values["max_num_seqs"]
    out["limit"] = {"location": limit if limit is not None else 0}
    out["caption"] = {"html": f'<p class="kv-caption" data-kv="lab-timeline">Mean KV usage {r.mean_kv_usage:.0%}; mean running '
                              f'{r.mean_running:.1f} of at most {limit if limit is not None else "the engine default"} '
                              f'(dotted line), mean waiting {r.mean_waiting:.1f}; {r.preemptions:,} preemptions.</p>'}
    return out
