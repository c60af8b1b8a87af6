"""What the views say in words: the impossible states that replace a number, and the short text
summary under each chart (the numbers the chart draws, for readers who cannot see it).

Pure functions of sim's result and the settings, standard library only, so the Panel views and
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


def blocked_in(result, settings, context_tokens: int | None) -> tuple[str, str] | None:
    """`blocked` for a settings dict; without a context length the context check is skipped."""
    return blocked(result, settings["prompt_tokens"], settings["output_tokens"],
                   context_tokens if context_tokens is not None else 1 << 62)


def plural(n: int, word: str, words: str | None = None) -> str:
    """'1 sequence', '2 sequences', '1,024 sequences'."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


def blocked(result, prompt_tokens: int, output_tokens: int, context_tokens: int) -> tuple[str, str] | None:
    """(short, sentence) saying why no request of this shape can run, or None when one can.

    The views show the short form instead of a latency or a batch: a number there would claim
    that something runs. Input errors (result not ok) are reported by the notices instead.
    """
    if result is None or not result.ok:
        return None
    if result.kv_pool_bytes <= 0:
        return ("weights do not fit",
                f"The weights ({fmt.gib(result.weight_bytes)}) and the engine's reserves leave no room for a KV pool in the "
                f"{fmt.gib(result.usable_bytes)} the engine may use: it would not start, so nothing runs.")
    context = prompt_tokens + output_tokens
    if context > context_tokens:
        return ("longer than the context",
                f"Prompt + output ({context:,} tokens) is longer than the model's context ({context_tokens:,} tokens): "
                "the engine refuses the request, so nothing runs.")
    if result.max_sequences <= 0 or result.batch <= 0:
        return ("not one sequence fits",
                f"One sequence of {context:,} tokens needs more KV cache than the pool holds "
                f"({result.kv_pool_tokens:,} tokens): nothing runs.")
    return None


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
    """One phase's step in words (`what`: 'a 4,096-token prompt', 'a batch of 32'): each term in
    milliseconds and which one binds."""
    if terms is None:
        return f"{phase.capitalize()}: nothing runs, so there is no step to show."
    memory_s = terms["weight"] + terms["kv"]
    binding = "compute" if terms["compute"] > memory_s else "memory traffic"
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


def roofline_summary(result, bandwidth_achieved_bytes_per_s: float, prompt_tokens: int) -> str:
    if result is None or not result.ok:
        return "No roofline: this configuration cannot be evaluated."
    text = (f"Ridge at {result.ridge_intensity:,.0f} FLOP per byte (achieved bandwidth {bandwidth_achieved_bytes_per_s / 1e12:,.2f} TB/s, "
            f"datasheet peak {fmt.flops(result.peak_flops)}).")
    if result.ttft_s:
        text += (f" Prefill of {prompt_tokens:,} tokens: {result.prefill_arithmetic_intensity:,.0f} FLOP/byte, "
                 f"{fmt.flops(result.prefill_flops / result.ttft_s)}.")
    if result.decode_step_s:
        text += (f" Decode at batch {result.batch:,}: {result.decode_arithmetic_intensity:,.1f} FLOP/byte, "
                 f"{fmt.flops(result.decode_flops / result.decode_step_s)}.")
    return text


def batch_summary(curve, result) -> str:
    if curve is None or not curve.batch or result is None or result.itl_s is None:
        return "No curve: nothing runs in this configuration."
    one = curve.tokens_per_s[0] / curve.batch[0]
    top = curve.batch[-1]
    return (f"Aggregate decode throughput rises from {fmt.rate(curve.tokens_per_s[0])} tok/s at batch {curve.batch[0]:,} to "
            f"{fmt.rate(curve.tokens_per_s[-1])} tok/s at {top:,}, where the KV pool is full; perfect amortisation would give "
            f"{fmt.rate(one * top)}. This batch ({result.batch:,}): {fmt.rate(result.decode_tokens_per_s)} tok/s.")
