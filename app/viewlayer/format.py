"""How numbers are written on screen: one function per kind of figure, so every view agrees.

Precision is chosen to match what the model can claim (three significant figures for times and
rates; pools to 0.1 GiB, inside design.md's 0.3 GiB tolerance) and no more.
"""

from __future__ import annotations

from kvlab.sim.units import GIB, KIB, MIB

DASH = "\u2014"  # shown where a figure does not exist for this scenario (nothing fits)


def link_number(x: int | float) -> str:
    """A number as a link carries it. A float within one part in 10^12 of a number of six significant
    figures is written as that number: the noise of a widget's repeated steps (0.8499999999999999 for
    0.85) never reaches an address bar. Any other float is written exactly (Python's shortest repr),
    so a link reads back to the same setting."""
    if isinstance(x, float):
        short = f"{x:.6g}"
        return short if abs(float(short) - x) <= 1e-12 * abs(x) else repr(x)
    return str(x)


def count(n: int | None) -> str:
    return DASH if n is None else f"{n:,}"


def gib(x_bytes: float | None, digits: int = 1) -> str:
    return DASH if x_bytes is None else f"{x_bytes / GIB:,.{digits}f} GiB"


def mib(x_bytes: float | None, digits: int = 1) -> str:
    return DASH if x_bytes is None else f"{x_bytes / MIB:,.{digits}f} MiB"


def per_token_bytes(x_bytes: float) -> str:
    """147,456 B -> '144 KiB'; 2 MiB for forced-MHA Qwen3-32B."""
    if x_bytes >= MIB and x_bytes % MIB == 0:
        return f"{x_bytes / MIB:,.0f} MiB"
    if x_bytes >= KIB:
        return f"{x_bytes / KIB:,.4g} KiB"
    return f"{x_bytes:,.0f} B"


def ms(t_s: float | None) -> str:
    """Milliseconds to three significant figures: 27.9 ms, 235 ms, 4.61 ms, 1,234 ms."""
    if t_s is None:
        return DASH
    v = t_s * 1e3
    if v >= 100:
        return f"{v:,.0f} ms"
    if v >= 10:
        return f"{v:.1f} ms"
    return f"{v:.2f} ms"


def seconds(t_s: float | None) -> str:
    """A latency or a duration, three significant figures: milliseconds below a second (`ms`: 84.0 ms,
    4.61 ms), then 1.23 s, 12.3 s, 123 s, 1,234 s."""
    if t_s is None:
        return DASH
    if t_s < 1:
        return ms(t_s)
    if t_s < 10:
        return f"{t_s:.2f} s"
    if t_s < 100:
        return f"{t_s:.1f} s"
    return f"{t_s:,.0f} s"


def rate(tokens_per_s: float | None) -> str:
    """Tokens per second: integers above 100, one decimal below."""
    if tokens_per_s is None:
        return DASH
    if tokens_per_s >= 100:
        return f"{tokens_per_s:,.0f}"
    return f"{tokens_per_s:.1f}"


def percent(fraction: float | None) -> str:
    if fraction is None:
        return DASH
    v = fraction * 100
    return f"{v:.1f}%" if v < 10 else f"{v:.0f}%"


def tokens(n: float) -> str:
    """Axis and caption form of a token count: 4,096 -> '4k', 32,768 -> '32k', 131,072 -> '128k'."""
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024:,.0f}k"
    return f"{n:,.0f}"


def flops(x: float) -> str:
    for unit, scale in (("PFLOP/s", 1e15), ("TFLOP/s", 1e12), ("GFLOP/s", 1e9)):
        if x >= scale:
            return f"{x / scale:,.3g} {unit}"
    return f"{x:,.3g} FLOP/s"
