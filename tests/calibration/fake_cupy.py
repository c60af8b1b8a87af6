"""A NumPy stand-in for the parts of CuPy the GPU backend calls, to run backend_cupy.py without a GPU.

It follows CuPy's call signatures as the backend uses them (arrays with .data.ptr, RawModule
kernels called as f(grid, block, args), cublas.gemmEx over raw pointers with CUDA type codes,
events, streams with graph capture). It checks the backend's Python, its argument order and its
arithmetic; it cannot check CuPy itself, which only a run on a GPU does.
"""

from __future__ import annotations

import ctypes
import time
import types

import numpy as np

CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF = 0, 2, 14


class ndarray(np.ndarray):  # noqa: N801 - mirrors cupy.ndarray
    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.ctypes.data)


def _wrap(a) -> ndarray:
    return np.ascontiguousarray(a).view(ndarray)


def _at(ptr: int, count: int, ctype) -> np.ndarray:
    return np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctype)), shape=(count,))


def _read_matrix(ptr, type_code, rows, cols, ld):
    """A column-major rows x cols matrix with leading dimension ld, as float64."""
    n = ld * cols
    if type_code == CUDA_R_16BF:
        raw = (_at(ptr, n, ctypes.c_uint16).astype(np.uint32) << 16).view(np.float32)
    elif type_code == CUDA_R_16F:
        raw = _at(ptr, n, ctypes.c_uint16).view(np.float16)
    elif type_code == CUDA_R_32F:
        raw = _at(ptr, n, ctypes.c_float)
    else:
        raise RuntimeError("CUBLAS_STATUS_NOT_SUPPORTED")
    return raw.astype(np.float64).reshape(cols, ld).T[:rows, :]


def _write_matrix(ptr, type_code, value, ld):
    rows, cols = value.shape
    if type_code == CUDA_R_16BF:
        words = (value.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        target = _at(ptr, ld * cols, ctypes.c_uint16)
    elif type_code == CUDA_R_16F:
        words = value.astype(np.float16).view(np.uint16)
        target = _at(ptr, ld * cols, ctypes.c_uint16)
    else:
        words = value.astype(np.float32)
        target = _at(ptr, ld * cols, ctypes.c_float)
    for j in range(cols):
        target[j * ld: j * ld + rows] = words[:, j]


def gemm_ex(handle, transa, transb, m, n, k, alpha, a, atype, lda, b, btype, ldb, beta, c, ctype, ldc, compute, algo):
    assert transa == transb == 0
    A = _read_matrix(a, atype, m, k, lda)
    B = _read_matrix(b, btype, k, n, ldb)
    scale = _at(alpha, 1, ctypes.c_float)[0]
    _write_matrix(c, ctype, scale * (A @ B), ldc)


def _bf16(words):
    return (np.asarray(words).astype(np.uint32) << 16).view(np.float32)


def _paged_split(grid, block, args):
    """Stands in for paged_decode_split: the float64 reference in split 0, empty other splits, in
    the kernel's [B, Hq, S, D] / [B, Hq, S, 2] partial layout (log2-domain max, as exp2 uses)."""
    from kvlab.calibration.backend import reference_paged_decode_attention

    q, k, v, table, lens, part_o, part_ml, hkv, max_blocks, per_split, scale_log2 = args
    batch, kv_heads, splits = grid
    assert kv_heads == int(hkv) and table.shape[1] == int(max_blocks)
    assert abs(float(scale_log2) - 1.4426950408889634 / q.shape[2] ** 0.5) < 1e-6
    assert splits * int(per_split) >= int(np.max(lens))
    ref = reference_paged_decode_attention(_bf16(q), _bf16(k), _bf16(v), table, lens)
    hq, d = q.shape[1], q.shape[2]
    o = part_o[: batch * hq * splits * d].reshape(batch, hq, splits, d)
    ml = part_ml[: batch * hq * splits * 2].reshape(batch, hq, splits, 2)
    o[...] = 0.0
    ml[..., 0], ml[..., 1] = -np.inf, 0.0
    o[:, :, 0, :] = ref
    ml[:, :, 0, 0], ml[:, :, 0, 1] = 0.0, 1.0


def _paged_combine(grid, block, args):
    part_o, part_ml, out, splits = args
    heads, d, s = grid[0], block[0], int(splits)
    o = part_o[: heads * s * d].reshape(heads, s, d)
    ml = part_ml[: heads * s * 2].reshape(heads, s, 2)
    with np.errstate(invalid="ignore"):
        w = np.exp2(ml[..., 0] - ml[..., 0].max(axis=1, keepdims=True))
    w = np.nan_to_num(w)
    value = (o * w[..., None]).sum(axis=1) / (ml[..., 1] * w).sum(axis=1)[:, None]
    out.reshape(heads, d)[...] = (value.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def _mla_split(grid, block, args, options):
    """Stands in for paged_mla_split, step by step as the CUDA code does it: per (head group,
    sequence, split), TILE = 16 rows at a time, scores in the log2 domain, a running max, the
    accumulator rescaled once per tile, masked rows past the end, an empty split left at (-inf, 0)."""
    q, cache, table, lens, part_o, part_ml, heads, max_blocks, per_split, scale_log2 = args
    groups, batch, splits = grid
    kv_lora = int(next(o for o in options if o.startswith("-DKV_LORA="))[len("-DKV_LORA="):])
    rope = int(next(o for o in options if o.startswith("-DROPE="))[len("-DROPE="):])
    latent = kv_lora + rope
    assert block == (128,) and groups * 16 == int(heads) and q.shape[1:] == (int(heads), latent)
    assert table.shape[1] == int(max_blocks) and cache.shape[2] == latent and kv_lora % 128 == 0
    qf = _bf16(q).astype(np.float32)
    rows_all = _bf16(cache).reshape(-1, latent).astype(np.float32)
    block_tokens = cache.shape[1]
    h = int(heads)
    o = part_o[: batch * h * splits * kv_lora].reshape(batch, h, splits, kv_lora)
    ml = part_ml[: batch * h * splits * 2].reshape(batch, h, splits, 2)
    for b in range(batch):
        n = int(lens[b])
        for s in range(splits):
            t0, t1 = s * int(per_split), min(n, (s + 1) * int(per_split))
            m, denom, acc = np.full(h, -np.inf, np.float32), np.zeros(h, np.float32), np.zeros((h, kv_lora), np.float32)
            for base in range(t0, t1, 16):
                ts = np.arange(base, base + 16)
                ok = ts < t1
                rows = np.where(ok[:, None], rows_all[table[b, np.minimum(ts, t1 - 1) // block_tokens] * block_tokens
                                                      + np.minimum(ts, t1 - 1) % block_tokens], 0.0)
                sc = np.where(ok[None, :], (qf[b] @ rows.T) * np.float32(scale_log2), -np.inf)
                m_new = np.maximum(m, sc.max(axis=1))
                corr = np.exp2(m - m_new)
                p = np.exp2(sc - m_new[:, None])
                denom = denom * corr + p.sum(axis=1)
                acc = acc * corr[:, None] + p @ rows[:, :kv_lora]
                m = m_new
            o[b, :, s, :] = acc
            ml[b, :, s, 0], ml[b, :, s, 1] = m, denom


class _Kernel:
    def __init__(self, name, broken=False, options=()):
        self.name = name
        self.calls = 0
        self.broken = broken  # a kernel that compiles but computes nothing (tests the fallback)
        self.options = options

    def __call__(self, grid, block, args):
        self.calls += 1
        if self.broken:
            return
        if self.name == "read_bytes":
            buf, n_vec, sink = args
            assert buf.nbytes // 16 == int(n_vec)
            np.bitwise_xor.reduce(np.asarray(buf).view(np.uint64))
        elif self.name == "paged_decode_split":
            _paged_split(grid, block, args)
        elif self.name == "paged_decode_combine":
            _paged_combine(grid, block, args)
        elif self.name == "paged_mla_split":
            _mla_split(grid, block, args, self.options)


class RawModule:
    def __init__(self, code, options=()):
        assert ("read_bytes" in code and "spin" in code and "noop" in code) or "paged_decode_split" in code \
            or "paged_mla_split" in code
        self.options = options
        self.broken = "BROKEN" in code
        self.kernels = {}

    def get_function(self, name):
        return self.kernels.setdefault(name, _Kernel(name, self.broken, self.options))


class Event:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def synchronize(self):
        pass


def get_elapsed_time(start, end):
    return (end.t - start.t) * 1e3


class _Graph:
    def __init__(self):
        self.launches = 0

    def launch(self, stream=None):
        self.launches += 1


class Stream:
    ptr = 0

    def __init__(self, non_blocking=False):
        self.capturing = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def begin_capture(self, mode=None):
        self.capturing = True

    def end_capture(self):
        assert self.capturing
        self.capturing = False
        return _Graph()

    def synchronize(self):
        pass


class Device:
    def __init__(self, index=0):
        self.index = index

    def use(self):
        pass

    def synchronize(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Generator:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def standard_normal(self, size=None, dtype=np.float64):
        return _wrap(self.rng.standard_normal(size, dtype=dtype))

    def integers(self, low, high=None, size=None, dtype=np.int64):
        return _wrap(self.rng.integers(low, high, size=size, dtype=dtype))


def make(device_count=1, name=b"NVIDIA H200"):
    """A module object that `import cupy` can return."""

    def memcpy_async(dst, src, size, kind, stream):
        assert kind == 3  # device to device
        ctypes.memmove(dst, src, size)

    props = {"name": name, "l2CacheSize": 1 << 20, "multiProcessorCount": 132, "clockRate": 1_980_000,
             "totalGlobalMem": 1 << 30, "major": 9, "minor": 0}
    runtime = types.SimpleNamespace(
        getDeviceCount=lambda: device_count, getDeviceProperties=lambda i: props,
        memGetInfo=lambda: (256 << 20, 1 << 30), driverGetVersion=lambda: 12060, runtimeGetVersion=lambda: 12060,
        memcpyAsync=memcpy_async,
    )
    cublas = types.SimpleNamespace(gemmEx=gemm_ex, getVersion=lambda handle: 120604)
    cuda = types.SimpleNamespace(
        runtime=runtime, cublas=cublas, Device=Device, Event=Event, Stream=Stream,
        get_elapsed_time=get_elapsed_time, get_current_stream=lambda: Stream(),
        device=types.SimpleNamespace(get_cublas_handle=lambda: 1),
    )
    module = types.ModuleType("cupy")
    module.__version__ = "13.3.0-fake"
    module.cuda = cuda
    module.RawModule = RawModule
    module.random = types.SimpleNamespace(default_rng=_Generator)
    module.get_default_memory_pool = lambda: types.SimpleNamespace(free_all_blocks=lambda: None)
    module.asarray = lambda a: _wrap(np.asarray(a))
    module.asnumpy = lambda a: np.array(a)
    module.zeros = lambda shape, dtype=np.float64: _wrap(np.zeros(shape, dtype=dtype))
    module.empty = lambda shape, dtype=np.float64: _wrap(np.empty(shape, dtype=dtype))
    module.matmul = lambda a, b: _wrap(np.matmul(a, b))
    module.exp = lambda a: _wrap(np.exp(a))
    module.swapaxes = np.swapaxes
    for dtype in ("float16", "float32", "float64", "uint8", "uint16", "uint32", "int32", "int64"):
        setattr(module, dtype, getattr(np, dtype))
    return module
