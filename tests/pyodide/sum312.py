"""The built-in sum() of CPython 3.12 and later, for CPython 3.11.

CPython 3.12 changed sum() over floats to Neumaier's compensated summation
(Objects/bltinmodule.c, builtin_sum_impl); 3.11 adds naively. Pyodide runs 3.13/3.14, so code that
sums floats with sum() gives results that differ in the last digits from CPython 3.11's. The
Pyodide comparison uses this emulation as a diagnosis, never as a tolerance: when CPython 3.11
with this sum() reproduces Pyodide's output byte for byte, the built-in sum() is proven to be the
only cause of the difference (see test_sim_in_pyodide.py).

Follows the C code path for path: integers are accumulated exactly until the first float, which is
added with a plain float addition; then floats go through the compensated loop and integers are
added to the running total uncompensated; the compensation is added at the end when finite.
Anything else (other types, huge integers) takes the original sum().
"""

from __future__ import annotations

import builtins
import contextlib
import math
import sys

_original_sum = builtins.sum


def sum312(iterable, /, start=0):
    items = list(iterable)
    if type(start) not in (int, float) or not all(type(x) in (int, float, bool) for x in items):
        return _original_sum(items, start)
    result = start
    i = 0
    if type(result) is int:
        while i < len(items) and type(items[i]) is not float:
            result += items[i]
            i += 1
        if i == len(items):
            return result
        result = result + items[i]  # int + float: one plain float addition, as PyNumber_Add does
        i += 1
    f, c = float(result), 0.0
    for x in items[i:]:
        if type(x) is float:
            t = f + x
            c += (f - t) + x if abs(f) >= abs(x) else (x - t) + f
            f = t
        elif -(2**63) <= x < 2**63:
            f += float(x)
        else:
            return _original_sum(items, start)
    if c and math.isfinite(c):
        f += c
    return f


@contextlib.contextmanager
def compensated_sum():
    """Make builtins.sum behave as on CPython 3.12+ (a no-op there)."""
    if sys.version_info >= (3, 12):
        yield
        return
    builtins.sum = sum312
    try:
        yield
    finally:
        builtins.sum = _original_sum
