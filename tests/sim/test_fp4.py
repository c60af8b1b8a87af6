"""FP4 weights (issue 35): NVFP4 and MXFP4 cost their 4-bit values plus their block scales, and run at
the FP4 peak only on a GPU that has FP4 tensor cores; elsewhere only the bytes shrink."""

import pytest
from kvlab.sim import Scenario, catalog, evaluate
from kvlab.sim.units import DTYPE_BYTES, GIB

from kvlab.cli import main


def test_bytes_per_parameter_count_the_scales():
    assert DTYPE_BYTES["nvfp4"] == 0.5 + 1 / 16  # an FP8 scale per 16 values
    assert DTYPE_BYTES["mxfp4"] == 0.5 + 1 / 32  # an E8M0 scale per 32 values
    assert all(0.5 <= DTYPE_BYTES[d] <= 0.65 for d in ("nvfp4", "mxfp4"))  # issue 35's done-when


def test_weights_shrink_by_the_format_and_the_pool_grows():
    bf16 = evaluate(Scenario(model="qwen3-32b", gpu="b200"))
    fp4 = evaluate(Scenario(model="qwen3-32b", gpu="b200", weight_dtype="nvfp4"))
    assert fp4.weight_bytes == pytest.approx(bf16.weight_bytes * 0.5625 / 2, rel=1e-9)  # textbook: every weight in FP4
    assert fp4.weight_bytes / GIB == pytest.approx(17.16, abs=0.01)
    assert fp4.max_sequences > bf16.max_sequences


def test_fp4_tensor_cores_set_the_peak_where_the_gpu_has_them():
    b200 = catalog.gpu("b200")
    assert b200.fp4_dense_flops == 2 * b200.fp8_dense_flops == 9e15  # HGX B200: 9 PFLOPS dense FP4
    on_b200 = evaluate(Scenario(model="qwen3-32b", gpu="b200", weight_dtype="nvfp4", prompt_tokens=8192))
    bf16_b200 = evaluate(Scenario(model="qwen3-32b", gpu="b200", prompt_tokens=8192))
    assert on_b200.peak_flops == 9e15
    assert on_b200.prefill_bound == "compute" and on_b200.ttft_s < bf16_b200.ttft_s / 3  # 4x the BF16 peak
    # Hopper has no FP4 tensor cores: FP4 is storage there, the GEMMs run at the BF16 peak.
    on_h100 = evaluate(Scenario(model="qwen3-32b", gpu="h100-sxm", weight_dtype="mxfp4", prompt_tokens=8192))
    bf16_h100 = evaluate(Scenario(model="qwen3-32b", gpu="h100-sxm", prompt_tokens=8192))
    assert catalog.gpu("h100-sxm").fp4_dense_flops is None
    assert on_h100.peak_flops == bf16_h100.peak_flops and on_h100.ttft_s == pytest.approx(bf16_h100.ttft_s, rel=1e-9)


def test_the_cli_takes_fp4(capsys):
    assert main(["--model", "qwen3-32b", "--gpu", "b200", "--weight-dtype", "nvfp4"]) == 0
    out = capsys.readouterr().out
    assert "model weights take 17.16 GiB" in out and "of 9,000 TFLOP/s in the prefill" in out
    assert main(["--weight-dtype", "fp4"]) == 2
    assert "nvfp4" in capsys.readouterr().err
