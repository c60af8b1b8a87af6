"""E3. Bytes per dollar: what a million output tokens cost once every second of GPU time is billed."""

from __future__ import annotations

from kvlab.sim.units import GIB

from .. import course
from .model import Choice, Lesson, LiveView, Prediction, Step, TryThis, equation, estimate, keyed, near, number
from .runs import run, tok

PRICE = 2.5


def usd(x: float) -> str:
    return f"${x:,.2f}"


def _estimate_step(short) -> Step:
    """The price of a million tokens from the price of an hour and the tokens an hour makes."""
    per_s, cost = short.served_tokens_per_s, short.served_dollars_per_million_tokens
    hours = 1e6 / (per_s * 3600)
    p = Prediction(
        key="e3-dollars",
        question=(f"One H100 at {usd(PRICE)} per GPU-hour serves {short.model_name} with 32 requests in flight and "
                  f"4k-token prompts. Counting all its GPU time, the prompts' prefills as well as the decode steps, it "
                  f"makes {number(per_s)} output tokens a second. What does a million output tokens cost?"),
        **estimate(cost, "cost of a million output tokens", "dollars"),
        reveal=f"**${number(cost)}** per million output tokens.",
        gives_away=(f"**${number(cost)}**",),
        peek=(equation(f"GPU-hours per million tokens = 1,000,000 / ({number(per_s)} tokens/s x 3,600 s/h) = "
                       f"{number(hours)} h", hours, cost / PRICE),
              equation(f"$ per million = {number(hours)} h x ${number(PRICE)} per GPU-hour = ${number(cost)}",
                       hours * PRICE, cost)),
    )
    prose = """
A GPU-hour buys the tokens the GPU makes in that hour, so a token costs the hour's price over the tokens an hour
makes. The hard part is the tokens per hour, not the division.
"""
    return Step(p, prose, ())


def build() -> Lesson:
    short = run(dollars_per_gpu_hour=PRICE)
    long = run(dollars_per_gpu_hour=PRICE, prompt_tokens=32768)
    long8 = run(dollars_per_gpu_hour=PRICE, prompt_tokens=32768, kv_dtype="fp8")
    cost4k, cost32k, cost32k8 = (r.served_dollars_per_million_tokens for r in (short, long, long8))
    ratio = cost32k / cost4k
    decode_ratio = long.decode_dollars_per_million_tokens / short.decode_dollars_per_million_tokens
    fp8_share = cost32k8 / cost32k

    q1 = Prediction(
        key="e3-context",
        question=("Same card, price and 32 requests, every second of GPU time still billed. Make the prompts 32k tokens "
                  "long. Against the 4k cost, a million output tokens now cost about..."),
        choices=(
            Choice("2x as much", "Fewer users fit at 32k and each step reads more cache; the prompts are longer too. "
                                 "Any one of those alone would already cost more than twice."),
            Choice("5x as much", "That is what the decode steps alone cost: it leaves out the time the GPU spends "
                                 "prefilling prompts eight times as long."),
            Choice("9x as much", "Decode slows (fewer users, longer cache reads) and each prompt's prefill grows "
                                 "eightfold on top: both land on the same bill."),
        ),
        **keyed(ratio, [(3.5, "2x as much"), (7.0, "5x as much")], "9x as much"),
        reveal=(f"**{usd(cost32k)}** per million output tokens, {ratio:.1f} times the 4k cost. The decode steps "
                f"alone would give {usd(short.decode_dollars_per_million_tokens)} and {usd(long.decode_dollars_per_million_tokens)}, "
                f"{decode_ratio:.1f} times: the prefills are the difference."),
        gives_away=(f"**{usd(cost32k)}**", f"{ratio:.1f} times"),
    )
    s1 = f"""
A GPU-hour buys the tokens the GPU produces in that hour, so the cost of a token is the hour's price over the
tokens per hour. Which tokens per hour is the question. Counting the decode steps only, the card makes
{tok(short.decode_tokens_per_s)} tokens a second at 4k and {tok(long.decode_tokens_per_s)} at 32k. Counting all
its time, the prefills of newly admitted prompts included, it makes {tok(short.served_tokens_per_s)} and
{tok(long.served_tokens_per_s)}. At 32k each prompt's prefill costs the running batch
{long.prefill_in_batch_s:.2f} s of GPU time, against {short.prefill_in_batch_s:.2f} s at 4k: long context is paid for
once in the prompt and again in every decode step. The panels' cost tile bills all GPU time and gives the decode
steps' share underneath; the throughput tile counts decode steps only.
"""
    step1 = Step(q1, s1, (
        near("4k: about $0.62 per million output tokens, all GPU time billed", cost4k, 0.62, 0.03),
        near("32k: about $5.80 per million", cost32k, 5.80, 0.03),
        near("32k costs about 9.3x 4k", ratio, 9.3, 0.03),
        near("decode steps alone: 32k costs about 5.4x 4k", decode_ratio, 5.4, 0.03),
    ), LiveView("steady", ("phase_numbers",), {"dollars_per_gpu_hour": PRICE, "prompt_tokens": 32768}, ("prompt_tokens",
                "dollars_per_gpu_hour"), "The phases panel's tiles at the chosen prompt length and price: the cost "
                "bills all GPU time (the decode-only cost underneath); the throughput counts decode steps only."),
        (TryThis("On the phases panel, set a price per GPU-hour (advanced settings), then drag Prompt tokens from 4k to "
                 "32k: watch the cost and, under it, the decode steps' share.", {"dollars_per_gpu_hour": PRICE},
                 panel="phases"),))

    q2 = Prediction(
        key="e3-fp8",
        question=("Keep the 32k prompts and store the cache in FP8, which lets twice as many users fit. Counting all GPU "
                  "time again, the cost per million output tokens becomes..."),
        choices=(
            Choice("unchanged", "FP8 does change the decode steps here: twice the users share each step's read."),
            Choice("about 15% lower", "The decode steps now serve twice the users, but a 32k prefill costs the same "
                                      "compute in FP8, and at 32k the prefills are most of the GPU's time."),
            Choice("about half as much", "That is the decode-only view: twice the users at the same step time. The prefills, "
                                 "which FP8 KV does not speed up, stay on the bill."),
        ),
        **keyed(fp8_share, [(0.65, "about half as much"), (0.97, "about 15% lower")], "unchanged"),
        reveal=(f"**{usd(cost32k8)}** per million, {1 - fp8_share:.0%} lower. The decode-only cost halves, from "
                f"{usd(long.decode_dollars_per_million_tokens)} to {usd(long8.decode_dollars_per_million_tokens)}."),
        gives_away=(f"**{usd(cost32k8)}**", f"{1 - fp8_share:.0%} lower"),
    )
    s2 = f"""
FP8 KV doubles the users at 32k ({long.batch} to {long8.batch}) and with them the decode rate
({tok(long.decode_tokens_per_s)} to {tok(long8.decode_tokens_per_s)} tokens a second). All-GPU-time output rises only
from {tok(long.served_tokens_per_s)} to {tok(long8.served_tokens_per_s)}, because every request still brings a 32k
prompt to prefill, and that work is compute, which the cache's precision does not touch. A lever cuts cost in
proportion to the share of GPU time it speeds up: read the bill by phase before choosing one. Shorter prompts and
prefix caching (which skips the shared part of a prompt) attack the prefill share; fewer bytes per token and batching
attack the decode share.

Sizing by memory gives the bytes-per-dollar view of the same card. Its pool holds {tok(long.kv_pool_tokens)} tokens
of cache for {usd(PRICE)} an hour, and a user resident with a 32k context takes {long.kv_bytes_per_sequence / GIB:.2f}
GiB of it. {long.max_sequences} such users fit, so keeping one resident costs {usd(long.dollars_per_sequence_hour)} an
hour. In FP8 the pool holds {tok(long8.kv_pool_tokens)} tokens, {long8.max_sequences} users fit, and one costs
{usd(long8.dollars_per_sequence_hour)}. At 4k, {short.max_sequences} fit at {usd(short.dollars_per_sequence_hour)} each.
Bytes per dollar is the price of holding a context. The cost per token adds the GPU time to fill that context and
to read it, which is why FP8 halves the first and takes {1 - fp8_share:.0%} off the second.
"""
    step2 = Step(q2, s2, (
        near("holding one 32k user resident on the H100 costs about $0.21 an hour", long.dollars_per_sequence_hour, 0.208, 0.03),
        near("an FP8 cache halves the hourly cost of holding a 32k user",
             long8.dollars_per_sequence_hour / long.dollars_per_sequence_hour, 0.5, 0.01),
        near("a 4k user costs about $0.027 an hour to hold", short.dollars_per_sequence_hour, 0.0269, 0.03),
        near("FP8 KV at 32k: about $4.99 per million, all GPU time billed", cost32k8, 4.99, 0.03),
        near("FP8 KV at 32k cuts the all-GPU-time cost by about 14%", 1 - fp8_share, 0.14, 0.1),
        near("FP8 KV at 32k halves the decode-only cost", long8.decode_dollars_per_million_tokens / long.decode_dollars_per_million_tokens,
             0.5, 0.01),
    ), LiveView("steady", ("phase_numbers", "hbm_bar"), {"dollars_per_gpu_hour": PRICE, "prompt_tokens": 32768, "kv_dtype": "fp8"},
                ("kv_dtype",), "An FP8 cache at 32k: the pool holds twice the users; the cost falls a little, its "
                "decode-only line underneath halves."),
        (TryThis("With a price set and 32k prompts, switch KV cache precision to FP8 and compare the cost tile and its "
                 "decode-only line before and after.", {"dollars_per_gpu_hour": PRICE, "prompt_tokens": 32768}),))
    return Lesson(
        **course.header("E3"),
        objective="Price a million tokens from all the GPU time a workload uses, and see where context length puts the cost.",
        prerequisites=("A4", "A6"),
        setup="A GPU-hour has a price. What it buys is a number of tokens, and bytes and FLOPs decide that number.",
        steps=(_estimate_step(short), step1, step2),
        recap=("Cost per token = price per hour / tokens per hour, with every second of GPU time counted.",
               "Long context costs twice: longer prefills and slower decode steps for fewer users.",
               "A lever cuts cost only in the share of GPU time it speeds up."),
        not_captured=("Cost here is a steady closed loop of 32 requests: prefills and decode steps of the running batch. "
                      "Idle time between requests, the host, networking and input-token pricing are not modelled.",),
        ideas=("bytes-per-dollar", "context-drives-cost"),
    )
