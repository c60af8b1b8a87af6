"""Throughput and cost in the lessons say which GPU time they count.

sim gives two rates: decode_tokens_per_s (the decode steps' output, the prompts' prefills left out) and
served_tokens_per_s (all GPU time), and a price per million tokens for each. A lesson that prices tokens with
decode_dollars_per_million_tokens leaves the prefills off the bill: at 32k prompts, most of it."""

import re

import pytest
from kvlab.lessons import course
from kvlab.lessons.content import runs

from .test_lessons import LESSONS, _all_text

PRICE = 2.5


def _served_cost(r):
    """Price per hour over all-GPU-time output per hour, per million tokens (the test's own arithmetic)."""
    return PRICE / 3600 / r.served_tokens_per_s * 1e6


def test_e3_prices_all_gpu_time():
    e3 = course.lesson("E3")
    short = runs.run(dollars_per_gpu_hour=PRICE)
    long = runs.run(dollars_per_gpu_hour=PRICE, prompt_tokens=32768)
    long8 = runs.run(dollars_per_gpu_hour=PRICE, prompt_tokens=32768, kv_dtype="fp8")
    estimate, context, fp8 = e3.predictions
    assert estimate.figure == pytest.approx(_served_cost(short), rel=1e-9)  # the 4k cost the student estimates
    assert f"**${_served_cost(long):.2f}**" in context.reveal
    assert context.answer == "9x as much", context.answer  # 32k costs about 9.3x 4k, not the decode-only 5.4x
    assert f"**${_served_cost(long8):.2f}**" in fp8.reveal
    assert fp8.answer == "about 15% lower", fp8.answer  # not "half": FP8 KV does not speed the 32k prefills


def test_sims_served_cost_is_the_price_over_all_gpu_time():
    r = runs.run(dollars_per_gpu_hour=PRICE, prompt_tokens=32768)
    assert r.served_dollars_per_million_tokens == pytest.approx(_served_cost(r), rel=1e-9)
    assert r.served_dollars_per_million_tokens > 3 * r.decode_dollars_per_million_tokens  # 32k prefills: most of the bill
    assert runs.run().served_dollars_per_million_tokens is None  # no price, no cost


UNLABELLED_TOTAL = re.compile(r"\btotal (tokens per second|throughput)|tokens per second in total", re.IGNORECASE)


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda les: les.code)
def test_no_decode_only_rate_reads_as_total(lesson):
    text = _all_text(lesson)
    hit = UNLABELLED_TOTAL.search(text)
    assert hit is None, f"{lesson.code}: '{hit.group(0)}' (say decode-only, or count all GPU time)"


@pytest.mark.parametrize("code,key", [("A4", "a4-throughput"), ("A6", "a6-kv4k"), ("A6", "a6-kv32k"), ("B3", "b3-ceiling")])
def test_throughput_questions_say_decode_only(code, key):
    p = next(p for p in course.lesson(code).predictions if p.key == key)
    assert "decode-only" in p.question.lower(), p.question
