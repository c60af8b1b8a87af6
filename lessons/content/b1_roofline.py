"""B1. Prefill and decode on the roofline."""

from __future__ import annotations

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, equal, keyed, near
from .runs import ms, run, times


def _crossover() -> int:
    """The shortest prompt (a power of two) whose prefill is compute-bound."""
    n = 16
    while run(prompt_tokens=n).prefill_bound != "compute":
        n *= 2
    return n


def build() -> Lesson:
    tiny, small = run(prompt_tokens=16), run(prompt_tokens=128)
    p4k, p32k = run(prompt_tokens=4096), run(prompt_tokens=32768)
    cross = _crossover()
    ratio_short = small.ttft_s / tiny.ttft_s
    ratio_long = p32k.ttft_s / p4k.ttft_s

    q1 = Prediction(
        key="b1-short",
        question=(f"{tiny.model_name} on an H100, idle. One request with a 128-token prompt, another with a 16-token "
                  "prompt. How do their times to first token (one prefill each, nothing else running) compare?"),
        choices=(
            Choice("about 8x", "Eight times the tokens is eight times the arithmetic, but arithmetic is not what this "
                               "step waits for."),
            Choice("about 2x", "There is no partial effect: below the ridge the step time is the weight read, whatever "
                               "the token count."),
            Choice("about the same", "Both steps read every weight once; at this size the reading, not the arithmetic, "
                                     "sets the time."),
        ),
        **keyed(ratio_short, [(1.3, "about the same"), (4, "about 2x")], "about 8x"),
        reveal=(f"**{ms(small.ttft_s)} and {ms(tiny.ttft_s)}**: both are the time to read {tiny.weight_bytes / 2**30:.1f} GiB "
                f"of weights at the achieved share of {tiny.hbm_bandwidth_bytes_per_s / 1e12:.2f} TB/s."),
        gives_away=(f"**{ms(small.ttft_s)} and {ms(tiny.ttft_s)}**",),
    )
    s1 = f"""
Every step reads the weights once and does about 2 x parameters FLOPs per token. **Arithmetic intensity** is
FLOPs per byte read. The GPU's **ridge point** is its FLOP/s divided by its bytes/s: about
{p4k.ridge_intensity:.0f} FLOP per byte for this H100 with the textbook efficiencies. Below the ridge a step waits
on memory; above it, on the tensor cores.

A 128-token prefill sits at {small.prefill_arithmetic_intensity:.0f} FLOP/B, under the ridge: memory-bound. Its
compute would take {ms(small.prefill_compute_s)}, its weight read {ms(small.prefill_weight_read_s)}, and the step
takes the longer. The prefill turns compute-bound at about {cross:,} tokens. A 4k prefill sits at
{p4k.prefill_arithmetic_intensity:,.0f} FLOP/B, far right of the ridge; a decode step of 32 users at 4k, at
{p4k.decode_arithmetic_intensity:.0f}, far left.

(Time to first token here means one prompt's prefill on an idle GPU. Under load it also includes queueing:
that is Unit C.)
"""
    step1 = Step(q1, s1, (
        near("16- and 128-token prefills take the same time", ratio_short, 1.0, 1e-9),
        near("that time is about 6.1 ms", small.ttft_s * 1e3, 6.11, 0.01),
        equal("a 128-token prefill is memory-bound", small.prefill_bound, "memory"),
        equal("a 4k prefill is compute-bound", p4k.prefill_bound, "compute"),
        equal("decode at 4k x 32 is memory-bound", p4k.decode_bound, "memory"),
        equal("the prefill turns compute-bound at 256 tokens", cross, 256),
    ), LiveView("steady", ("roofline", "step_breakdown"), {"prompt_tokens": 128}, ("prompt_tokens",),
                "The roofline with this prompt's prefill and the decode step. Drag the prompt across the ridge."),
        (TryThis("Open the phases panel and drag Prompt tokens from 16 up to 32k; watch the prefill point cross the ridge.",
                 {"prompt_tokens": 16}, panel="phases"),))

    q2 = Prediction(
        key="b1-nsquared",
        question=f"A 4k prompt's prefill takes {ms(p4k.ttft_s)}. A 32k prompt has 8 times the tokens. Its prefill takes...",
        choices=(
            Choice("about 8x as long", "True of the weight matmuls, which are linear in tokens; attention is not."),
            Choice("more than 8x as long", "Attention compares every token with every earlier one: a term in n squared "
                                           "that grows faster than the rest."),
            Choice("less than 8x", "Sub-linear growth would need fixed costs to dominate; at 4k they are already small."),
        ),
        **keyed(ratio_long, [(7.5, "less than 8x"), (8.5, "about 8x as long")], "more than 8x as long"),
        reveal=f"**{ms(p32k.ttft_s)}**, {times(ratio_long, 1)} the 4k prefill.",
        gives_away=(f"**{ms(p32k.ttft_s)}**",),
    )
    s2 = f"""
Prefill FLOPs are 2 x parameters x n for the matmuls plus an attention term proportional to n squared
(queries against keys, then weights against values, halved by the causal mask). At 4k the quadratic term is a
small share; at 32k it is a large one, so the prefill grows {times(ratio_long, 1)} for 8 times the tokens.
"""
    step2 = Step(q2, s2, (
        near("a 32k prefill takes about 11.8x a 4k one", ratio_long, 11.85, 0.02),
    ), LiveView("steady", ("phase_numbers", "roofline"), {"prompt_tokens": 32768}, ("prompt_tokens",),
                "Time to first token (one prompt on an idle GPU) at the chosen length."),
        (TryThis("On the phases panel, set Prompt tokens to 4k, then 32k, and compare the prefill times.",
                 {"prompt_tokens": 4096}, panel="phases"),))
    return Lesson(
        **course.header("B1"),
        objective="Compute a step's arithmetic intensity, place it against the ridge, and predict which resource "
                  "sets its time.",
        prerequisites=("A3",),
        setup="Two kinds of step run on the same GPU. One resource limits each; which one depends on a ratio.",
        steps=(step1, step2),
        recap=("Arithmetic intensity = FLOPs / bytes; the ridge = FLOP/s / bytes/s.",
               "Short prefills and decode are memory-bound; long prefills compute-bound.",
               "A long prefill grows faster than its prompt: attention adds a term in the square of the length."),
        not_captured=("The textbook profile uses one efficiency for all matmuls; calibrated profiles refine it by shape.",
                      "FlashAttention's tiling and kernel launch costs are folded into the efficiencies."),
        ideas=("roofline", "prefill-compute-bound", "n-squared", "short-prefill-memory-bound"),
    )
