"""C2's keys rest on what each deployment sustains, and its labels name the figures it reveals.

Before: the keys compared knees read off a rate grid half a request per second apart, so FP8 KV came out
"about as far as 2x HBM" (3 to 3.5 against 3 req/s) while the explanation said it goes further, and the
right label "about 1.4x" was revealed as 1.64x."""

import re

from kvlab.lessons import course
from kvlab.lessons.content import c2_knee

MULTIPLIER = re.compile(r"[x\u00d7](\d+(?:\.\d+)?)|(\d+(?:\.\d+)?) ?(?:x|times)\b")


def _multipliers(text):
    return [float(a or b) for a, b in MULTIPLIER.findall(text)]


def test_each_right_label_names_the_revealed_figure():
    for p in course.lesson("C2").predictions:
        label = _multipliers(p.answer)
        assert label, f"{p.key}: the right label '{p.answer}' names no multiplier"
        revealed = _multipliers(p.reveal)
        assert revealed, p.reveal
        assert abs(revealed[0] / label[0] - 1) < 0.05, f"{p.key}: label {p.answer!r}, revealed x{revealed[0]}"


def test_fp8_beats_twice_the_memory_in_every_seed():
    """The physics the FP8 step teaches: capacity and bandwidth both, so further than more memory alone."""
    fp8, double = c2_knee.saturated("seed004-cliff-fp8"), c2_knee.saturated("cliff-2x-hbm")
    assert all(f.throughput_per_s > d.throughput_per_s for f, d in zip(fp8, double, strict=True))
    assert fp8[0].kv_pool_tokens < double[0].kv_pool_tokens
    p = course.lesson("C2").predictions[1]
    assert "more than twice the memory gave" in p.reveal
