"""Panel 2's headline: the two latencies, the two throughputs, and how busy the tensor cores are."""

from __future__ import annotations

from kvlab.sim.fidelity import served_line

from . import format as fmt
from . import html, readouts
from .admission_numbers import cost_tiles
from .palette import COLORS


def _bound(kind: str | None) -> str:
    return f"{kind}-bound" if kind else ""


def _itl_caption(r) -> str:
    if r.spec_speedup is None:
        return f"decode step of {r.batch:,}, {_bound(r.decode_bound)}"
    # Speculative decoding: a step yields several tokens; say how many and what that buys.
    return (f"{r.spec_tokens_per_step:.2f} tokens a step with {r.spec_draft_name} drafting, "
            f"{r.spec_speedup:.2f}\u00d7 the speed without; {_bound(r.decode_bound)}")


def view_phase_numbers(result) -> dict:
    r, s = result, readouts.scenario(result)
    ok = r is not None and r.ok
    stop = readouts.refusal(r)
    if stop is not None:  # nothing runs: no latency or throughput exists; the tiles say why instead
        dash = [html.tile(key, label, fmt.DASH, stop[0] if i < 2 else "", COLORS[color], hero=i < 2)
                for i, (key, label, color) in enumerate((
                    ("ttft", "Time to first token", "prefill"), ("itl", "Inter-token latency", "decode"),
                    ("tokens_per_s", "Decode throughput", "decode"), ("per_stream", "Per stream", "decode"),
                    ("tensor_duty", "Tensor-core duty, decode", "compute"),
                    ("weight_share", "Weight share of decode bytes", "weights")))]
        return {"pane": {"html": html.tiles(*dash, *cost_tiles(r), columns=3)}}
    running = ok and r.itl_s is not None
    prefill_duty = r.prefill_tensor_duty if ok else None
    return {"pane": {"html": html.tiles(
        html.tile("ttft", "Time to first token", fmt.ms(r.ttft_s) if ok else fmt.DASH,
                  f"one {fmt.tokens(s['prompt_tokens'])}-token prefill on an idle GPU, {_bound(r.prefill_bound)}" if ok else "",
                  COLORS["prefill"], hero=True),
        html.tile("itl", "Inter-token latency", fmt.ms(r.itl_s) if running else fmt.DASH,
                  _itl_caption(r) if running else "nothing fits", COLORS["decode"], hero=True),
        # Decode steps only: the prefills' GPU time lowers what the server delivers (sim's served rate).
        html.tile("tokens_per_s", "Decode throughput", fmt.rate(r.decode_tokens_per_s) if running else fmt.DASH,
                  f"all streams, decode steps only; {fmt.rate(r.served_tokens_per_s)} tok/s with the prefills" if running else "",
                  COLORS["decode"], unit=" tok/s" if running else ""),
        html.tile("per_stream", "Per stream", fmt.rate(r.per_stream_tokens_per_s) if running else fmt.DASH,
                  "what one user sees" if running else "", COLORS["decode"], unit=" tok/s" if running else ""),
        html.tile("tensor_duty", "Tensor-core duty, decode", fmt.percent(r.tensor_duty) if running else fmt.DASH,
                  f"prefill: {fmt.percent(prefill_duty)}" if ok else "", COLORS["compute"]),
        html.tile("weight_share", "Weight share of decode bytes", fmt.percent(r.weight_share) if running else fmt.DASH,
                  "what batching still amortises" if running else "", COLORS["weights"]),
        *cost_tiles(r),
        columns=3,
    ) + _fidelity(r if ok else None)}}


def _fidelity(r) -> str:
    """How far such figures have been from published measurements (sim.fidelity), under the tiles."""
    line = served_line(r.model_family) if r is not None else ""
    return f'<p class="kv-caption" data-kv="fidelity">{html.esc(line)}</p>' if line else ""
