"""Profiles built from published measurements, until measured ones replace them.

    python -m calibration.published          # rewrite sim/data/profiles/*-published.json
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
    # per kernel inside a CUDA-graph replay: fit.py --families chose 2 of 0/2/4 us (the measured h200 profile: 0.68 us)
    "kernel_overhead_s": 2e-6,
    # one small all-reduce on NVLink (engines' one-shot kernels): fit.py --families chose 10 of 10/20/30 us;
    # NCCL 1 KiB on 8 GPUs: 26-45 us. PCIe profiles take NCCL's measured figure instead (PCIE_ALLREDUCE).
    "allreduce_latency_s": 10e-6,
    # Routed experts sliced by tp reach w / (w + 128) of a dense GEMM's rates, w the slice's width (Machine.moe_gemm_efficiency),
    # and each small kernel an MoE or MLA layer adds to a dense layer's (Machine.extra_kernels_per_step) takes 8 us more:
    # tests/validation/fit.py --families chose both together, with kernel_overhead_s, allreduce_latency_s and the
    # engines' cpu_step_s, over every family's records (widths 0/128/192/256/384; 0-16 us)
    "moe_half_efficiency_width": 128.0,
    "latency_kernel_s": 8e-6,
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
        "warm-up, best shape found by mamf-finder.py): BF16 A100 SXM 271.2, A100 PCIe 252.9, H100 SXM 794.5 "
        "TFLOPS ('H200 is the same'); FP8 H100 SXM 1402.6, H200 SXM 1453.4 TFLOPS. "
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
    "gpu-benches-h100-pcie": (
        "D. Ernst, gpu-benches README, gpu-stream results 'from a NVIDIA-H100-PCIe / CUDA 11.7': read kernel at "
        "100% occupancy 1942 GB/s (init 2016, scale 1704, triad 1832). https://github.com/te42kyfo/gpu-benches/blob/"
        "master/README.md"
    ),
    "gpu-benches-l40": (
        "D. Ernst, gpu-benches, gpu-stream/l40.txt: NVIDIA L40 (the L40S's AD102 with the same 384-bit GDDR6 at "
        "864 GB/s), full occupancy: init 846, read 844, scale 770 GB/s. https://github.com/te42kyfo/gpu-benches/blob/"
        "master/gpu-stream/l40.txt"
    ),
    "torch-perf-db": (
        "zzc0721/torch-performance-test-data: torch.mm on square BF16 matrices, best over 1024-10240: NVIDIA L40S "
        "269.15 TFLOPS (database.md); H100 PCIe 495.93 at 4096^3 (issue 95, torch 2.9.0+cu128, bare metal); "
        "A100-PCIE-40GB 234.14 (issue 108); L4 59.40 at 8192^3, 70.89 at 2048^3 before its 72 W power limit "
        "throttles (issue 120). https://github.com/zzc0721/torch-performance-test-data"
    ),
    "pytorch-ao-3342": (
        "pytorch/ao PR 3342, benchmark on 'NVIDIA H100 PCIe' (PyTorch 2.10 nightly, CUDA 12.9), M=16640 N=5120 "
        "K=8192: torch BF16 mm 432.997 TFLOP/s, torch._scaled_mm FP8 with 1x128 x 128x1 block scales 580.38 "
        "TFLOP/s. https://github.com/pytorch/ao/pull/3342"
    ),
    "sglang-6756": (
        "sgl-project/sglang PR 6756, bench_fp8_gemm.py on an L40S, Llama-3.1-8B N=6144 K=4096, M=2048: SGLang's "
        "CUTLASS row-wise-scaled FP8 GEMM 1.44857e6 in a column labelled GB/s that the script computes as "
        "(2MNK + MN) x 4 bytes (an fp32 element size) / s: 362 TFLOP/s (kvlab's reading of the script; 1.45 "
        "PFLOP/s would exceed the card's 733 TFLOP/s FP8 peak). https://github.com/sgl-project/sglang/pull/6756"
    ),
    "rtx6kpro-pcie": (
        "voipmonitor/rtx6kpro, hardware/pcie-bandwidth.md: 8 x RTX PRO 6000 Blackwell on PCIe Gen5 switches, no "
        "NVLink: nccl-tests all-reduce bus bandwidth 41.1 GB/s (NCCL_MIN_NCHANNELS=8, 8M-2G sweep; 37.6 on a "
        "dual-socket direct-attach box); NCCL small all-reduce 24.1 us at 1 KB (7.5 us for a custom one-shot "
        "kernel). https://github.com/voipmonitor/rtx6kpro/blob/master/hardware/pcie-bandwidth.md"
    ),
    "nccl-1161": (
        "NVIDIA/nccl issue 1161: all_reduce_perf on 2 x H100 PCIe joined by an NVLink bridge, 4 GB in place: "
        "busbw 116.26 GB/s. https://github.com/NVIDIA/nccl/issues/1161"
    ),
    "nccl-1530": (
        "NVIDIA/nccl issue 1530: all_reduce_perf on 8 x RTX 4090 over PCIe Gen4, 8-byte message 42.14 us out "
        "of place (no CUDA graph). https://github.com/NVIDIA/nccl/issues/1530"
    ),
    "nccl-841": (
        "NVIDIA/nccl issue 841: 8 x A100 80GB PCIe (AMD EPYC 7543, after an IOMMU BIOS fix), all_reduce_perf "
        "-b 8 -e 128M 'average bandwidth of 8 to 21' GB/s: the sweep's average, not its peak. "
        "https://github.com/NVIDIA/nccl/issues/841"
    ),
    "chsasank-bench": (
        "chsasank/device-benchmarks README: NVIDIA L4 BF16 matmul 66 TFLOPS and torch copy_ 235 GB/s (read and "
        "write bytes counted, tensors up to about 380 MB); H100-PCIe 80GB BF16 449 TFLOPS, copy 1630 GB/s. "
        "https://github.com/chsasank/device-benchmarks/blob/main/README.md"
    ),
    "aiconfigurator-l40s": (
        "ai-dynamo/aiconfigurator, src/aiconfigurator/systems/l40s.yaml: 'mem_bw_empirical_scaling_factor: 0.8 "
        "# some nonofficial correction based on observations'. https://github.com/ai-dynamo/aiconfigurator/blob/"
        "main/src/aiconfigurator/systems/l40s.yaml"
    ),
    "vllm-custom-ar": (
        "vLLM, vllm/distributed/device_communicators/custom_all_reduce.py: 'Custom allreduce is disabled because "
        "it's not supported on more than two PCIe-only GPUs': beyond two PCIe cards every all-reduce is NCCL's. "
        "https://github.com/vllm-project/vllm"
    ),
    "nccl-583": (
        "NVIDIA/nccl issue 583: all_reduce_perf on 2x A100-SXM4-40GB, 32 B all-reduce in 10.14 us. "
        "https://github.com/NVIDIA/nccl/issues/583"
    ),
    "mamf-2025": (
        "S. Bekman, Machine Learning Engineering Open Book, compute/accelerator/README.md at commit 744d01e, 'Maximum "
        "Achievable Matmul FLOPS comparison table': '| NVIDIA B200 SXM | 1745.0 | 2250 | 77.6% | 1792x16128x3072 | "
        "2.7.1+cu128 |' (BF16), '| NVIDIA B200 SXM | 3432.5 | 4500 | 76.3% | 15360x4096x3072 |' (FP8), '| AMD MI300X | "
        "668.4 | 1300 | 51.4% | 10240x15360x8192 | 2.5.1+6.3.42131 | PYTORCH_TUNABLEOP_ENABLED=1 |' (BF16). "
        "https://github.com/stas00/ml-engineering/blob/744d01e18b79512572f64a6bbd8b5f4a725203a7/compute/accelerator/README.md"
    ),
    "ml-eng-network": (
        "S. Bekman, Machine Learning Engineering Open Book, network/README.md at commit 744d01e: nccl-tests all_reduce_perf on "
        "8 x B200 (AWS p6-b200, NCCL 2.27.7): '| 8 | NVLS | 838.0GBps | 682.2GBps | 1.23x |' (8 GiB; NVLS, then Ring); "
        "all_reduce_bench.py on 8 x MI300X: '- 8 GPUs: 312.912GBps'. "
        "https://github.com/stas00/ml-engineering/blob/744d01e18b79512572f64a6bbd8b5f4a725203a7/network/README.md"
    ),
    "azure-gb200": (
        "AI benchmarking guide, Azure ND GB200 v6 results (4 GPUs of a GB200 VM): cuBLASLt FP8 16384^3 '2906.9' TFLOPS, "
        "FP4 '7627.6'; nccl-tests 1 KB all-reduce busbw '| 1K | 0.10 |' (Ring, 4 GPUs). "
        "https://github.com/Azure/AI-benchmarking-guide/blob/2a370be6de9586d365feed77e014a73f25198f4d/Azure_Results/ND_GB200_v6_results.md"
    ),
    "nccl-1940": (
        "NVIDIA/nccl issue 1940, 'Inter-GPU Latency on B200 Higher Than on Hopper': 'With an 8-byte workload, the best "
        "latency I can achieve is around **3 µs**' (8 x B200, NCCL 2.27 symmetric memory, tuned). "
        "https://github.com/NVIDIA/nccl/issues/1940"
    ),
    "flashinfer-1415": (
        "flashinfer-ai/flashinfer pull request 1415, '[b200] Benchmark results' of benchmarks/bench_trtllm_fmha.py: "
        "'batch_size=128, seq_len=4096, num_qo_heads=64, num_kv_heads=8, head_dim=64, page_size=16' ... '> memory "
        "bandwidth: 5830.86 GB/s' (trtllm-gen paged decode attention). https://github.com/flashinfer-ai/flashinfer/pull/1415"
    ),
    "azure-mi300x": (
        "AI benchmarking guide, Azure ND MI300X v5 results (8 x MI300X), as stored in a fork by the guide's author at "
        "commit 2b25b69: BabelStream 'HBM Bandwidth' '| Dot | 4.0 |' TB/s (Copy 4.15); hipBLASLt FP8 '| 8192 | 8192 | "
        "8192 | 1222.9 |' TFLOPS; rccl-tests all-reduce '| 8G | 316.82 |' and '| 1K | 0.04 |' GB/s busbw. "
        "https://github.com/samuel-bohman/AI-benchmarking-guide/blob/2b25b6966d7a14de809214e8b37b1b1e74d4e0e0/"
        "Azure_Results/ND_MI300X_v5_results.md"
    ),
    "rocm-maf": (
        "AMD ROCm blog, 'Measuring Max-Achievable FLOPs - Part 2' (28 Feb 2025): '| AMD Instinct MI300X | 654 TFLOPs "
        "(1115 MHz) | 708 TFLOPs (1207 MHz) | ...' (FP16, BF16; hipblaslt-bench, AMD-run, best shape) and footnote 4 "
        "'1223.6 TFLOPs FP8'. https://github.com/ROCm/rocm-blogs/blob/8e011952aebcdc6ad86b42f5ee236136aa8765dd/blogs/"
        "software-tools-optimization/measuring-max-achievable-flops-part2/README.md"
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
    name: str  # the profile's name
    title: str
    hbm_read: Figure  # -> bandwidth_efficiency
    bf16_gemm: Figure  # large-GEMM plateau -> top of compute_efficiency
    # The interconnect: NVLink GPUs give NCCL's best bus bandwidth and its 1 KiB figure (a
    # cross-check of the fitted latency). PCIe cards give a fraction measured on a stand-in's PCIe
    # (no PCIe-only nccl-tests result was found for these cards) and NCCL's small all-reduce latency,
    # which the profile takes as is: vLLM turns its one-shot all-reduce off beyond two PCIe-only GPUs.
    allreduce_busbw: Figure | None = None  # best -> interconnect_efficiency
    allreduce_busbw_1kib: Figure | None = None  # cross-check of allreduce_latency_s
    link_efficiency: Figure | None = None  # "fraction" -> interconnect_efficiency when no busbw
    host_link_efficiency: Figure | None = None  # "fraction" -> host_link_efficiency (beyond an NVLink-bridged pair)
    allreduce_latency: Figure | None = None  # "s" -> allreduce_latency_s instead of the fitted one
    fp8_gemm: Figure | None = None
    kv_read: Figure | None = None
    cross_checks: tuple[Figure, ...] = ()
    notes: tuple[str, ...] = ()


GB, TB, TFLOPS = 1e9, 1e12, 1e12

PUBLISHED = {
    "a100-80": PublishedGPU(
        gpu="a100-80",
        name="a100-published",
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
        name="h100-published",
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
        name="h200-published",
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

# PCIe cards. No PCIe-only all-reduce of these cards was published: the link fraction is a stand-in
# card's (8 RTX PRO 6000 on PCIe Gen5: 41.1 GB/s bus bandwidth over the 64 GB/s link, 0.642), and so
# is the small all-reduce (NCCL at 1 KB on that box, 24.1 us), both marked as stand-ins.
PCIE_LINK = Figure(0.642, "fraction", "STAND-IN: NCCL all-reduce busbw 41.1 GB/s over the 64 GB/s PCIe Gen5 x16 link, "
                                      "8 x RTX PRO 6000 on PCIe switches", "rtx6kpro-pcie")
PCIE_ALLREDUCE = Figure(24.1e-6, "s", "STAND-IN: NCCL all-reduce of 1 KB on 8 PCIe Gen5 GPUs (vLLM uses NCCL beyond two "
                                      "PCIe cards [vllm-custom-ar])", "rtx6kpro-pcie")
PUBLISHED.update({
    "l40s": PublishedGPU(
        gpu="l40s",
        name="l40s-published",
        title="NVIDIA L40S 48GB (PCIe)",
        hbm_read=Figure(844 * GB, "B/s", "STAND-IN: read kernel, full occupancy, on an L40 (same AD102 and GDDR6)", "gpu-benches-l40"),
        bf16_gemm=Figure(269.15 * TFLOPS, "FLOP/s", "torch.mm square BF16, best over 1024-10240, L40S", "torch-perf-db"),
        fp8_gemm=Figure(362 * TFLOPS, "FLOP/s", "SGLang CUTLASS row-wise FP8 GEMM, M=2048 N=6144 K=4096, L40S (derived "
                                                "from the script's mislabelled column)", "sglang-6756"),
        link_efficiency=PCIE_LINK,
        allreduce_latency=PCIE_ALLREDUCE,
        cross_checks=(
            Figure(770 * GB, "B/s", "STAND-IN: scale kernel (one read, one write stream), L40", "gpu-benches-l40"),
            Figure(0.8, "fraction", "NVIDIA aiconfigurator's L40S memory-bandwidth derate", "aiconfigurator-l40s"),
            Figure(42.14e-6, "s", "8-byte NCCL all-reduce on 8 RTX 4090 over PCIe Gen4, no CUDA graph", "nccl-1530"),
        ),
        notes=("No decode-attention bandwidth measured on an L40S was found; sim uses bandwidth_efficiency.",),
    ),
    "l4": PublishedGPU(
        gpu="l4",
        name="l4-published",
        title="NVIDIA L4 24GB (PCIe)",
        hbm_read=Figure(235 * GB, "B/s", "torch copy_ (read and write bytes counted), L4: the only L4 bandwidth figure "
                                         "found, a copy rate, so a low bound on reads", "chsasank-bench"),
        bf16_gemm=Figure(59.4 * TFLOPS, "FLOP/s", "torch.mm BF16 8192^3, L4, sustained under its 72 W limit", "torch-perf-db"),
        link_efficiency=PCIE_LINK,
        allreduce_latency=PCIE_ALLREDUCE,
        cross_checks=(
            Figure(66 * TFLOPS, "FLOP/s", "torch.matmul BF16, best square size up to 6888, L4 (short runs)", "chsasank-bench"),
            Figure(70.89 * TFLOPS, "FLOP/s", "torch.mm BF16 2048^3, L4, before power throttling", "torch-perf-db"),
        ),
        notes=("No FP8 GEMM measured on an L4 was found: FP8 GEMMs use the BF16 fraction of the FP8 peak.",
               "No decode-attention bandwidth measured on an L4 was found; sim uses bandwidth_efficiency."),
    ),
    "a100-pcie": PublishedGPU(
        gpu="a100-pcie",
        name="a100-pcie-published",
        title="NVIDIA A100 PCIe 80GB",
        hbm_read=Figure(1660 * GB, "B/s", "STAND-IN: the A100 SXM4 80GB's Dot fraction (1.75 of 2.039 TB/s, 0.858) of the "
                                          "PCIe card's 1.935 TB/s; no read benchmark of an A100 PCIe was found", "azure-a100"),
        bf16_gemm=Figure(252.9 * TFLOPS, "FLOP/s", "MAMF, BF16, A100 PCIe, best shape 2048x5120x6144", "mamf"),
        link_efficiency=Figure(0.3875, "fraction", "STAND-IN: 2 x H100 PCIe over an NVLink bridge, busbw 116.26 GB/s of "
                                                   "300 GB/s (the A100 PCIe bridge has the same 300 GB/s a direction)", "nccl-1161"),
        host_link_efficiency=PCIE_LINK,
        allreduce_latency=PCIE_ALLREDUCE,
        cross_checks=(
            Figure(234.14 * TFLOPS, "FLOP/s", "torch.mm square BF16, best over 1024-10240, A100-PCIE-40GB", "torch-perf-db"),
            Figure(21 * GB, "B/s", "NCCL all-reduce busbw averaged over 8 B-128 MB, 8 x A100 80GB PCIe (0.66 of 32 GB/s; "
                                   "a sweep average, so below the peak)", "nccl-841"),
        ),
        notes=("A100 has no fp8 tensor cores: no fp8_compute_efficiency.",
               "interconnect_efficiency is the NVLink bridge's (tp 2); host_link_efficiency the PCIe ring's (tp 4, 8)."),
    ),
    "h100-pcie": PublishedGPU(
        gpu="h100-pcie",
        name="h100-pcie-published",
        title="NVIDIA H100 PCIe 80GB",
        hbm_read=Figure(1942 * GB, "B/s", "read kernel, full occupancy, H100 PCIe", "gpu-benches-h100-pcie"),
        bf16_gemm=Figure(495.93 * TFLOPS, "FLOP/s", "torch.mm square BF16 4096^3, H100 PCIe", "torch-perf-db"),
        fp8_gemm=Figure(580.38 * TFLOPS, "FLOP/s", "torch._scaled_mm FP8, 1x128 block scales, M=16640 N=5120 K=8192, "
                                                   "H100 PCIe", "pytorch-ao-3342"),
        allreduce_busbw=Figure(116.26 * GB, "B/s", "NCCL all-reduce busbw, 4 GB, 2 x H100 PCIe over an NVLink bridge", "nccl-1161"),
        host_link_efficiency=PCIE_LINK,
        allreduce_latency=PCIE_ALLREDUCE,
        cross_checks=(
            Figure(432.997 * TFLOPS, "FLOP/s", "torch BF16 mm, M=16640 N=5120 K=8192, H100 PCIe", "pytorch-ao-3342"),
            Figure(449 * TFLOPS, "FLOP/s", "torch.matmul BF16, best square size up to 6888, H100-PCIe", "chsasank-bench"),
            Figure(1630 * GB, "B/s", "torch copy_ (read and write bytes counted), H100-PCIe", "chsasank-bench"),
        ),
        notes=("The H100 PCIe's 350 W limit keeps its BF16 GEMMs near 0.66 of peak (the SXM reaches 0.80).",
               "interconnect_efficiency is the NVLink bridge's (tp 2); host_link_efficiency the PCIe ring's (tp 4, 8).",
               "No decode-attention bandwidth measured on an H100 PCIe was found; sim uses bandwidth_efficiency."),
    ),
    "b200": PublishedGPU(
        gpu="b200",
        name="b200-published",
        title="NVIDIA B200 (HGX, 1000 W)",
        hbm_read=Figure(7.47 * TB, "B/s", "STAND-IN: the H200's STREAM Dot fraction (4.48 of 4.8 TB/s, 0.933) of the B200's "
                                          "8 TB/s; no read benchmark of a B200 was found", "azure-h200"),
        bf16_gemm=Figure(1745 * TFLOPS, "FLOP/s", "MAMF, BF16, B200 SXM, best shape 1792x16128x3072", "mamf-2025"),
        fp8_gemm=Figure(3432.5 * TFLOPS, "FLOP/s", "MAMF, FP8 e4m3, B200 SXM, best shape 15360x4096x3072", "mamf-2025"),
        kv_read=Figure(5830.86 * GB, "B/s", "FlashInfer trtllm-gen paged decode attention, batch 128, 4,096 tokens, B200",
                       "flashinfer-1415"),
        allreduce_busbw=Figure(838.0 * GB, "B/s", "NCCL all-reduce busbw (NVLS), 8 GiB, 8 x B200", "ml-eng-network"),
        allreduce_busbw_1kib=Figure(0.10 * GB, "B/s", "STAND-IN: NCCL all-reduce busbw, 1 KB, Ring, 4 GPUs of a GB200 VM",
                                    "azure-gb200"),
        cross_checks=(
            Figure(682.2 * GB, "B/s", "NCCL all-reduce busbw, 8 GiB, 8 x B200, Ring (NVLS off)", "ml-eng-network"),
            Figure(2906.9 * TFLOPS, "FLOP/s", "STAND-IN: cuBLASLt FP8 16384^3 on a GB200 GPU", "azure-gb200"),
            Figure(7627.6 * TFLOPS, "FLOP/s", "STAND-IN: cuBLASLt FP4 16384^3 on a GB200 GPU (FP4 GEMMs take the FP8 "
                                              "fraction of the FP4 peak in sim)", "azure-gb200"),
            Figure(3e-6, "s", "8-byte all-reduce on 8 x B200, NCCL 2.27 symmetric memory, tuned best case", "nccl-1940"),
        ),
        notes=("No HBM read benchmark of a B200 was found: hbm_read is a stand-in, and bandwidth_efficiency is the fitted "
               "serving fraction, which lies below it. The decode-attention kernel's 5.83 TB/s sets kv_bandwidth_efficiency.",
               "The MAMF table does not say whether its B200 ran at 700 W or 1000 W; kvlab's datasheet figures are the "
               "1000 W HGX B200's.",
               "interconnect_efficiency: NVLS bus bandwidth (838 GB/s) overstates link traffic; the Ring figure is 682.2 GB/s, "
               "0.76 of the 900 GB/s line rate."),
    ),
    "mi300x": PublishedGPU(
        gpu="mi300x",
        name="mi300x-published",
        title="AMD Instinct MI300X 192GB",
        hbm_read=Figure(4.0 * TB, "B/s", "BabelStream Dot (read-only reduction), Azure ND MI300X v5", "azure-mi300x"),
        bf16_gemm=Figure(668.4 * TFLOPS, "FLOP/s", "MAMF, BF16, MI300X, best shape 10240x15360x8192, TunableOp on, ROCm 6.3",
                         "mamf-2025"),
        fp8_gemm=Figure(1222.9 * TFLOPS, "FLOP/s", "hipBLASLt FP8 8192^3, Azure ND MI300X v5", "azure-mi300x"),
        allreduce_busbw=Figure(316.82 * GB, "B/s", "RCCL all-reduce busbw, 8 GB, 8 x MI300X", "azure-mi300x"),
        allreduce_busbw_1kib=Figure(0.04 * GB, "B/s", "RCCL all-reduce busbw, 1 KB, 8 x MI300X", "azure-mi300x"),
        cross_checks=(
            Figure(708 * TFLOPS, "FLOP/s", "hipblaslt-bench BF16, AMD's best shape at 750 W", "rocm-maf"),
            Figure(1223.6 * TFLOPS, "FLOP/s", "hipblaslt-bench FP8, AMD's best shape", "rocm-maf"),
            Figure(312.912 * GB, "B/s", "torch all_reduce, 4 GiB, 8 x MI300X", "ml-eng-network"),
        ),
        notes=("The serving constants (kernel and host overheads, MoE and MLA kernels) were fitted on NVIDIA GPUs under "
               "vLLM, SGLang and TensorRT-LLM; no MI300X serving record was in that fit.",
               "No decode-attention bandwidth measured on an MI300X was found; sim uses bandwidth_efficiency.",
               "An MI300X reaches another over one 64 GB/s xGMI link: all-reduce over fewer than 8 GPUs is much slower "
               "(47.7 GB/s busbw on 2, ml-eng-network), which sim's per-direction interconnect figure does not model."),
    ),
})


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
        "name": src.name,
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
    if src.allreduce_busbw is not None:
        profile["interconnect_efficiency"], cap = as_efficiency(src.allreduce_busbw.value, sheet.interconnect_bytes_per_s)
        notes += [f"interconnect_efficiency: {cap}"] if cap else []
    else:
        profile["interconnect_efficiency"] = src.link_efficiency.value
    if src.host_link_efficiency is not None:
        profile["host_link_efficiency"] = src.host_link_efficiency.value
    if src.allreduce_latency is not None:
        profile["allreduce_latency_s"] = src.allreduce_latency.value
    else:
        profile["allreduce_latency_s"] = SERVING["allreduce_latency_s"]
        nccl_latency_s = round_sig(allreduce_latency_s(src.allreduce_busbw_1kib.value), 3)
        notes.append(f"allreduce_latency_s: NCCL's 1 KiB all-reduce on {ALLREDUCE_RANKS} GPUs takes {nccl_latency_s * 1e6:.1f} us "
                     f"(cross-check); serving engines use their own one-shot kernels for small messages, and the fit over "
                     f"serving records chose {SERVING['allreduce_latency_s'] * 1e6:g} us")

    figures = {key: fig for key, fig in (
        ("hbm_read", src.hbm_read), ("bf16_gemm", src.bf16_gemm), ("allreduce_busbw", src.allreduce_busbw),
        ("allreduce_busbw_1kib", src.allreduce_busbw_1kib), ("link_efficiency", src.link_efficiency),
        ("host_link_efficiency", src.host_link_efficiency), ("allreduce_latency", src.allreduce_latency),
        ("fp8_gemm", src.fp8_gemm), ("kv_read", src.kv_read)) if fig is not None}
    used = {f.citation for f in list(figures.values()) + list(src.cross_checks)} | {"kvlab-serving-fit", "fa2"}
    used = sorted(used | ({"vllm-custom-ar"} if src.allreduce_latency is not None else set()))
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
                                    f"GB/s per direction" if src.allreduce_busbw is not None else
                                    "link_efficiency: a stand-in card's all-reduce bus bandwidth over its link"),
        "allreduce_latency_s": ("fitted over the tp > 1 serving records [kvlab-serving-fit]; NCCL's figure in notes"
                                if src.allreduce_latency is None else
                                "allreduce_latency: NCCL's small all-reduce over PCIe [vllm-custom-ar]"),
        "moe_half_efficiency_width": ("width of a routed expert's slice on a rank (intermediate size / tp) at which the fused "
                                      "expert GEMMs reach half a dense GEMM's bandwidth and rate; fitted over the MoE serving "
                                      "records [kvlab-serving-fit]"),
        "latency_kernel_s": ("time of each small kernel an MoE or MLA layer runs beyond a dense layer's (router top-k, block "
                             "alignment, expert sum, shared expert; MLA's norms, latent batched GEMMs, concat, combine); "
                             "fitted over the MoE and MLA serving records together with the dense ones [kvlab-serving-fit]"),
    }
    if "host_link_efficiency" in profile:
        derivation["host_link_efficiency"] = ("host_link_efficiency: a stand-in card's PCIe all-reduce bus bandwidth over "
                                              "its link, for rings beyond the NVLink-bridged pair")
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
