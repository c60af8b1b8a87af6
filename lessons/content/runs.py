"""The simulations lessons quote, cached so every lesson, page and test shares one run of each.

Steady-state figures come from `sim.evaluate` over the panels' default scenario plus changes;
time-domain figures from `sim.engine.simulate` over a named lab preset plus changes. Both caches
are keyed by the changes, so a lesson asking twice pays once (functools.cache).
"""

from __future__ import annotations

from functools import cache

from kvlab.sim import Result, Scenario, evaluate
from kvlab.sim.engine import EngineConfig, EngineResult, simulate
from kvlab.sim.engine.presets import preset
from kvlab.sim.units import GIB, KIB, MIB

BASE = Scenario(model="qwen3-8b", gpu="h100-sxm", prompt_tokens=4096, output_tokens=256, concurrency=32)


@cache
def run(**changes) -> Result:
    """The steady-state model at the panels' default scenario with `changes`."""
    return evaluate(BASE.with_(**changes))


def lab_config(name: str, **changes) -> EngineConfig:
    """A lab preset with changes, by field name (EngineConfig.with_ routes nested ones)."""
    return preset(name).with_(**changes)


@cache
def lab(name: str, **changes) -> EngineResult:
    """One time-domain run of a lab preset with changes."""
    return simulate(lab_config(name, **changes))


def gib(x: float, digits: int = 1) -> str:
    return f"{x / GIB:.{digits}f} GiB"


def kib(x: float) -> str:
    return f"{x / KIB:,.0f} KiB"


def mib(x: float) -> str:
    return f"{x / MIB:,.1f} MiB"


def ms(x: float, digits: int = 1) -> str:
    return f"{x * 1e3:,.{digits}f} ms"


def secs(x: float) -> str:
    """Seconds for latency: milliseconds under one second, seconds above."""
    if x < 1:
        return f"{x * 1e3:,.0f} ms"
    return f"{x:.2f} s" if x < 10 else f"{x:,.1f} s"


def tok(x: float) -> str:
    return f"{x:,.0f}"


def times(x: float, digits: int = 2) -> str:
    return f"\u00d7{x:.{digits}f}"


def pct(x: float) -> str:
    return f"{x:.0%}"

