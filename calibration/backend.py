"""Array backends: CuPy on a GPU (the real measurement) and NumPy on the CPU (a pipeline check).

Each benchmark is written once against the small `Backend` interface below, so the CPU run walks
exactly the code path a GPU owner runs, only at tiny sizes. The NumPy backend never pretends to be
a GPU: its results carry provenance kind "cpu-pipeline-check" and `gpu: null`.

CuPy is imported inside `CupyBackend.__init__` (backend_cupy.py) and nowhere else, so importing
this package on a machine without CuPy or without a GPU works; asking for the CuPy backend there
raises `BackendUnavailable` with a message that says what to install or check.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Sequence

CUPY_MISSING = (
    "CuPy is not installed: pip install cupy-cuda12x (cupy-cuda11x for a CUDA 11 driver). "
    "To check the pipeline without a GPU, run: python -m calibration --backend numpy"
)
NO_DEVICE = (
    "no CUDA device found: CuPy is installed but the CUDA runtime sees no GPU "
    "(check nvidia-smi and CUDA_VISIBLE_DEVICES). "
    "To check the pipeline without a GPU, run: python -m calibration --backend numpy"
)

# Storage bytes per element of each dtype the suite names, on a GPU. bf16 and fp8 are stored as
# raw 16- and 8-bit words because CuPy has no bfloat16 or float8 dtype; cuBLAS reads them by type code.
GPU_DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1, "fp32": 4}


class BackendUnavailable(RuntimeError):
    """The requested backend cannot run here; the message says why and what to do."""


class Backend:
    """What a benchmark may ask of a device. Implemented by NumpyBackend and CupyBackend."""

    name: str = "abstract"
    is_gpu: bool = False
    xp = None  # the array module: numpy or cupy

    def device_info(self) -> dict:
        raise NotImplementedError

    def l2_bytes(self) -> int:
        """Last-level cache size: rotating buffers are sized to several times this."""
        raise NotImplementedError

    def free_memory_bytes(self) -> int:
        raise NotImplementedError

    def device_count(self) -> int:
        return 1

    def dtype_bytes(self, dtype: str) -> int:
        raise NotImplementedError

    def random(self, shape: Sequence[int], dtype: str, seed: int):
        """An array of random (never all-zero) values: zeros let some GPUs draw less power and
        clock higher, and let sparse-aware hardware skip work, so they overstate throughput."""
        raise NotImplementedError

    def random_bytes(self, nbytes: int, seed: int):
        raise NotImplementedError

    def empty(self, shape: Sequence[int], dtype: str):
        raise NotImplementedError

    def gemm(self, a, b, c, dtype: str) -> None:
        """c[M, N] = a[M, K] @ b[K, N], row-major, accumulate in fp32."""
        raise NotImplementedError

    def read(self, buf) -> None:
        """Read every byte of `buf` once (a streaming read; the result is discarded)."""
        raise NotImplementedError

    def copy(self, dst, src) -> None:
        """Device-to-device copy of src into dst (same number of bytes)."""
        raise NotImplementedError

    def time_calls(self, call: Callable[[int], None], n_calls: int) -> list[float]:
        """Seconds taken by call(0), ..., call(n_calls - 1), each timed on its own."""
        raise NotImplementedError

    def time_batch(self, call: Callable[[int], None], n_calls: int) -> float:
        """Seconds per call of call(0), ..., call(n_calls - 1) run back to back between ONE pair of
        timers. Per-call events cost a few microseconds each, against GEMMs of 8-30 us at small M."""
        raise NotImplementedError

    def event_floor_s(self) -> float:
        """Seconds an empty timer pair reads: the floor under any single timed interval."""
        raise NotImplementedError

    def step_skeleton_s(self, n_kernels: int, use_graph: bool) -> float:
        """Host wall time of launching n_kernels empty kernels and synchronising once."""
        raise NotImplementedError

    def graph_replay_s(self, n_kernels: int, replays: int) -> float:
        """Device seconds per replay of a CUDA graph of n_kernels empty kernels, `replays` replays
        back to back between one event pair. Raises BackendUnavailable when capture fails."""
        raise NotImplementedError

    def graph_step_wall_s(self, n_kernels: int) -> float:
        """Host wall time of one replay of a CUDA graph of n_kernels empty kernels + a synchronise."""
        raise NotImplementedError

    def paged_kv_cache(self, num_blocks: int, block_tokens: int, kv_heads: int, head_dim: int, seed: int):
        """(k_cache, v_cache), each [num_blocks, block_tokens, kv_heads, head_dim] in bf16, random."""
        raise NotImplementedError

    def int_array(self, values):
        """A device int32 array holding `values` (a NumPy array or nested list)."""
        raise NotImplementedError

    def paged_decode_attention(self, q, k_cache, v_cache, block_table, seq_lens, out, max_seq_len: int) -> None:
        """out[B, Hq, D] = softmax(q K^T / sqrt(D)) V for one query token per sequence, K and V read
        through block_table[B, max_blocks] from the paged caches (grouped-query: Hq = G x kv_heads)."""
        raise NotImplementedError

    def paged_mla_cache(self, num_blocks: int, block_tokens: int, latent_dim: int, seed: int):
        """An MLA latent cache [num_blocks, block_tokens, latent_dim] in bf16, random."""
        raise NotImplementedError

    def paged_mla_decode(self, q, cache, block_table, seq_lens, out, max_seq_len: int, kv_lora_rank: int,
                         softmax_scale: float) -> None:
        """Absorbed MLA decode: out[B, H, kv_lora_rank] = softmax(q . c^T x scale) c[:, :kv_lora_rank] for
        q[B, H, latent_dim], every head reading the same latent rows c through block_table."""
        raise NotImplementedError

    def to_host(self, x):
        """A NumPy copy of x, bf16 words converted to float32."""
        raise NotImplementedError

    def synchronize(self) -> None:
        pass

    def release(self) -> None:
        """Return cached memory between benchmarks."""


class NumpyBackend(Backend):
    """The CPU stand-in: same calls, float32 arithmetic, tiny sizes, wall-clock timing."""

    name = "numpy"
    is_gpu = False

    # A nominal "cache" for sizing rotating buffers. The CPU run checks the pipeline, not the
    # CPU's memory system, so a small fixed figure keeps its allocations small and its run short.
    NOMINAL_CACHE_BYTES = 1 << 20
    MEMORY_CAP_BYTES = 256 << 20

    def __init__(self) -> None:
        import numpy

        self.np = numpy
        self.xp = numpy

    def device_info(self) -> dict:
        return {
            "device_name": f"CPU ({platform.machine() or 'unknown'}, {os.cpu_count()} logical cores)",
            "device_kind": "cpu",
            "numpy_version": self.np.__version__,
            "python_version": platform.python_version(),
            "platform": platform.platform(),
        }

    def l2_bytes(self) -> int:
        return self.NOMINAL_CACHE_BYTES

    def free_memory_bytes(self) -> int:
        return self.MEMORY_CAP_BYTES

    def dtype_bytes(self, dtype: str) -> int:
        return 4  # every dtype is computed in float32 on the CPU

    def random(self, shape, dtype, seed):
        rng = self.np.random.default_rng(seed)
        return rng.standard_normal(tuple(shape), dtype=self.np.float32)

    def random_bytes(self, nbytes, seed):
        rng = self.np.random.default_rng(seed)
        return rng.integers(1, 256, size=int(nbytes), dtype=self.np.uint8)

    def empty(self, shape, dtype):
        return self.np.empty(tuple(shape), dtype=self.np.float32)

    def gemm(self, a, b, c, dtype):
        self.np.matmul(a, b, out=c)

    def read(self, buf):
        words = buf[: buf.nbytes - buf.nbytes % 8].view(self.np.uint64)
        self.np.bitwise_xor.reduce(words)

    def copy(self, dst, src):
        self.np.copyto(dst, src)

    def time_calls(self, call, n_calls):
        out = []
        for i in range(n_calls):
            t0 = time.perf_counter()
            call(i)
            out.append(time.perf_counter() - t0)
        return out

    def time_batch(self, call, n_calls):
        t0 = time.perf_counter()
        for i in range(n_calls):
            call(i)
        return (time.perf_counter() - t0) / max(n_calls, 1)

    def event_floor_s(self):
        t0 = time.perf_counter()
        return time.perf_counter() - t0

    def graph_replay_s(self, n_kernels, replays):
        raise BackendUnavailable("the NumPy backend has no CUDA graphs")

    def graph_step_wall_s(self, n_kernels):
        raise BackendUnavailable("the NumPy backend has no CUDA graphs")

    def paged_kv_cache(self, num_blocks, block_tokens, kv_heads, head_dim, seed):
        rng = self.np.random.default_rng(seed)
        shape = (num_blocks, block_tokens, kv_heads, head_dim)
        return (rng.standard_normal(shape, dtype=self.np.float32), rng.standard_normal(shape, dtype=self.np.float32))

    def int_array(self, values):
        return self.np.ascontiguousarray(self.np.asarray(values, dtype=self.np.int32))

    def paged_decode_attention(self, q, k_cache, v_cache, block_table, seq_lens, out, max_seq_len):
        out[...] = reference_paged_decode_attention(q, k_cache, v_cache, block_table, seq_lens)

    def paged_mla_cache(self, num_blocks, block_tokens, latent_dim, seed):
        rng = self.np.random.default_rng(seed)
        return rng.standard_normal((num_blocks, block_tokens, latent_dim), dtype=self.np.float32)

    def paged_mla_decode(self, q, cache, block_table, seq_lens, out, max_seq_len, kv_lora_rank, softmax_scale):
        out[...] = reference_paged_mla_decode(q, cache, block_table, seq_lens, kv_lora_rank, softmax_scale)

    def to_host(self, x):
        return self.np.asarray(x, dtype=self.np.float32)

    def step_skeleton_s(self, n_kernels, use_graph):
        if use_graph:
            raise BackendUnavailable("the NumPy backend has no CUDA graphs")
        one = self.np.ones(1, dtype=self.np.float32)
        t0 = time.perf_counter()
        for _ in range(n_kernels):
            self.np.add(one, 0.0, out=one)
        return time.perf_counter() - t0


def reference_paged_decode_attention(q, k_cache, v_cache, block_table, seq_lens):
    """NumPy float64 reference of Backend.paged_decode_attention (inputs as float arrays)."""
    import numpy as np

    q = np.asarray(q, dtype=np.float64)
    k_cache, v_cache = np.asarray(k_cache, dtype=np.float64), np.asarray(v_cache, dtype=np.float64)
    block_table, seq_lens = np.asarray(block_table), np.asarray(seq_lens)
    batch, q_heads, head_dim = q.shape
    block_tokens, kv_heads = k_cache.shape[1], k_cache.shape[2]
    group = q_heads // kv_heads
    out = np.empty((batch, q_heads, head_dim))
    for b in range(batch):
        n = int(seq_lens[b])
        blocks = block_table[b, : -(-n // block_tokens)]
        k = k_cache[blocks].reshape(-1, kv_heads, head_dim)[:n]  # [n, Hkv, D]
        v = v_cache[blocks].reshape(-1, kv_heads, head_dim)[:n]
        for h in range(q_heads):
            s = k[:, h // group, :] @ q[b, h] / np.sqrt(head_dim)
            p = np.exp(s - s.max())
            out[b, h] = (p / p.sum()) @ v[:, h // group, :]
    return out


def reference_paged_mla_decode(q, cache, block_table, seq_lens, kv_lora_rank: int, softmax_scale: float):
    """NumPy float64 reference of Backend.paged_mla_decode: every head scores the shared latent row
    (compressed KV then rotary key) and averages its first kv_lora_rank elements."""
    import numpy as np

    q, cache = np.asarray(q, dtype=np.float64), np.asarray(cache, dtype=np.float64)
    block_table, seq_lens = np.asarray(block_table), np.asarray(seq_lens)
    batch, heads, latent = q.shape
    block_tokens = cache.shape[1]
    out = np.empty((batch, heads, kv_lora_rank))
    for b in range(batch):
        n = int(seq_lens[b])
        c = cache[block_table[b, : -(-n // block_tokens)]].reshape(-1, latent)[:n]  # [n, latent]
        s = q[b] @ c.T * softmax_scale  # [H, n]
        p = np.exp(s - s.max(axis=1, keepdims=True))
        out[b] = (p / p.sum(axis=1, keepdims=True)) @ c[:, :kv_lora_rank]
    return out
