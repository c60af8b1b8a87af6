"""C1. Latency is a distribution."""

from __future__ import annotations

from kvlab.app.viewlayer.ttft_by_prompt import ttft_by_prompt_length
from kvlab.sim import Scenario, evaluate

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, between, holds, keyed
from .runs import lab, secs

PRESET = "long-prompts-light"


def _p99_prompt(r) -> int:
    prompts = sorted(r.requests["prompt_tokens"])
    return prompts[int(0.99 * len(prompts))]


def build() -> Lesson:
    r = lab(PRESET)
    cfg = r.config
    ratio = r.ttft_s.p99 / r.ttft_s.p50
    rows = ttft_by_prompt_length(r.requests)
    longest = rows[-1]
    shortest = rows[0]
    p99_prompt = _p99_prompt(r)
    sc = cfg["scenario"]

    def prefill_alone(tokens: int) -> float:
        """TTFT of one prompt on the run's idle GPUs: its own prefill."""
        return evaluate(Scenario(model=sc["model"], gpu=sc["gpu"], tp=sc["tp"], engine=sc["engine"],
                                 max_num_seqs=sc["max_num_seqs"], max_num_batched_tokens=sc["max_num_batched_tokens"],
                                 prompt_tokens=tokens)).ttft_s

    floor = prefill_alone(p99_prompt)

    q1 = Prediction(
        key="c1-ratio",
        question=(f"{r.model_name} on {r.gpus} GPUs (tensor parallel) serves prompts with a median near "
                  f"{cfg['workload']['prompt_tokens']:,} tokens and a "
                  f"long tail, at {cfg['workload']['rate_per_s']:g} requests per second, well below what it can "
                  "take. How does the 99th-percentile time to first token compare with the median?"),
        choices=(
            Choice("about the same", "Light load makes queues short, but prompt lengths still vary by a factor of a "
                                     "hundred, and so does their prefill."),
            Choice("about 2x", "A Gaussian intuition: the tail of this workload is much longer than its middle."),
            Choice("about 8x", "The slowest first tokens belong to the longest prompts, whose prefill alone takes "
                               "seconds."),
        ),
        **keyed(ratio, [(1.5, "about the same"), (4, "about 2x")], "about 8x"),
        reveal=(f"**p50 {secs(r.ttft_s.p50)}, p99 {secs(r.ttft_s.p99)}**: {ratio:.1f} times the median. The mean is "
                f"{secs(r.ttft_s.mean)}."),
        gives_away=(f"p99 {secs(r.ttft_s.p99)}",),
    )
    s1 = f"""
A latency is a distribution over requests, and a single number hides its shape. The **median** (p50) is
the typical request; the **99th percentile** (p99) is the one user in a hundred who waits longest. Here the
mean, {secs(r.ttft_s.mean)}, says little about either.

Four latencies describe a streamed answer: **TTFT** (arrival to first token), **ITL** (gap between two
tokens), **TPOT** (a request's decode time per token after the first) and end-to-end time. **Goodput**
counts the requests per second that meet both a TTFT and an ITL target: here
{r.goodput_per_s:.2f} of {r.throughput_per_s:.2f} requests/s meet TTFT at most {r.ttft_target_s:g} s and
ITL at most {r.itl_target_s * 1e3:g} ms.
"""
    step1 = Step(q1, s1, (
        between("p99 TTFT is 5x to 12x the median at light load", ratio, 5, 12),
        between("the median TTFT is about 0.3 s", r.ttft_s.p50, 0.25, 0.45),
        between("p99 TTFT is between 2 and 3.5 s", r.ttft_s.p99, 2.0, 3.5),
        holds("every request completes", r.completed == r.num_requests, f"{r.completed}/{r.num_requests}"),
        holds("the load is light: under one request waits on average", r.mean_waiting < 1.0, f"{r.mean_waiting:.3f}"),
    ), LiveView("lab", ("summary", "distribution"), {"preset": PRESET}, ("rate_per_s", "policy"),
                "The run's TTFT histogram and cumulative distribution, p50, p90 and p99 marked."),
        (TryThis("In the serving lab, read the TTFT histogram, then raise the request rate from 0.5 to 1.5.",
                 {"preset": PRESET}, panel="serving_lab"),))

    q2 = Prediction(
        key="c1-floor",
        question=("Could a better scheduler, on the same GPUs, bring this p99 TTFT under one second?"),
        choices=(
            Choice("yes, with decode priority or separate lanes", "Scheduling removes waiting for other requests' "
                   "work. It cannot shorten a request's own prefill."),
            Choice("yes, with chunked prefill", "Chunking spreads a prefill over steps: the first token still needs "
                                               "every chunk done."),
            Choice("no: the longest prompts' own prefill takes longer than that", "At p99 the prompt is tens of "
                   "thousands of tokens; its prefill on an idle machine is already over a second."),
        ),
        **keyed(floor, [(1.0, "yes, with decode priority or separate lanes")],
                "no: the longest prompts' own prefill takes longer than that"),
        reveal=(f"The 99th-percentile prompt has {p99_prompt:,} tokens; its prefill alone, on idle GPUs, takes "
                f"**{secs(floor)}**. Grouped by prompt length, prompts over {longest['low_tokens']:,} tokens have a median "
                f"TTFT of {secs(longest['p50_s'])}, prompts up to {shortest['high_tokens']:,} tokens "
                f"{secs(shortest['p50_s'])}."),
        gives_away=(f"**{secs(floor)}**",),
    )
    # The published account of this kind of deployment: separate lanes took its p99 TTFT from 2.1 s to 640 ms
    # (../shared/seeds/000, "moved p99 TTFT from 2.1s to 640ms"). The longest prompt that prefills within 640 ms
    # on these GPUs, by bisection on sim's own TTFT of an idle engine:
    published_p99_s = 0.64
    low, high = 1, p99_prompt
    while high - low > 64:
        mid = (low + high) // 2
        low, high = (mid, high) if prefill_alone(mid) <= published_p99_s else (low, mid)
    s2 = f"""
Group TTFT by prompt length before blaming the scheduler. When the slow first tokens are the long prompts,
the floor is the prompt's own prefill: shorten the prompt, cache its prefix, or buy compute. When short
prompts are slow too, they are waiting behind someone else's work, and scheduling can help (lesson C3).

A published account of a deployment like this one reports that giving prefills and decodes separate lanes
took its p99 TTFT from 2.1 s to 640 ms. The floor says what that implies. On these GPUs a prompt prefills
within 640 ms only up to about {round(low, -3):,} tokens, and here the 99th-percentile prompt has {p99_prompt:,}. So if
that deployment ran on GPUs like these, more than 99 of its prompts in 100 were shorter than that, its long prompts
rarer than here, and its slow first tokens were short prompts queued behind long ones: the case scheduling can fix.
On this workload no scheduler gets p99 below the floor.
"""
    step2 = Step(q2, s2, (
        holds("the p99 prompt's own prefill exceeds one second", floor > 1.0, f"{floor:.3f} s"),
        between("a p99-length prompt's prefill is about 2 s", floor, 1.5, 2.5),
        holds("a prompt prefills within 640 ms up to a length well under the p99 prompt's",
              prefill_alone(low) <= published_p99_s < prefill_alone(low + 64) and low < p99_prompt / 2,
              f"{low} tokens vs {p99_prompt}"),
        holds("the longest prompts have the slowest median TTFT",
              longest["p50_s"] == max(row["p50_s"] for row in rows), repr([round(x["p50_s"], 3) for x in rows])),
    ), LiveView("lab", ("ttft_by_prompt",), {"preset": PRESET}, ("rate_per_s",),
                "TTFT grouped by prompt length, from the same run."),
        (TryThis("In the serving lab, switch the policy to lanes and compare the TTFT-by-prompt-length table.",
                 {"preset": PRESET}, panel="serving_lab"),))
    return Lesson(
        **course.header("C1"),
        objective="Read TTFT, ITL, TPOT and goodput as distributions; find what sets the tail, and its floor.",
        prerequisites=("B2",),
        setup="Requests now arrive over time, each with its own prompt. The simulator runs them one by one.",
        steps=(step1, step2),
        recap=("Report p50 and p99, not the mean; goodput counts requests that meet the targets.",
               "At light load the TTFT tail is the longest prompts' own prefill: a floor no scheduler removes.",
               "Group TTFT by prompt length to tell a floor from queueing."),
        not_captured=("The lab's engine draws prompts from a log-normal shape; real traffic has bursts and "
                      "correlations the Poisson arrivals here do not.",
                      "The tokenizer and HTTP front end are modelled only as the optional CPU costs of lesson C4."),
        ideas=("distribution-not-mean", "ttft-itl-tpot-goodput", "prefill-floor"),
    )
