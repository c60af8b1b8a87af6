"""B1. Prefill and decode on the roofline."""

from __future__ import annotations

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, equal, equation, estimate, holds, keyed, near, number
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

    intensity = small.prefill_arithmetic_intensity
    q1 = Prediction(
        key="b1-intensity",
        question=(f"{small.model_name} on an H100, idle, prefills one 128-token prompt. The step reads every weight once "
                  f"({number(small.weight_bytes / 1e9)} GB in BF16) and does about 2 FLOPs per parameter per token. What is "
                  "its arithmetic intensity: FLOPs done per byte read?"),
        **estimate(intensity, "arithmetic intensity", "FLOP per byte"),
        reveal=(f"**{number(intensity)} FLOP per byte**, left of this H100's ridge at {number(small.ridge_intensity)}: the "
                f"step waits on memory. So a 16-token prompt's prefill takes as long as this one: "
                f"{ms(small.ttft_s)} and {ms(tiny.ttft_s)}, both the time to read the weights."),
        gives_away=(f"**{number(intensity)} FLOP per byte**",),
        peek=(equation(f"intensity = FLOPs / bytes = {number(small.prefill_flops / 1e12)} TFLOP / "
                       f"{number(small.prefill_bytes / 1e9)} GB = {number(intensity)} FLOP per byte",
                       small.prefill_flops / small.prefill_bytes, intensity),
              holds(f"{number(intensity)} < ridge {number(small.ridge_intensity)} FLOP per byte: memory-bound",
                    intensity < small.ridge_intensity and small.prefill_bound == "memory",
                    f"{intensity:.4g} vs {small.ridge_intensity:.4g}, {small.prefill_bound}")),
    )
    s1 = f"""
Every step reads the weights once and does about 2 x parameters FLOPs per token. **Arithmetic intensity** is
FLOPs per byte read. The GPU's **ridge point** is its FLOP/s divided by its bytes/s: about
{p4k.ridge_intensity:.0f} FLOP per byte for this H100 with the textbook efficiencies. Below the ridge a step waits
on memory; above it, on the tensor cores.

In BF16 a prefill's intensity is close to its token count: 2 FLOPs per parameter per token over 2 bytes
per parameter. The 128-token prefill's compute would take {ms(small.prefill_compute_s)}, its weight read
{ms(small.prefill_weight_read_s)}, and the step takes the longer. The prefill turns compute-bound at
about {cross:,} tokens. A 4k prefill sits at {p4k.prefill_arithmetic_intensity:,.0f} FLOP/B, far right
of the ridge; a decode step of 32 users at 4k, at {p4k.decode_arithmetic_intensity:.0f}, far left.

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
