"""The GPU backend: CuPy arrays, cuBLAS GEMMs by type code, CUDA-event timing.

Written against CuPy 12-13 (`cupy.cuda.cublas.gemmEx`, `RawModule`, `Stream.begin_capture`).
Why cuBLAS directly: `cupy.matmul` has no bfloat16 (CuPy has no bfloat16 dtype), so bf16 operands
are kept as raw 16-bit words and handed to cublasGemmEx with the CUDA_R_16BF type code; fp16 goes
through the same call so the two dtypes are timed identically.

Timing: before a batch of timed calls a spin kernel occupies the GPU for a few milliseconds, so the
host enqueues every (start event, call, end event) triple while the GPU is busy and the calls then
run back to back. Without it, a 10-microsecond GEMM timed from an idle GPU would include the host's
launch latency (triton.testing.do_bench uses the same trick).
"""

from __future__ import annotations

import os
import platform
import subprocess
import time

from .backend import CUPY_MISSING, GPU_DTYPE_BYTES, NO_DEVICE, Backend, BackendUnavailable

# cudaDataType codes (CUDA library_types.h) and cuBLAS enums, spelled out so the code does not
# depend on which of them a given CuPy release re-exports.
CUDA_R_32F = 0
CUDA_R_16F = 2
CUDA_R_16BF = 14
CUDA_R_8F_E4M3 = 28
CUBLAS_OP_N = 0
CUBLAS_COMPUTE_32F = 68
CUBLAS_GEMM_DEFAULT = -1
MEMCPY_DEVICE_TO_DEVICE = 3

_TYPE_CODE = {"bf16": CUDA_R_16BF, "fp16": CUDA_R_16F, "fp8": CUDA_R_8F_E4M3, "fp32": CUDA_R_32F}

_KERNELS = r"""
extern "C" __global__ void read_bytes(const int4* __restrict__ src, long long n_vec, int* __restrict__ sink) {
    // Grid-stride streaming read of 16-byte words. The XOR keeps every load live; the store
    // happens only if the XOR hits one particular value, so almost nothing is written.
    int acc = 0;
    long long stride = (long long)blockDim.x * gridDim.x;
    #pragma unroll 4
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n_vec; i += stride) {
        int4 v = src[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x5bd1e995) sink[blockIdx.x] = acc;
}

extern "C" __global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}

extern "C" __global__ void noop() { }
"""


def _nvidia_driver_version() -> str:
    """The kernel-module driver version (e.g. 560.35.03), which CUDA's API does not report."""
    try:
        with open("/proc/driver/nvidia/version") as fh:
            for word in fh.readline().split():
                if word.count(".") >= 1 and word.replace(".", "").isdigit():
                    return word
    except OSError:
        pass
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10, check=False,
        )
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def _version_string(code: int) -> str:
    """CUDA encodes 12.4 as 12040."""
    return f"{code // 1000}.{(code % 1000) // 10}"


class CupyBackend(Backend):
    name = "cupy"
    is_gpu = True

    def __init__(self, device_index: int = 0) -> None:
        try:
            import cupy
        except Exception as exc:  # ImportError, or a broken install failing while it loads CUDA
            raise BackendUnavailable(f"{CUPY_MISSING} [import cupy failed: {exc}]") from None
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # CUDARuntimeError: no driver, or no device
            raise BackendUnavailable(f"{NO_DEVICE} [{exc}]") from None
        if count < 1:
            raise BackendUnavailable(NO_DEVICE)
        if not 0 <= device_index < count:
            raise BackendUnavailable(f"GPU {device_index} requested but {count} found (valid: 0..{count - 1})")
        import numpy

        self.cp = cupy
        self.np = numpy
        self.xp = cupy
        self.device_index = device_index
        self._count = count
        self.device = cupy.cuda.Device(device_index)
        self.device.use()
        self.props = cupy.cuda.runtime.getDeviceProperties(device_index)
        self._module = cupy.RawModule(code=_KERNELS)
        self._read = self._module.get_function("read_bytes")
        self._spin = self._module.get_function("spin")
        self._noop = self._module.get_function("noop")
        self._sink = cupy.zeros(1 << 16, dtype=cupy.int32)
        self._alpha = numpy.array(1.0, dtype=numpy.float32)
        self._beta = numpy.array(0.0, dtype=numpy.float32)
        self._sm_count = int(self.props.get("multiProcessorCount", 108))
        self._clock_hz = float(self.props.get("clockRate", 1_500_000)) * 1e3  # clockRate is in kHz
        self._graph = None  # (kernel count, (graph, stream)) of the captured step skeleton
        self._graphs: dict[int, tuple] = {}  # kernel count -> (graph, stream), for graph_replay_s
        self._attention: dict[tuple[int, int], tuple] = {}  # (group, head_dim) -> (split, combine)
        self._workspace: dict[str, object] = {}
        self._spin_per_call_s = 40e-6
        self.attention_kernel = "v2"  # paged_attention_kernel.SOURCES key; the benchmark may fall back to v1
        self.host_bound_batches = 0  # timed batches whose enqueueing outlasted the spin (see time_batch)

    # -- description -------------------------------------------------------------------------
    def device_info(self) -> dict:
        cp = self.cp
        name = self.props.get("name", b"unknown")
        name = name.decode() if isinstance(name, bytes) else str(name)
        info = {
            "device_name": name,
            "device_kind": "gpu",
            "device_index": self.device_index,
            "device_count": self._count,
            "compute_capability": f"{self.props.get('major')}.{self.props.get('minor')}",
            "sm_count": self._sm_count,
            "l2_cache_bytes": self.l2_bytes(),
            "total_memory_bytes": int(self.props.get("totalGlobalMem", 0)),
            "nvidia_driver_version": _nvidia_driver_version(),
            "cuda_driver_api_version": _version_string(cp.cuda.runtime.driverGetVersion()),
            "cuda_runtime_version": _version_string(cp.cuda.runtime.runtimeGetVersion()),
            "cupy_version": cp.__version__,
            "numpy_version": self.np.__version__,
            "python_version": platform.python_version(),
            "platform": platform.platform(),
        }
        try:
            handle = cp.cuda.device.get_cublas_handle()
            info["cublas_version"] = str(cp.cuda.cublas.getVersion(handle))
        except Exception:
            info["cublas_version"] = "unknown"
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        if visible is not None:
            info["cuda_visible_devices"] = visible
        return info

    def l2_bytes(self) -> int:
        return int(self.props.get("l2CacheSize", 50 << 20))

    def free_memory_bytes(self) -> int:
        return int(self.cp.cuda.runtime.memGetInfo()[0])

    def device_count(self) -> int:
        return self._count

    def dtype_bytes(self, dtype: str) -> int:
        return GPU_DTYPE_BYTES[dtype]

    # -- data ----------------------------------------------------------------------------------
    def random(self, shape, dtype, seed):
        cp = self.cp
        rng = cp.random.default_rng(seed)
        x = rng.standard_normal(tuple(shape), dtype=cp.float32)
        if dtype == "fp32":
            return x
        if dtype == "fp16":
            return x.astype(cp.float16)
        if dtype == "bf16":
            # bf16 is the top half of an fp32: truncating a random fp32 gives a random bf16.
            return (x.view(cp.uint32) >> 16).astype(cp.uint16)
        if dtype == "fp8":
            # Random e4m3 bytes: exponent field forced to 0b0xx1 (never all-ones, which holds NaN,
            # and never zero), so every value is a normal number of magnitude 2^-6 .. 1.875.
            bits = rng.integers(0, 256, size=tuple(shape), dtype=cp.int32).astype(cp.uint8)
            return (bits & 0xB7) | 0x08
        raise ValueError(f"unknown dtype {dtype!r}")

    def random_bytes(self, nbytes, seed):
        words = -(-int(nbytes) // 4)
        x = self.cp.random.default_rng(seed).integers(1, 2**31 - 1, size=words, dtype=self.cp.int32)
        return x.view(self.cp.uint8)[: int(nbytes)]

    def empty(self, shape, dtype):
        cp = self.cp
        storage = {"bf16": cp.uint16, "fp16": cp.float16, "fp8": cp.uint8, "fp32": cp.float32}[dtype]
        return cp.empty(tuple(shape), dtype=storage)

    # -- work ----------------------------------------------------------------------------------
    def gemm(self, a, b, c, dtype):
        # cuBLAS is column-major: a row-major C = A @ B is the column-major C^T = B^T @ A^T,
        # i.e. gemm(m=N, n=M, k=K) with B first. No transposes, no copies.
        m_rows, k = a.shape
        n_cols = b.shape[1]
        in_type = _TYPE_CODE[dtype]
        out_type = CUDA_R_16BF if dtype in ("bf16", "fp8") else _TYPE_CODE[dtype]
        handle = self.cp.cuda.device.get_cublas_handle()
        self.cp.cuda.cublas.gemmEx(
            handle, CUBLAS_OP_N, CUBLAS_OP_N, n_cols, m_rows, k,
            self._alpha.ctypes.data, b.data.ptr, in_type, n_cols,
            a.data.ptr, in_type, k,
            self._beta.ctypes.data, c.data.ptr, out_type, n_cols,
            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT,
        )

    def read(self, buf):
        n_vec = buf.nbytes // 16
        threads = 256
        blocks = max(1, min(-(-n_vec // threads), self._sm_count * 8))
        self._read((blocks,), (threads,), (buf, self.np.int64(n_vec), self._sink))

    def copy(self, dst, src):
        stream = self.cp.cuda.get_current_stream()
        self.cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, src.nbytes, MEMCPY_DEVICE_TO_DEVICE, stream.ptr)

    def _occupy(self, seconds: float) -> None:
        self._spin((1,), (1,), (self.np.int64(seconds * self._clock_hz),))

    def time_calls(self, call, n_calls):
        cp = self.cp
        starts = [cp.cuda.Event() for _ in range(n_calls)]
        ends = [cp.cuda.Event() for _ in range(n_calls)]
        self._occupy(min(max(n_calls * 100e-6, 2e-3), 50e-3))
        for i in range(n_calls):
            starts[i].record()
            call(i)
            ends[i].record()
        ends[-1].synchronize()
        return [cp.cuda.get_elapsed_time(s, e) * 1e-3 for s, e in zip(starts, ends, strict=True)]

    def time_batch(self, call, n_calls):
        cp = self.cp
        start, end = cp.cuda.Event(), cp.cuda.Event()
        # The spin keeps the GPU busy while the host enqueues the calls (tens of us of Python each),
        # so they then run back to back and the pair of events brackets GPU time only. The spin per
        # call follows the last batch's enqueue time; a batch whose enqueueing outlasted its spin is
        # counted (the timing's warm-up batches absorb a change of call type).
        spin_s = min(max(n_calls * self._spin_per_call_s, 2e-3), 0.25)
        self._occupy(spin_s)
        t0 = time.perf_counter()
        start.record()
        for i in range(n_calls):
            call(i)
        end.record()
        host_s = time.perf_counter() - t0
        end.synchronize()
        if host_s > 0.9 * spin_s:
            self.host_bound_batches += 1
        # next batch: 1.5 x this batch's enqueue time per call (up or down: a spin is GPU time the
        # run waits for, so it must not stay at the slowest call type's figure)
        # (up to 20 ms per call: an MoE call enqueues hundreds of expert GEMMs)
        self._spin_per_call_s = min(max(1.5 * host_s / max(n_calls, 1), 10e-6), 20e-3)
        return cp.cuda.get_elapsed_time(start, end) * 1e-3 / max(n_calls, 1)

    def event_floor_s(self):
        cp = self.cp
        start, end = cp.cuda.Event(), cp.cuda.Event()
        self._occupy(1e-3)
        start.record()
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) * 1e-3

    def graph_replay_s(self, n_kernels, replays):
        cp = self.cp
        if n_kernels not in self._graphs:
            self._graphs[n_kernels] = self._capture_skeleton(n_kernels)  # raises BackendUnavailable
        graph, stream = self._graphs[n_kernels]
        start, end = cp.cuda.Event(), cp.cuda.Event()
        try:
            with stream:
                self._occupy(min(max(replays * 20e-6, 2e-3), 0.1))
                start.record(stream)
                for _ in range(replays):
                    graph.launch(stream)
                end.record(stream)
            end.synchronize()
        except Exception as exc:
            raise BackendUnavailable(f"CUDA graph launch failed: {exc}") from None
        return cp.cuda.get_elapsed_time(start, end) * 1e-3 / max(replays, 1)

    def graph_step_wall_s(self, n_kernels):
        """Host wall time of one replay of the n_kernels graph plus a synchronise."""
        if n_kernels not in self._graphs:
            self._graphs[n_kernels] = self._capture_skeleton(n_kernels)
        graph, stream = self._graphs[n_kernels]
        t0 = time.perf_counter()
        graph.launch(stream)
        stream.synchronize()
        return time.perf_counter() - t0

    # -- paged decode attention ----------------------------------------------------------------
    def paged_kv_cache(self, num_blocks, block_tokens, kv_heads, head_dim, seed):
        shape = (num_blocks, block_tokens, kv_heads, head_dim)
        return self.random(shape, "bf16", seed), self.random(shape, "bf16", seed + 1)

    def int_array(self, values):
        return self.cp.asarray(self.np.asarray(values, dtype=self.np.int32))

    def _attention_kernels(self, group, head_dim):
        key = (group, head_dim, self.attention_kernel)
        if key not in self._attention:
            from .paged_attention_kernel import SOURCES

            mod = self.cp.RawModule(code=SOURCES[self.attention_kernel],
                                    options=(f"-DGROUP={group}", f"-DHEAD_DIM={head_dim}"))
            self._attention[key] = (mod.get_function("paged_decode_split"), mod.get_function("paged_decode_combine"))
        return self._attention[key]

    def _buffer(self, name, count, dtype):
        buf = self._workspace.get(name)
        if buf is None or buf.size < count:
            buf = self.cp.empty(max(count, 1), dtype=dtype)
            self._workspace[name] = buf
        return buf

    def paged_decode_attention(self, q, k_cache, v_cache, block_table, seq_lens, out, max_seq_len):
        from .paged_attention_kernel import THREADS, splits_for

        np = self.np
        batch, q_heads, head_dim = q.shape
        kv_heads = k_cache.shape[2]
        group = q_heads // kv_heads
        split, combine = self._attention_kernels(group, head_dim)
        splits = splits_for(batch, kv_heads, max_seq_len, self._sm_count)
        per_split = -(-max_seq_len // splits)
        part_o = self._buffer("part_o", batch * q_heads * splits * head_dim, self.np.float32)
        part_ml = self._buffer("part_ml", batch * q_heads * splits * 2, self.np.float32)
        scale_log2 = np.float32(1.4426950408889634 / head_dim ** 0.5)
        split((batch, kv_heads, splits), (THREADS,),
              (q, k_cache, v_cache, block_table, seq_lens, part_o, part_ml,
               np.int32(kv_heads), np.int32(block_table.shape[1]), np.int32(per_split), scale_log2))
        combine((batch * q_heads,), (head_dim,), (part_o, part_ml, out, np.int32(splits)))

    def paged_mla_cache(self, num_blocks, block_tokens, latent_dim, seed):
        return self.random((num_blocks, block_tokens, latent_dim), "bf16", seed)

    def _mla_kernels(self, kv_lora_rank, rope_dim):
        key = ("mla", kv_lora_rank, rope_dim)
        if key not in self._attention:
            from .paged_mla_kernel import SOURCE

            mod = self.cp.RawModule(code=SOURCE, options=(f"-DKV_LORA={kv_lora_rank}", f"-DROPE={rope_dim}"))
            self._attention[key] = (mod.get_function("paged_mla_split"), mod.get_function("paged_decode_combine"))
        return self._attention[key]

    def paged_mla_decode(self, q, cache, block_table, seq_lens, out, max_seq_len, kv_lora_rank, softmax_scale):
        from .paged_attention_kernel import splits_for
        from .paged_mla_kernel import HEADS_PER_CTA, THREADS

        np = self.np
        batch, heads, latent = q.shape
        # the kernel's layout rules (paged_mla_kernel.py): whole head groups, 16-byte rows, 128 | latent
        if heads % HEADS_PER_CTA or latent % 8 or kv_lora_rank % THREADS:
            raise ValueError(f"MLA kernel needs heads % {HEADS_PER_CTA} == 0, latent % 8 == 0 and kv_lora_rank % "
                             f"{THREADS} == 0; got {heads}, {latent}, {kv_lora_rank}")
        split, combine = self._mla_kernels(kv_lora_rank, latent - kv_lora_rank)
        groups = heads // HEADS_PER_CTA
        splits = splits_for(batch, groups, max_seq_len, self._sm_count)
        per_split = -(-max_seq_len // splits)
        part_o = self._buffer("mla_part_o", batch * heads * splits * kv_lora_rank, np.float32)
        part_ml = self._buffer("mla_part_ml", batch * heads * splits * 2, np.float32)
        scale_log2 = np.float32(1.4426950408889634 * softmax_scale)
        split((groups, batch, splits), (THREADS,),
              (q, cache, block_table, seq_lens, part_o, part_ml,
               np.int32(heads), np.int32(block_table.shape[1]), np.int32(per_split), scale_log2))
        combine((batch * heads,), (kv_lora_rank,), (part_o, part_ml, out, np.int32(splits)))

    def to_host(self, x):
        h = self.cp.asnumpy(x)
        if h.dtype == self.np.uint16:  # bf16 words
            return (h.astype(self.np.uint32) << 16).view(self.np.float32)
        return h.astype(self.np.float32)

    def step_skeleton_s(self, n_kernels, use_graph):
        cp = self.cp
        if not use_graph:
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            for _ in range(n_kernels):
                self._noop((1,), (1,), ())
            cp.cuda.get_current_stream().synchronize()
            return time.perf_counter() - t0
        if self._graph is None or self._graph[0] != n_kernels:
            self._graph = (n_kernels, self._capture_skeleton(n_kernels))
        graph, stream = self._graph[1]
        try:
            t0 = time.perf_counter()
            graph.launch(stream)
            stream.synchronize()
            return time.perf_counter() - t0
        except Exception as exc:
            raise BackendUnavailable(f"CUDA graph launch failed: {exc}") from None

    def _capture_skeleton(self, n_kernels: int):
        """A CUDA graph of n_kernels empty kernels, launched once (the first launch uploads it)."""
        cp = self.cp
        stream = cp.cuda.Stream(non_blocking=True)
        try:
            with stream:
                stream.begin_capture()
                try:
                    for _ in range(n_kernels):
                        self._noop((1,), (1,), ())
                finally:
                    graph = stream.end_capture()  # always leave capture mode, even after a failure
            graph.launch(stream)
            stream.synchronize()
        except Exception as exc:  # an old CuPy without Stream.begin_capture, or capture unsupported
            raise BackendUnavailable(f"CUDA graph capture failed: {exc}") from None
        return graph, stream

    def synchronize(self):
        self.cp.cuda.Device().synchronize()

    def release(self):
        self.synchronize()
        self.cp.get_default_memory_pool().free_all_blocks()
