"""Byte and time units, defined once.

GiB (2**30) is what engines print and what HBM budgets are reasoned in; GB (10**9) is what
datasheets quote for capacity and bandwidth. Mixing the two silently is a classic 7% error.
"""

KIB = 2**10
MIB = 2**20
GIB = 2**30
GB = 10**9
TB = 10**12

MS_PER_S = 1000.0

# Bytes per element of each storage precision kvlab accepts.
DTYPE_BYTES = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    # 4-bit floating point with block scales, counted with its scales. NVFP4: E2M1 values, one FP8
    # (E4M3) scale per 16 values, so 4 + 8/16 = 4.5 bits (ModelOpt checkpoints: group_size 16; the
    # one FP32 scale per tensor is negligible). MXFP4 (OCP Microscaling Formats v1.0): one E8M0 scale
    # per 32 values, 4 + 8/32 = 4.25 bits.
    "nvfp4": 0.5625,
    "mxfp4": 0.53125,
}
# KV cache precisions. An FP8 cache's scales are per tensor -- vLLM keeps one k_scale and one
# v_scale per attention layer (Attention._k_scale, _v_scale; "only per-tensor (scalar) scaling
# factors are supported", docs.vllm.ai quantization/fp8_e4m3_kvcache), a few bytes a layer and
# none a token -- so it costs 1 byte an element. An NVFP4 cache carries its block scales in every
# token (one FP8 scale per 16 values: 0.5625 bytes an element, as for weights); only engines that
# store one, on NVIDIA GPUs with FP4 tensor cores, accept it (resolve.check_kv_dtype).
KV_DTYPES = ("bf16", "fp16", "fp8", "int8", "nvfp4")
FP4_DTYPES = ("nvfp4", "mxfp4")  # weights a GPU with FP4 tensor cores multiplies at its FP4 peak
WEIGHT_DTYPES = ("bf16", "fp16", "fp8", "int8", "int4", *FP4_DTYPES)
