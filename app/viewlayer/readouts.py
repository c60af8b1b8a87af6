"""What the views say in words: the impossible states that replace a number, and the short text
summary under each chart (the numbers the chart draws, for readers who cannot see it).

Pure functions of sim's result (which carries its scenario), standard library only, so the Panel views and
the static site's bridge share them.
"""

from __future__ import annotations

from . import format as fmt
from . import html

SUMMARY_CSS_CLASS = "kv-caption kv-summary"


def title(text: str) -> dict:
    """A chart's title as a view part: {"html": <p class=kv-chart-title>text</p>}."""
    return {"html": html.chart_title(text)}


def summary(key: str, text: str) -> dict:
    """A chart's text summary as a view part: {"html": <p data-kv=key>text</p>}."""
    return {"html": f'<p class="{SUMMARY_CSS_CLASS}" data-kv="{html.esc(key)}">{html.esc(text)}</p>'}


def refusal(result) -> tuple[str, str] | None:
    """sim's verdict on whether anything runs (Result.refusal) as (short, sentence), or None when
    requests run. The views show the short form instead of a latency or a batch: a number there
    would claim that something runs. Input errors (result not ok) are reported by the notices."""
    if result is None or not result.ok or result.refusal is None:
        return None
    return result.refusal["reason"], result.refusal["message"]


def scenario(result) -> dict:
    """The settings a result was computed for (Result.scenario); {} while there is none."""
    return result.scenario if result is not None else {}


def plural(n: int, word: str, words: str | None = None) -> str:
    """'1 sequence', '2 sequences', '1,024 sequences'."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


def fit_curve_summary(fit, result, prompt_tokens: int, concurrency: int) -> str:
    """The fit curve in words: where it starts and ends, the current point, the requests line."""
    if fit is None or result is None or not result.ok or not fit.prompt_tokens:
        return "No curve: this configuration cannot be evaluated."
    first, last = fit.prompt_tokens[0], fit.prompt_tokens[-1]
    fits_at = [(p, n) for p, n in zip(fit.prompt_tokens, fit.max_sequences, strict=True) if n > 0]
    ends = (f"The curve falls from {fit.max_sequences[0]:,} sequences at {first:,} prompt tokens to "
            f"{fit.max_sequences[-1]:,} at {last:,}" if fits_at else "Not one sequence fits at any prompt length")
    below = next((p for p, n in zip(fit.prompt_tokens, fit.max_sequences, strict=True) if n < concurrency), None)
    offered = (f"; above {below:,} tokens fewer than the {concurrency:,} requests offered fit" if below is not None and below > first
               else f"; fewer than the {concurrency:,} requests offered fit at every length" if below is not None
               else f"; all {concurrency:,} requests offered fit at every length")
    return f"{ends}{offered}. At this prompt ({prompt_tokens:,} tokens): {plural(result.max_sequences, 'sequence')}."


def step_summary(terms: dict | None, phase: str, what: str = "") -> str:
    """One phase's step in words (`what`: 'a 4,096-token prompt', 'a batch of 32'): each of sim's
    terms in milliseconds and which side binds (sim's bound)."""
    if terms is None:
        return f"{phase.capitalize()}: nothing runs, so there is no step to show."
    memory_s = terms["weight"] + terms["kv"]
    binding = "compute" if terms["bound"] == "compute" else "memory traffic"
    parts = [f"weight read {fmt.ms(terms['weight'])}"]
    if terms["kv"]:
        parts.append(f"KV read {fmt.ms(terms['kv'])}")
    head = f"{phase.capitalize()} step" + (f" for {what}" if what else "")
    text = (f"{head} {fmt.ms(terms['total'])}: memory {fmt.ms(memory_s)} ({', '.join(parts)}) against "
            f"tensor-core compute {fmt.ms(terms['compute'])}; {binding} binds.")
    serial = [f"{name} {fmt.ms(terms[key])}" for key, name in (("allreduce", "all-reduce"), ("overhead", "launch overhead"))
              if terms[key] > 0]
    if serial:
        text += f" Not overlapped: {', '.join(serial)}."
    return text


def kernel_summary(terms: dict, phase: str, what: str = "") -> str:
    """A per-kernel step in words: each of sim's kernels, its time and what binds it, in order."""
    head = f"{phase.capitalize()} step" + (f" for {what}" if what else "")
    parts = [f"{k['kind']} {fmt.ms(k['time_s'])} ({k['bound']})" for k in terms["kernels"]]
    return (f"{head} {fmt.ms(terms['total'])}, its kernels one after another: {', '.join(parts)}; "
            f"{terms['bound']}-bound kernels take most of it.")


def roofline_summary(result, bandwidth_achieved_bytes_per_s: float, prompt_tokens: int) -> str:
    if result is None or not result.ok:
        return "No roofline: this configuration cannot be evaluated."
    text = (f"Ridge at {result.ridge_intensity:,.0f} FLOP per byte (achieved bandwidth {bandwidth_achieved_bytes_per_s / 1e12:,.2f} TB/s, "
            f"datasheet peak {fmt.flops(result.peak_flops)}).")
    if result.ttft_s:
        text += (f" Prefill of {prompt_tokens:,} tokens: {result.prefill_arithmetic_intensity:,.0f} FLOP/byte, "
                 f"{fmt.flops(result.prefill_flops_per_s)}.")
    if result.decode_step_s:
        text += (f" Decode at batch {result.batch:,}: {result.decode_arithmetic_intensity:,.1f} FLOP/byte, "
                 f"{fmt.flops(result.decode_flops_per_s)}.")
    return text


def batch_summary(curve, result) -> str:
    if curve is None or not curve.batch or result is None or result.itl_s is None:
        return "No curve: nothing runs in this configuration."
    one = curve.tokens_per_s[0] / curve.batch[0]
    top = curve.batch[-1]
    return (f"Aggregate decode throughput rises from {fmt.rate(curve.tokens_per_s[0])} tok/s at batch {curve.batch[0]:,} to "
            f"{fmt.rate(curve.tokens_per_s[-1])} tok/s at {top:,}, where the KV pool is full; perfect amortisation would give "
            f"{fmt.rate(one * top)}. This batch ({result.batch:,}): {fmt.rate(result.decode_tokens_per_s)} tok/s.")
