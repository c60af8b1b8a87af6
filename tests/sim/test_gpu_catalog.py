"""The GPU catalog (sim/data/gpus.json), issue 35's "today's hardware" in particular: every figure
has a source, the peaks are dense and ordered, FP4 appears exactly where the silicon has FP4
tensor cores, and each new GPU gives the sim figures its datasheet implies."""

import json
import math

import pytest
from kvlab.calibration.catalog import datasheet
from kvlab.sim import Scenario, catalog, evaluate
from kvlab.sim import engine_defaults as ed
from kvlab.sim.catalog import DATA_DIR
from kvlab.sim.units import GIB, MIB

from kvlab.cli import main

ISSUE_35_GPUS = ("b300", "gb200", "gb300", "h20", "rtx-pro-6000", "mi325x", "mi355x")
FP4_GPUS = {"b200", "b300", "gb200", "gb300", "rtx-pro-6000", "mi355x"}  # FP4 tensor cores: Blackwell, CDNA 4
NUMERIC = ("memory_bytes", "memory_reported_bytes", "hbm_bandwidth_bytes_per_s", "bf16_dense_flops", "fp8_dense_flops",
           "fp4_dense_flops", "interconnect_bytes_per_s", "interconnect_gpus", "host_link_bytes_per_s")

RAW = {g["id"]: g for g in json.loads((DATA_DIR / "gpus.json").read_text())["gpus"]}


def run(**kw):
    r = evaluate(Scenario(**kw))
    assert r.ok, r.errors
    return r


# ----- the catalog as data --------------------------------------------------------------------

def test_issue_35_gpus_are_in_the_catalog_and_the_cli_help(capsys, monkeypatch):
    assert set(ISSUE_35_GPUS) <= set(catalog.gpu_ids())
    assert len(catalog.gpu_ids()) == len(set(catalog.gpu_ids()))
    monkeypatch.setenv("COLUMNS", "1000")  # argparse would otherwise wrap inside "rtx-pro-6000"
    assert main(["--help"]) == 0
    gpu_line = next(line for line in capsys.readouterr().out.splitlines() if line.lstrip().startswith("--gpu GPU"))
    listed = gpu_line.split("(", 1)[1].split(";")[0].split(", ")
    assert listed == catalog.gpu_ids()


def test_names_are_unique_and_say_what_part_they_are():
    names = [catalog.gpu(g).name for g in catalog.gpu_ids()]
    assert len(set(names)) == len(names)  # the app's GPU list is keyed by name
    assert "NVL72" in catalog.gpu("gb200").name and "72-GPU NVLink domain" in catalog.gpu("gb300").name
    assert "Server Edition" in catalog.gpu("rtx-pro-6000").name


@pytest.mark.parametrize("gpu_id", list(RAW))
def test_every_numeric_field_has_a_source(gpu_id):
    entry = RAW[gpu_id]
    for field in NUMERIC:
        if field in entry:
            assert isinstance(entry["sources"].get(field), str) and len(entry["sources"][field]) > 20, (gpu_id, field)
    assert set(entry["sources"]) <= set(NUMERIC), set(entry["sources"]) - set(NUMERIC)


@pytest.mark.parametrize("gpu_id", list(RAW))
def test_memory_convention_is_named_and_followed(gpu_id):
    entry = RAW[gpu_id]
    source = entry["sources"]["memory_bytes"]
    if source.startswith("GiB convention"):
        assert entry["memory_bytes"] % 2**30 == 0
        assert entry["memory_reported_bytes"] < entry["memory_bytes"]  # the runtime sees less than the board
    else:
        assert source.startswith("GB convention (10**9)"), source[:40]
        assert entry["memory_bytes"] % 10**9 == 0
        assert entry["memory_reported_bytes"] > entry["memory_bytes"]  # the vendor's GB behaves like GiB
    assert entry["memory_reported_bytes"] > 0.9 * entry["memory_bytes"]


@pytest.mark.parametrize("gpu_id", list(RAW))
def test_fp4_exactly_where_the_silicon_has_it_and_peaks_are_ordered(gpu_id):
    g = catalog.gpu(gpu_id)
    assert ("fp4_dense_flops" in RAW[gpu_id]) == (gpu_id in FP4_GPUS)
    if gpu_id in FP4_GPUS:
        assert g.fp4_dense_flops >= g.fp8_dense_flops >= g.bf16_dense_flops
    elif g.fp8_dense_flops is not None:
        assert g.fp8_dense_flops >= g.bf16_dense_flops


@pytest.mark.parametrize(("gpu_id", "bf16_tflops", "fp8_tflops", "fp4_tflops"), [
    ("h20", 148, 296, None),  # already dense on NVIDIA's H20 sheet
    ("b300", 2250, 4500, 13500),  # HGX B300: 144 | 108 PFLOPS FP4 per 8 GPUs
    ("gb200", 2500, 5000, 10000),  # GB200 NVL72: 1,440 | 720 PFLOPS NVFP4 per 72 GPUs
    ("gb300", 2500, 5000, 15000),  # GB300 NVL72: 1,080 PFLOPS FP4 without sparsity per 72 GPUs
    ("rtx-pro-6000", 500, 1000, 2000),  # 1 | 2 | 4 PFLOPS on NVIDIA's page, read as sparse
    ("mi325x", 1307.4, 2614.9, None),  # AMD data sheet, dense column (MI300X's compute)
    ("mi355x", 2516.6, 5033.2, 10066.3),  # AMD data sheet, dense column; MXFP4 has no sparse figure
])
def test_dense_peaks_are_the_datasheet_figures(gpu_id, bf16_tflops, fp8_tflops, fp4_tflops):
    g = catalog.gpu(gpu_id)
    assert g.bf16_dense_flops == bf16_tflops * 1e12
    assert g.fp8_dense_flops == fp8_tflops * 1e12
    assert g.fp4_dense_flops == (None if fp4_tflops is None else fp4_tflops * 1e12)
    assert g.fp8_dense_flops == pytest.approx(2 * g.bf16_dense_flops, rel=1e-4)  # every one of them says 2x


def test_blackwell_ultra_fp4_is_one_and_a_half_blackwell():
    # NVIDIA: dense FP4 1.5x Blackwell's; BF16 and FP8 unchanged within a clock bin; FP4 sparsity only 1.33x
    b200, b300, gb200, gb300 = (catalog.gpu(g) for g in ("b200", "b300", "gb200", "gb300"))
    assert b300.fp4_dense_flops == 1.5 * b200.fp4_dense_flops and gb300.fp4_dense_flops == 1.5 * gb200.fp4_dense_flops
    assert (b300.bf16_dense_flops, b300.fp8_dense_flops) == (b200.bf16_dense_flops, b200.fp8_dense_flops)
    assert (gb300.bf16_dense_flops, gb300.fp8_dense_flops) == (gb200.bf16_dense_flops, gb200.fp8_dense_flops)
    assert b300.fp4_dense_flops == 3 * b300.fp8_dense_flops and gb200.fp4_dense_flops == 2 * gb200.fp8_dense_flops


@pytest.mark.parametrize(("gpu_id", "memory", "reported", "bandwidth", "link", "host"), [
    ("h20", 96 * GIB, 97285 * MIB, 4.0e12, 450e9, 64e9),
    ("b300", 270e9, 287_428_771_840, 7.7e12, 900e9, 64e9),  # 267.69 GiB, PyTorch's device total
    ("gb200", 186e9, 188733 * MIB, 8e12, 900e9, 225e9),
    ("gb300", 279e9, 283136 * MIB, 8e12, 900e9, 225e9),
    ("rtx-pro-6000", 96 * GIB, 97250 * MIB, 1597e9, 64e9, 64e9),
    ("mi325x", 256e9, 262128 * MIB, 6e12, 448e9, 64e9),
    ("mi355x", 288e9, 309_220_868_096, 8e12, 537.6e9, 64e9),  # 294,896 MiB, ROCm's total
])
def test_memory_and_links(gpu_id, memory, reported, bandwidth, link, host):
    g = catalog.gpu(gpu_id)
    assert g.memory_bytes == memory and g.memory_reported_bytes == reported
    assert (g.hbm_bandwidth_bytes_per_s, g.interconnect_bytes_per_s, g.host_link_bytes_per_s) == (bandwidth, link, host)
    assert datasheet(gpu_id).hbm_bandwidth_bytes_per_s == bandwidth  # the calibration suite reads the same file


# ----- what the sim makes of them -----------------------------------------------------------------

@pytest.mark.parametrize(("gpu_id", "sequences"), [
    ("h100-sxm", 93), ("h20", 117), ("rtx-pro-6000", 117), ("b200", 225), ("gb200", 233), ("b300", 351),
    ("gb300", 364), ("mi300x", 242), ("mi325x", 331), ("mi355x", 376),
])
def test_qwen3_8b_fits_and_the_pool_follows_the_datasheet_memory(gpu_id, sequences):
    """Textbook accounting: pool = 90% of memory_bytes - weights - activation reserve, and a sequence
    of 4,096 + 256 tokens holds 4,352 x 144 KiB of KV."""
    r = run(model="qwen3-8b", gpu=gpu_id)
    pool = 0.9 * catalog.gpu(gpu_id).memory_bytes - r.weight_bytes - r.activation_reserve_bytes
    assert r.weight_bytes / GIB == pytest.approx(15.26, abs=0.01) and r.kv_pool_bytes == pytest.approx(pool, rel=1e-12)
    assert r.max_sequences == sequences == math.floor(pool / (4352 * 147_456))


def test_mi355x_pool_grows_with_memory_over_mi300x():
    mi300x, mi355x = run(model="qwen3-8b", gpu="mi300x"), run(model="qwen3-8b", gpu="mi355x")
    assert mi355x.kv_pool_bytes - mi300x.kv_pool_bytes == pytest.approx(0.9 * (288e9 - 192e9), rel=1e-12)
    assert mi355x.kv_pool_bytes / GIB == pytest.approx(225.10, abs=0.01)


def test_decode_reads_weights_at_the_datasheet_bandwidth():
    # Textbook profile: 80% of the datasheet bandwidth, the same on every GPU, so the ratios are the datasheets'
    read = {g: run(model="qwen3-8b", gpu=g).decode_weight_read_s for g in ("h100-sxm", "h20", "rtx-pro-6000", "mi325x")}
    assert read["h100-sxm"] / read["h20"] == pytest.approx(4.0 / 3.35, rel=1e-12)  # H20 decodes faster than H100
    assert read["h100-sxm"] / read["rtx-pro-6000"] == pytest.approx(1.597 / 3.35, rel=1e-12)
    assert read["h100-sxm"] / read["mi325x"] == pytest.approx(6.0 / 3.35, rel=1e-12)


def test_h20_prefill_runs_at_its_throttled_bf16_peak():
    h100, h20 = (run(model="qwen3-8b", gpu=g, prompt_tokens=4096) for g in ("h100-sxm", "h20"))
    assert h20.prefill_bound == "compute" and h20.peak_flops == 148e12
    assert h20.prefill_compute_s / h100.prefill_compute_s == pytest.approx(989.4 / 148, rel=1e-12)  # 6.7x slower


def test_mi325x_computes_like_mi300x():
    mi300x, mi325x = (run(model="qwen3-8b", gpu=g, prompt_tokens=4096) for g in ("mi300x", "mi325x"))
    assert mi325x.prefill_compute_s == mi300x.prefill_compute_s and mi325x.peak_flops == 1307.4e12


@pytest.mark.parametrize(("gpu_id", "dtype", "peak"), [
    ("b300", "nvfp4", 13.5e15), ("gb200", "nvfp4", 10e15), ("gb300", "nvfp4", 15e15),
    ("rtx-pro-6000", "nvfp4", 2e15), ("mi355x", "mxfp4", 10066.3e12),
    ("h20", "nvfp4", 148e12), ("mi325x", "mxfp4", 1307.4e12),  # no FP4 tensor cores: FP4 is storage only
])
def test_fp4_weights_multiply_at_the_fp4_peak_where_there_is_one(gpu_id, dtype, peak):
    r = run(model="qwen3-32b", gpu=gpu_id, weight_dtype=dtype, prompt_tokens=8192)
    assert r.peak_flops == peak and r.prefill_bound == "compute"


def test_gb300_prefill_beats_gb200_by_the_fp4_ratio():
    gb200, gb300 = (run(model="qwen3-32b", gpu=g, weight_dtype="nvfp4", prompt_tokens=8192) for g in ("gb200", "gb300"))
    assert gb200.prefill_compute_s / gb300.prefill_compute_s == pytest.approx(1.5, rel=1e-12)


@pytest.mark.parametrize("gpu_id", ISSUE_35_GPUS)
def test_engine_defaults_on_the_new_gpus(gpu_id):
    """vLLM: every new GPU reports >= 70 GiB and none is an A100, so `vllm serve` takes the large
    defaults. SGLang: H20 and RTX PRO 6000 (about 95 GiB) sit in the < 160 GiB tier its source
    labels "H20, H200"; the rest in its largest tier (B200, MI300)."""
    g = catalog.gpu(gpu_id)
    assert ed.vllm_batch_defaults(g) == (8192, 1024)
    expected = (8192, 256) if gpu_id in ("h20", "rtx-pro-6000") else (16384, 512)
    assert ed.sglang_tier(ed.sglang_gpu_memory_mib(g), 1) == expected
    r = run(engine="vllm", gpu=gpu_id, model="qwen3-0.6b", max_model_len=8192)
    assert (r.effective_max_num_batched_tokens, r.effective_max_num_seqs) == (8192, 1024)


# ----- bridged PCIe cards (issue 36) ----------------------------------------------------------

@pytest.mark.parametrize("gpu_id", ["a100-pcie", "h100-pcie"])
def test_a_bridged_pair_all_reduces_over_nvlink_and_a_larger_group_over_pcie(gpu_id):
    g = catalog.gpu(gpu_id)
    assert g.interconnect_gpus == 2
    assert g.link_bytes_per_s(2) == g.interconnect_bytes_per_s
    assert g.link_bytes_per_s(4) == g.link_bytes_per_s(8) == g.host_link_bytes_per_s
    # An HGX board's NVLink reaches all eight GPUs.
    assert catalog.gpu("h100-sxm").link_bytes_per_s(8) == catalog.gpu("h100-sxm").interconnect_bytes_per_s


def test_tp4_on_pcie_cards_pays_the_pcie_all_reduce():
    """Llama-3.1-70B at tp 4: the A100 PCIe's all-reduces run at 32 GB/s, the SXM part's at 300 GB/s,
    so the PCIe decode step carries the longer all-reduce time."""
    kw = dict(model="llama-3.1-70b", tp=4, prompt_tokens=1024, output_tokens=128, concurrency=64, profile="a100-published")
    pcie = run(gpu="a100-pcie", **kw).decode_allreduce_s
    sxm = run(gpu="a100-80", **kw).decode_allreduce_s
    assert pcie > 2 * sxm
