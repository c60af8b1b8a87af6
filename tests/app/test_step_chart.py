"""The step chart draws sim's step: its terms add up to sim's step time and its "binds" marker
and its title name sim's bound, for every shipped profile (whole-step and per-kernel), on several
GPUs, over a grid of batch and prompt lengths.

Issue 33: with the measured H200 profile the chart rebuilt a whole-step picture from sums (the
launch overhead by subtraction, the weight read over the whole-step bandwidth), so Qwen3-8B at 256
requests of 128 tokens was titled compute-bound with the memory row marked as binding and a
4.06 ms "launch overhead" where sim's is 0.25 ms.
"""

import itertools

import pytest
from kvlab.app.viewlayer.step_breakdown import view_step_breakdown
from kvlab.sim import Scenario, evaluate, profile_names

GPUS = ("h100-sxm", "h200", "a100-80")
GRID = [(batch, prompt) for batch in (1, 16, 256) for prompt in (128, 4096, 32768)]
BINDS = "  \u25c0 binds"  # the marker the chart writes after the binding row's label
CASES = [(p, g, e) for p in profile_names() for g in GPUS for e in ("textbook", "vllm")]


def _drawn(out: dict) -> tuple[set[str], dict]:
    """The rows the chart marks as binding, and its bars."""
    labels = out["labels"]["data"]
    return {row for row, text in zip(labels["row"], labels["text"], strict=True) if text.endswith(BINDS)}, out["bars"]["data"]


@pytest.mark.parametrize(("profile", "gpu", "engine"), CASES)
def test_the_step_chart_adds_up_to_sims_step_and_marks_sims_bound(profile, gpu, engine):
    drawn = 0
    for (batch, prompt), phase in itertools.product(GRID, ("decode", "prefill")):
        s = Scenario(model="qwen3-8b", gpu=gpu, profile=profile, engine=engine, concurrency=batch, prompt_tokens=prompt)
        r = evaluate(s)
        if r.batch == 0:
            continue
        out = view_step_breakdown(r, phase)
        total_s, bound = (r.ttft_s, r.prefill_bound) if phase == "prefill" else (r.decode_step_s, r.decode_bound)
        where = (profile, gpu, engine, batch, prompt, phase)
        title = out["title"]["html"]
        assert f"{bound}-bound" in title, where
        marked, bars = _drawn(out)
        ends = dict(zip(out["labels"]["data"]["row"], out["labels"]["data"]["x"], strict=True))
        if r.step_model == "whole_step":
            assert marked == {bound}, where
            step_ms = ends[bound] + ends.get("not overlapped", 0.0)
            overhead = [ms for term, ms in zip(bars["term"], bars["ms"], strict=True) if term == "launch overhead"]
            sim_overhead = r.prefill_overhead_s if phase == "prefill" else r.decode_overhead_s
            assert overhead == ([pytest.approx(sim_overhead * 1e3, rel=1e-9)] if sim_overhead or ends.get("not overlapped")
                                else []), where
        else:
            kernels = [k for k in (r.prefill_kernels if phase == "prefill" else r.decode_kernels) if k["time_s"] > 0]
            assert len(bars["row"]) == len(kernels), where  # one bar per kernel of sim's
            assert bars["ms"] == [pytest.approx(k["time_s"] * 1e3, rel=1e-12) for k in kernels], where
            kinds = {row: k["bound"] for row, k in zip(bars["row"], kernels, strict=True)}
            assert marked and {kinds[row] for row in marked} == {bound}, where
            assert {row for row, b in kinds.items() if b == bound} == marked, where
            step_ms = bars["right"][-1]
        assert step_ms == pytest.approx(total_s * 1e3, rel=1e-9), where
        drawn += 1
    assert drawn >= len(GRID)  # most of the grid runs on each card


def test_the_issues_h200_case_draws_sims_kernels():
    s = Scenario(model="qwen3-8b", gpu="h200", profile="h200", engine="vllm", concurrency=256, prompt_tokens=128)
    r = evaluate(s)
    out = view_step_breakdown(r, "decode")
    assert r.step_model == "per_kernel" and r.decode_bound == "compute"
    assert "Decode: 11.4 ms, compute-bound" in out["title"]["html"]
    launches = [ms for row, ms in zip(out["bars"]["data"]["row"], out["bars"]["data"]["ms"], strict=True) if row == "launches"]
    assert launches == [pytest.approx(r.decode_overhead_s * 1e3)] and r.decode_overhead_s < 0.3e-3
