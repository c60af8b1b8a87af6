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
}
KV_DTYPES = ("bf16", "fp16", "fp8", "int8")
WEIGHT_DTYPES = ("bf16", "fp16", "fp8", "int8", "int4")
