"""How fast is one steady-state evaluation? Prints figures; asserts nothing.

Three timings, each the median (with p10 and p90) of repeated runs in this process:

1. `sim.evaluate` of the app's default panel state (`Scenario()`: Qwen3-8B, H100 SXM, 4k in,
   256 out, 32 concurrent) -- what one slider move costs;
2. a 64-point prompt-length sweep (128 to 131,072 tokens, log-spaced) -- what one curve costs;
3. the peer: `llm_analysis.analysis.infer` on a comparable dense 7-8B model (its bundled
   Llama-2-7B config, H100 SXM, 4k in, 256 out, batch 16, the same 0.55 / 0.80 efficiencies),
   and kvlab on the same Llama-2-7B shape pasted as a config.json, so the ratio compares like
   with like.

Method (version 2): warm each call up, then time batches with `time.perf_counter_ns` and the
garbage collector off (as `timeit` does), sizing each batch so it lasts about 20 ms, for about
`--budget-s` seconds per figure. kvlab and the peer are timed in interleaved rounds (one batch of
each per round) and the ratio is the median of the per-round ratios, so a neighbour's load on a
shared machine slows both sides of a ratio alike. Run from the repository root:

    PYTHONPATH=. .venv/bin/python benchmarks/sim_bench.py [--budget-s 2]

(PYTHONPATH=. makes `kvlab` this checkout's code rather than the installed copy's.)
"""

from __future__ import annotations

import argparse
import gc
import io
import logging
import platform
import statistics
import sys
import time
from contextlib import redirect_stderr, redirect_stdout
from importlib import metadata

from kvlab.sim import Scenario, evaluate

from kvlab import sim

METHOD_VERSION = 2
BATCH_TARGET_S = 0.02

# Llama-2-7B as llm-analysis ships it (NousResearch_Llama-2-7b-hf), written as a HF config.json.
LLAMA2_7B = {"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
             "num_key_value_heads": 32, "intermediate_size": 11008, "vocab_size": 32000, "max_position_embeddings": 4096 + 256}


def _calls_per_batch(fn) -> int:
    fn()  # warm-up: catalog files, profile, imports
    t0 = time.perf_counter_ns()
    fn()
    one = max((time.perf_counter_ns() - t0) / 1e9, 1e-7)
    return max(1, int(BATCH_TARGET_S / one))


def _batch_s(fn, calls: int) -> float:
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        fn()
    return (time.perf_counter_ns() - t0) / 1e9 / calls


def interleaved(fns: list, budget_s: float) -> list[list[float]]:
    """Seconds per call of each function, one figure per round; every round times one batch of
    each function back to back."""
    calls = [_calls_per_batch(fn) for fn in fns]
    rounds = max(7, int(budget_s / (BATCH_TARGET_S * len(fns))))
    out: list[list[float]] = [[] for _ in fns]
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        for _ in range(rounds):
            for i, fn in enumerate(fns):
                out[i].append(_batch_s(fn, calls[i]))
    finally:
        if gc_was_on:
            gc.enable()
    return out


def per_call_s(fn, budget_s: float) -> list[float]:
    return interleaved([fn], budget_s)[0]


def summary(name: str, xs: list[float]) -> float:
    s = sorted(xs)
    med = statistics.median(s)
    print(f"{name:58s} median {med * 1e3:8.4f} ms   p10 {s[len(s) // 10] * 1e3:8.4f}   "
          f"p90 {s[(9 * len(s)) // 10] * 1e3:8.4f}   ({len(s)} batches)")
    return med


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget-s", type=float, default=2.0, help="seconds of timing per figure (default 2)")
    args = ap.parse_args()

    try:
        peer_version = metadata.version("llm-analysis")
        from llm_analysis.analysis import infer
    except (metadata.PackageNotFoundError, ImportError):
        infer, peer_version = None, "not installed"
    print(f"kvlab sim benchmark, method v{METHOD_VERSION}: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    print(f"python {platform.python_version()} ({platform.python_implementation()}) on {platform.machine()}, "
          f"{platform.system()} {platform.release()}; kvlab sim {sim.__version__}; llm-analysis {peer_version}")
    print(f"command: {' '.join([sys.executable, *sys.argv])}")
    print()

    default = Scenario()
    sweep = [default.with_(prompt_tokens=round(128 * 1024 ** (i / 63))) for i in range(64)]
    assert evaluate(default).ok and all(evaluate(s).ok for s in sweep)
    summary("sim.evaluate, default panel state", per_call_s(lambda: evaluate(default), args.budget_s))
    curve = summary("sim.evaluate x 64, prompt sweep 128..131,072 tokens", per_call_s(lambda: [evaluate(s) for s in sweep], args.budget_s))
    print(f"{'':58s} = {curve / 64 * 1e3:.4f} ms per point")

    llama = Scenario(config=LLAMA2_7B, prompt_tokens=4096, output_tokens=256, concurrency=16)
    assert evaluate(llama).ok

    if infer is None:
        summary("sim.evaluate, Llama-2-7B shape, batch 16", per_call_s(lambda: evaluate(llama), args.budget_s))
        print("llm-analysis is not installed: no peer figure (pip install llm-analysis)")
        return 0
    logging.disable(logging.CRITICAL)  # its INFO logging is not part of the estimate

    def peer():
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            return infer(model_name="NousResearch_Llama-2-7b-hf", gpu_name="h100-sxm-80gb", dtype_name="w16a16e16",
                         log_level="CRITICAL", batch_size_per_gpu=16, seq_len=4096, num_tokens_to_generate=256,
                         flops_efficiency=0.55, hbm_memory_efficiency=0.80)

    peer()  # raises if the batch did not fit: fail loudly rather than time an error path
    ours_default, ours_llama, theirs = interleaved([lambda: evaluate(default), lambda: evaluate(llama), peer], 3 * args.budget_s)
    print()
    print("interleaved rounds (kvlab and llm-analysis under the same load):")
    summary("sim.evaluate, default panel state", ours_default)
    summary("sim.evaluate, Llama-2-7B shape, batch 16", ours_llama)
    summary("llm_analysis.analysis.infer, Llama-2-7B, batch 16", theirs)
    vs_default = statistics.median(t / o for t, o in zip(theirs, ours_default, strict=True))
    vs_llama = statistics.median(t / o for t, o in zip(theirs, ours_llama, strict=True))
    print()
    print(f"ratio llm-analysis / kvlab (median of per-round ratios): {vs_default:.1f}x against the default panel state, "
          f"{vs_llama:.1f}x on the same Llama-2-7B shape (target: at least 8x on the default panel state, issue 11)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
