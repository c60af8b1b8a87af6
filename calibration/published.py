"""Profiles built from published measurements, until measured ones replace them.

    python -m calibration.published          # rewrite sim/data/profiles/{a100,h100,h200}-published.json
    python -m calibration.published --check  # exit 1 if the committed files differ from this code

Every figure below is a measurement someone published, with its citation; the efficiencies are
those figures divided by the datasheet peaks in sim/data/gpus.json. The profiles are schema v2, so
sim times a step with its per-kernel model (sim/roofline.py): each kernel takes the longer of its
bytes over bandwidth and its FLOPs over the achievable rate, plus a cost per kernel. What no kernel
benchmark publishes in a usable form -- the fraction of those rates serving kernels keep inside a
real engine, the cost per kernel in a CUDA-graph replay, a small all-reduce's latency -- is SERVING:
fitted once over the public serving records of tests/validation (tests/validation/fit.py) and
capped by the published kernel figure it refines. The profile's provenance says which is which.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass

from .catalog import PROFILE_DIR, datasheet
from .fit import as_efficiency, round_sig
from .profile import dumps

ALLREDUCE_RANKS = 8

# Serving constants of the per-kernel step model (schema v2), fitted over the public serving
# benchmarks in tests/validation (tests/validation/fit.py: one coarse grid, the median error over all
# records at once, never one record). They are what real engines reach inside a decode step, not
# what a STREAM-style kernel reaches; each is capped by the published figure above it.
SERVING = {
    "bandwidth_efficiency": 0.90,  # decode weight GEMMs (GEMV-like) over datasheet HBM bandwidth; <= hbm_read
    "kv_bandwidth_efficiency": 0.90,  # paged decode attention over datasheet HBM bandwidth; <= hbm_read
    "gemm_serving_fraction": 0.55,  # serving GEMMs (M of tens to thousands, cuBLAS heuristics) / best-shape GEMM
    "prefill_attention_efficiency": 0.50,  # FlashAttention-2's low end on A100 (50-73%) [fa2]; fitted 0.50 of 0.35/0.50
    "kernel_overhead_s": 0.0,  # per kernel inside a CUDA-graph replay: the fit chose 0 of 0/1.5 us (cpu_step_s absorbs it)
    "allreduce_latency_s": 20e-6,  # one small all-reduce (engines' one-shot kernels); NCCL 1 KiB on 8 GPUs: 26-45 us
    # Routed experts sliced by tp reach w / (w + 128) of a dense GEMM's rates, w the slice's width (Machine.moe_gemm_efficiency),
    # and each small kernel an MoE or MLA layer adds to a dense layer's (Machine.extra_kernels_per_step) takes 12 us:
    # tests/validation/fit.py --families chose both together, with kernel_overhead_s, allreduce_latency_s and the
    # engines' cpu_step_s, over every family's records (widths 0/128/192/256/384; 0-16 us)
    "moe_half_efficiency_width": 128.0,
    "latency_kernel_s": 12e-6,
}

CITATIONS = {
    "kvlab-serving-fit": (
        "kvlab tests/validation/fit.py over the public serving records of tests/validation (vLLM, SGLang, "
        "TensorRT-LLM and NIM benchmark results; each record cites its source in tests/validation/SOURCES.md): "
        "grid search minimising median |ITL error| + median |tok/s error| + median |TTFT error| over all records "
        "at once; docs/sim.md gives the grid and the result"
    ),
    "fa2": (
        "T. Dao, FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning (2023), "
        "abstract: 'reaching 50-73% of the theoretical maximum FLOPs/s on A100'. https://arxiv.org/abs/2307.08691"
    ),
    "mamf": (
        "S. Bekman, Machine Learning Engineering Open Book, compute/accelerator/README.md, 'Maximum "
        "Achievable Matmul FLOPS comparison table' (matmul on random data, mean of 100 iterations after 50 "
        "warm-up, best shape found by mamf-finder.py): BF16 A100 SXM 271.2, H100 SXM 794.5 TFLOPS ('H200 is "
        "the same'); FP8 H100 SXM 1402.6, H200 SXM 1453.4 TFLOPS. "
        "https://github.com/stas00/ml-engineering/blob/master/compute/accelerator/README.md"
    ),
    "azure-a100": (
        "AI benchmarking guide, Azure ND A100 v4 results (8x NVIDIA A100-SXM4-80GB, CUDA 12.5, driver "
        "550.90.07): 'HBM Bandwidth' table (Copy 1.61, Dot 1.75 TB/s) and 'NCCL Bandwidth' table (all-reduce "
        "bus bandwidth, in place: 1K 0.04 GB/s, 8G 231.58 GB/s). https://github.com/samuel-bohman/"
        "AI-benchmarking-guide/blob/26d18e9458bb07bd43e3eda7aec8653aa592f2ec/Azure_Results/ND_A100_v4_results.md"
    ),
    "azure-h100": (
        "AI benchmarking guide, Azure ND H100 v5 results (8x NVIDIA H100 80GB HBM3, CUDA 12.6, driver "
        "560.35.03): 'HBM Bandwidth' table (Copy 2.90, Dot 3.18 TB/s) and 'NCCL Bandwidth' table (all-reduce, "
        "NVLS algorithm, in place: 1K 0.07 GB/s, 8G 478.87 GB/s). https://github.com/samuel-bohman/"
        "AI-benchmarking-guide/blob/26d18e9458bb07bd43e3eda7aec8653aa592f2ec/Azure_Results/ND_H100_v5_results.md"
    ),
    "azure-h200": (
        "AI benchmarking guide, Azure ND H200 v5 results (8x NVIDIA H200 141GB, CUDA 12.6, driver 560.28.03): "
        "'HBM Bandwidth' table (Copy 4.01, Dot 4.48 TB/s) and 'NCCL Bandwidth' table (all-reduce, NVLS "
        "algorithm, in place: 1K 0.06 GB/s, 8G 479.98 GB/s). https://github.com/samuel-bohman/"
        "AI-benchmarking-guide/blob/0de7d01da6f8c360fc206ee292642e6782731e70/Azure_Results/ND_H200_v5_results.md"
    ),
    "gpu-benches-a100": (
        "D. Ernst, gpu-benches, cuda-stream/a100_80.txt: read-only 'read' kernel at 100% occupancy on an "
        "A100 80GB, 1769 GB/s. https://github.com/te42kyfo/gpu-benches/blob/"
        "cdcc732d189f02cb90cf3d04cd20ea8d2c5fbd3f/cuda-stream/a100_80.txt"
    ),
    "flashmla": (
        "DeepSeek FlashMLA README: the dense MLA decoding kernel reaches 'up to 3000 GB/s in memory-bound "
        "configuration' on H800 SXM5 (CUDA 12.8). The H800 SXM5 has the H100 SXM's 3.35 TB/s HBM3. "
        "https://github.com/deepseek-ai/FlashMLA"
    ),
    "issue-6": (
        "kvlab issue 6: an H200 observed on 2026-11-04 copying about 4.3 TB/s device to device and running an "
        "8192^3 BF16 GEMM on random data at 769-798 TFLOP/s."
    ),
    "nccl-tests-212": (
        "NVIDIA/nccl-tests issue 212, NCCL maintainer (2024-05-06): NVLink4 line rate 450 GB/s; NCCL's "
        "effective NVLink bandwidth about 370 GB/s (ring); NVLink SHARP all-reduce peak busBw about 480 GB/s "
        "on 8 H100. https://github.com/NVIDIA/nccl-tests/issues/212"
    ),
    "nccl-583": (
        "NVIDIA/nccl issue 583: all_reduce_perf on 2x A100-SXM4-40GB, 32 B all-reduce in 10.14 us. "
        "https://github.com/NVIDIA/nccl/issues/583"
    ),
}


@dataclass(frozen=True)
class Figure:
    """One published measurement: value in base units (bytes/s, FLOP/s), what it is, and its source."""

    value: float
    unit: str
    what: str
    citation: str


@dataclass(frozen=True)
class PublishedGPU:
    gpu: str
    title: str
    hbm_read: Figure  # -> bandwidth_efficiency
    bf16_gemm: Figure  # large-GEMM plateau -> top of compute_efficiency
    allreduce_busbw: Figure  # best -> interconnect_efficiency
    allreduce_busbw_1kib: Figure  # -> allreduce_latency_s
    fp8_gemm: Figure | None = None
    kv_read: Figure | None = None
    cross_checks: tuple[Figure, ...] = ()
    notes: tuple[str, ...] = ()


GB, TB, TFLOPS = 1e9, 1e12, 1e12

PUBLISHED = {
    "a100-80": PublishedGPU(
        gpu="a100-80",
        title="NVIDIA A100 SXM4 80GB",
        hbm_read=Figure(1.75 * TB, "B/s", "STREAM-style Dot (two read streams), A100-SXM4-80GB", "azure-a100"),
        bf16_gemm=Figure(271.2 * TFLOPS, "FLOP/s", "MAMF, BF16, A100 SXM, best shape 1024x10240x5120", "mamf"),
        allreduce_busbw=Figure(231.58 * GB, "B/s", "NCCL all-reduce busbw, 8 GiB, 8 GPUs", "azure-a100"),
        allreduce_busbw_1kib=Figure(0.04 * GB, "B/s", "NCCL all-reduce busbw, 1 KiB, 8 GPUs", "azure-a100"),
        cross_checks=(
            Figure(1.769 * TB, "B/s", "read-only kernel, full occupancy, A100 80GB", "gpu-benches-a100"),
            Figure(1.61 * TB, "B/s", "STREAM-style Copy, A100-SXM4-80GB (copy rate, not HBM traffic)", "azure-a100"),
            Figure(10.14e-6, "s", "32 B all-reduce on 2 A100-SXM4-40GB (fewer ranks: lower latency)", "nccl-583"),
        ),
        notes=("A100 has no fp8 tensor cores: no fp8_compute_efficiency.",
               "kv_bandwidth_efficiency: no published decode-attention bandwidth for A100 found; sim uses "
               "bandwidth_efficiency."),
    ),
    "h100-sxm": PublishedGPU(
        gpu="h100-sxm",
        title="NVIDIA H100 SXM5 80GB",
        hbm_read=Figure(3.18 * TB, "B/s", "STREAM-style Dot (two read streams), H100 80GB HBM3", "azure-h100"),
        bf16_gemm=Figure(794.5 * TFLOPS, "FLOP/s", "MAMF, BF16, H100 SXM, best shape 2048x2048x13312", "mamf"),
        fp8_gemm=Figure(1402.6 * TFLOPS, "FLOP/s", "MAMF, FP8 e4m3, H100 SXM, best shape 1024x9216x14336", "mamf"),
        kv_read=Figure(3000 * GB, "B/s", "FlashMLA dense decoding, memory-bound, H800 SXM5", "flashmla"),
        allreduce_busbw=Figure(478.87 * GB, "B/s", "NCCL all-reduce busbw (NVLS), 8 GiB, 8 GPUs", "azure-h100"),
        allreduce_busbw_1kib=Figure(0.07 * GB, "B/s", "NCCL all-reduce busbw, 1 KiB, 8 GPUs", "azure-h100"),
        cross_checks=(
            Figure(2.90 * TB, "B/s", "STREAM-style Copy, H100 80GB HBM3 (copy rate, not HBM traffic)", "azure-h100"),
            Figure(370 * GB, "B/s", "NCCL effective NVLink bandwidth without NVLS (ring)", "nccl-tests-212"),
        ),
        notes=("interconnect_efficiency: NVLS bus bandwidth (478.87 GB/s) exceeds the 450 GB/s line rate because "
               "NVLink SHARP reduces inside the switch; the schema caps efficiency at 1.0. Without NVLS (ring) "
               "NCCL reaches about 370 GB/s, 0.82 of the line rate.",
               "kv_bandwidth_efficiency comes from an MLA kernel on an H800 (same HBM3 as the H100 SXM), not from "
               "a grouped-query paged-attention kernel."),
    ),
    "h200": PublishedGPU(
        gpu="h200",
        title="NVIDIA H200 SXM 141GB",
        hbm_read=Figure(4.48 * TB, "B/s", "STREAM-style Dot (two read streams), H200 141GB", "azure-h200"),
        bf16_gemm=Figure(783.5 * TFLOPS, "FLOP/s", "8192^3 BF16 GEMM on random data, midpoint of 769-798", "issue-6"),
        fp8_gemm=Figure(1453.4 * TFLOPS, "FLOP/s", "MAMF, FP8 e4m3, H200 SXM, best shape 1280x4096x12032", "mamf"),
        allreduce_busbw=Figure(479.98 * GB, "B/s", "NCCL all-reduce busbw (NVLS), 8 GiB, 8 GPUs", "azure-h200"),
        allreduce_busbw_1kib=Figure(0.06 * GB, "B/s", "NCCL all-reduce busbw, 1 KiB, 8 GPUs", "azure-h200"),
        cross_checks=(
            Figure(4.3 * TB, "B/s", "device-to-device copy observed on 2026-11-04", "issue-6"),
            Figure(4.01 * TB, "B/s", "STREAM-style Copy, H200 141GB (copy rate, not HBM traffic)", "azure-h200"),
            Figure(794.5 * TFLOPS, "FLOP/s", "MAMF BF16 H100 SXM, listed as the same for H200", "mamf"),
        ),
        notes=("interconnect_efficiency: as on the H100, NVLS bus bandwidth exceeds the line rate (see the "
               "h100-published notes).",
               "kv_bandwidth_efficiency: no published decode-attention bandwidth for H200 found; sim uses "
               "bandwidth_efficiency."),
    ),
}


def allreduce_latency_s(busbw_bytes_per_s: float, size_bytes: int = 1024, ranks: int = ALLREDUCE_RANKS) -> float:
    """Time of one all-reduce from its bus bandwidth: algbw = busbw x n / (2 (n - 1)), t = size / algbw.
    Worked example: 0.07 GB/s busbw at 1 KiB on 8 GPUs -> algbw 0.04 GB/s -> 25.6 us."""
    algbw = busbw_bytes_per_s * ranks / (2 * (ranks - 1))
    return size_bytes / algbw


def _figure_entry(key: str, fig: Figure) -> dict:
    return {"figure": key, "value": fig.value, "unit": fig.unit, "what": fig.what, "citation": fig.citation}


def build(gpu_id: str) -> dict:
    """The published profile of `gpu_id` as a dict (deterministic: same inputs, same dict)."""
    src = PUBLISHED[gpu_id]
    sheet = datasheet(gpu_id)
    notes: list[str] = []

    hbm_eff, cap = as_efficiency(src.hbm_read.value, sheet.hbm_bandwidth_bytes_per_s)
    notes += [f"bandwidth_efficiency: {cap}"] if cap else []
    bw_eff = min(SERVING["bandwidth_efficiency"], hbm_eff)
    profile: dict = {
        "schema_version": 2,  # v2: sim times a step as the sum of its kernels (per-kernel step model)
        "name": build_name(gpu_id),
        "gpu": gpu_id,
        "description": (f"{src.title}: published kernel figures (cited in provenance) with the serving constants of "
                        f"kvlab's per-kernel step model fitted over public serving benchmarks. Replace with a measured "
                        f"profile when one exists."),
        "bandwidth_efficiency": bw_eff,
    }
    kv_eff = hbm_eff
    if src.kv_read is not None:
        kv_eff, _ = as_efficiency(src.kv_read.value, sheet.hbm_bandwidth_bytes_per_s)
    profile["kv_bandwidth_efficiency"] = min(SERVING["kv_bandwidth_efficiency"], kv_eff)
    fraction = SERVING["gemm_serving_fraction"]
    bf16_plateau, _ = as_efficiency(src.bf16_gemm.value, sheet.bf16_dense_flops)
    profile["compute_efficiency"] = [[1, round_sig(bf16_plateau * fraction, 4)]]
    if src.fp8_gemm is not None and sheet.fp8_dense_flops:
        fp8_plateau, _ = as_efficiency(src.fp8_gemm.value, sheet.fp8_dense_flops)
        profile["fp8_compute_efficiency"] = [[1, round_sig(fp8_plateau * fraction, 4)]]
    profile["prefill_attention_efficiency"] = SERVING["prefill_attention_efficiency"]
    profile["step_overhead_s"] = 0.0
    profile["kernel_overhead_s"] = SERVING["kernel_overhead_s"]
    profile["moe_half_efficiency_width"] = SERVING["moe_half_efficiency_width"]
    profile["latency_kernel_s"] = SERVING["latency_kernel_s"]
    profile["interconnect_efficiency"], cap = as_efficiency(src.allreduce_busbw.value, sheet.interconnect_bytes_per_s)
    notes += [f"interconnect_efficiency: {cap}"] if cap else []
    profile["allreduce_latency_s"] = SERVING["allreduce_latency_s"]
    nccl_latency_s = round_sig(allreduce_latency_s(src.allreduce_busbw_1kib.value), 3)
    notes.append(f"allreduce_latency_s: NCCL's 1 KiB all-reduce on {ALLREDUCE_RANKS} GPUs takes {nccl_latency_s * 1e6:.1f} us "
                 f"(cross-check); serving engines use their own one-shot kernels for small messages, and the fit over "
                 f"serving records chose {SERVING['allreduce_latency_s'] * 1e6:g} us")

    figures = {"hbm_read": src.hbm_read, "bf16_gemm": src.bf16_gemm, "allreduce_busbw": src.allreduce_busbw,
               "allreduce_busbw_1kib": src.allreduce_busbw_1kib}
    if src.fp8_gemm is not None:
        figures["fp8_gemm"] = src.fp8_gemm
    if src.kv_read is not None:
        figures["kv_read"] = src.kv_read
    used = sorted({f.citation for f in list(figures.values()) + list(src.cross_checks)} | {"kvlab-serving-fit", "fa2"})
    derivation = {
        "bandwidth_efficiency": (f"min(fitted serving fraction {SERVING['bandwidth_efficiency']:g} [kvlab-serving-fit], "
                                 f"hbm_read / datasheet HBM bandwidth {sheet.hbm_bandwidth_bytes_per_s / TB:g} TB/s)"),
        "kv_bandwidth_efficiency": (f"min(fitted serving fraction {SERVING['kv_bandwidth_efficiency']:g} [kvlab-serving-fit], "
                                    f"kv_read (else hbm_read) / datasheet HBM bandwidth)"),
        "compute_efficiency": (f"bf16_gemm / datasheet bf16 peak {sheet.bf16_dense_flops / TFLOPS:g} TFLOP/s (the best "
                               f"GEMM shape) x {fraction:g}, the fraction serving GEMMs keep [kvlab-serving-fit]; flat in M "
                               f"because the per-kernel step model takes each GEMM's memory side separately"),
        "prefill_attention_efficiency": "fraction of the bf16 dense peak for attention FLOPs [fa2, kvlab-serving-fit]",
        "step_overhead_s": "0 s: the per-step fixed cost is the engine's (sim/data/engine_rules.json cpu_step_s) plus kernels",
        "kernel_overhead_s": "cost per kernel in a CUDA-graph replay [kvlab-serving-fit]",
        "interconnect_efficiency": (f"allreduce_busbw / datasheet interconnect {sheet.interconnect_bytes_per_s / GB:g} "
                                    f"GB/s per direction"),
        "allreduce_latency_s": "fitted over the tp > 1 serving records [kvlab-serving-fit]; NCCL's figure in notes",
        "moe_half_efficiency_width": ("width of a routed expert's slice on a rank (intermediate size / tp) at which the fused "
                                      "expert GEMMs reach half a dense GEMM's bandwidth and rate; fitted over the MoE serving "
                                      "records [kvlab-serving-fit]"),
        "latency_kernel_s": ("time of each small kernel an MoE or MLA layer runs beyond a dense layer's (router top-k, block "
                             "alignment, expert sum, shared expert; MLA's norms, latent batched GEMMs, concat, combine); "
                             "fitted over the MoE and MLA serving records together with the dense ones [kvlab-serving-fit]"),
    }
    if "fp8_compute_efficiency" in profile:
        derivation["fp8_compute_efficiency"] = (f"fp8_gemm / datasheet fp8 peak {sheet.fp8_dense_flops / TFLOPS:g} "
                                                f"TFLOP/s x {fraction:g}")
    profile["provenance"] = {
        "kind": "published",
        "source": "published measurements; built by python -m calibration.published",
        "denominators": f"datasheet figures of {gpu_id} in sim/data/gpus.json",
        "citations": {key: CITATIONS[key] for key in used},
        "figures": {key: f"{fig.value:g} {fig.unit}: {fig.what} [{fig.citation}]" for key, fig in figures.items()},
        "derivation": derivation,
        "notes": list(src.notes) + notes,
    }
    profile["measurements"] = {
        "published_figures": [_figure_entry(k, f) for k, f in figures.items()],
        "cross_checks": [_figure_entry(f"cross_check_{i}", f) for i, f in enumerate(src.cross_checks)],
    }
    return profile


def build_name(gpu_id: str) -> str:
    """a100-80 -> a100-published, h100-sxm -> h100-published, h200 -> h200-published."""
    return f"{gpu_id.split('-')[0]}-published"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m calibration.published", description="Write the published profiles.")
    p.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    args = p.parse_args(argv)
    stale = []
    for gpu_id in PUBLISHED:
        profile = build(gpu_id)
        path = PROFILE_DIR / f"{profile['name']}.json"
        text = dumps(profile)
        if args.check:
            if not path.is_file() or json.loads(path.read_text()) != json.loads(text):
                stale.append(path.name)
        else:
            path.write_text(text)
            print(f"wrote {path}")
    if stale:
        print(f"out of date: {', '.join(stale)}; run python -m calibration.published", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
