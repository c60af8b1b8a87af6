"""MLA decode attention (DeepSeek-V3's latent cache) through paged_mla_kernel.py.

The measurement and its rules are attention.py's (_run_mla_layout): one shared latent row per
token, absorbed decode with q heads / plan.mla_tp heads per GPU, a float64 check before timing.
It is its own benchmark, placed after the GEMM sweeps, because it runs a kernel that has had less
use than the others: a fault there leaves the CUDA context unusable, and by then every other
measurement has been taken and checkpointed.
"""

from __future__ import annotations

from . import Context
from .attention import _layout_units, run_mla


def units(plan, models) -> int:
    return len(plan.attention_mla_models) * _layout_units(plan)


def run(ctx: Context, models) -> dict:
    return run_mla(ctx, models)
