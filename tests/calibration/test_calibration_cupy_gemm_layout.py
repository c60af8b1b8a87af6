"""The CuPy backend's cuBLAS call computes a row-major C = A @ B.

No GPU here, so cuBLAS is replaced by a NumPy model of cublasGemmEx's column-major contract
(C_col[m, n] = A_col[m, k] @ B_col[k, n], with leading dimensions) over a table of fake device
pointers. The test pins the argument order, which is the easy thing to get wrong.
"""

import types

import numpy as np
from kvlab.calibration.backend_cupy import CUBLAS_COMPUTE_32F, CUDA_R_16BF, CupyBackend


class FakeDeviceArray:
    registry: dict = {}

    def __init__(self, array):
        self.host = array
        self.shape = array.shape
        self.data = types.SimpleNamespace(ptr=id(self))
        FakeDeviceArray.registry[id(self)] = self


def _column_major(flat, rows, cols, ld):
    return flat[: ld * cols].reshape(cols, ld).T[:rows, :]


def _fake_gemm_ex(calls):
    def gemm_ex(handle, transa, transb, m, n, k, alpha, a, atype, lda, b, btype, ldb, beta, c, ctype, ldc,
                compute, algo):
        calls.append((m, n, k, lda, ldb, ldc, atype, btype, ctype, compute))
        assert transa == transb == 0
        A = _column_major(FakeDeviceArray.registry[a].host.ravel(), m, k, lda)
        B = _column_major(FakeDeviceArray.registry[b].host.ravel(), k, n, ldb)
        C = FakeDeviceArray.registry[c].host
        result = A @ B  # m x n, stored column-major with leading dimension ldc
        flat = C.reshape(-1)
        for j in range(n):
            flat[j * ldc: j * ldc + m] = result[:, j]
    return gemm_ex


def test_gemm_argument_order_gives_row_major_product():
    calls = []
    be = object.__new__(CupyBackend)  # no GPU: skip __init__, wire only what gemm uses
    be._alpha = np.array(1.0, dtype=np.float32)
    be._beta = np.array(0.0, dtype=np.float32)
    be.cp = types.SimpleNamespace(cuda=types.SimpleNamespace(
        device=types.SimpleNamespace(get_cublas_handle=lambda: 7),
        cublas=types.SimpleNamespace(gemmEx=_fake_gemm_ex(calls)),
    ))
    rng = np.random.default_rng(0)
    m_tokens, k, n = 3, 5, 4
    a = FakeDeviceArray(rng.standard_normal((m_tokens, k)))
    b = FakeDeviceArray(rng.standard_normal((k, n)))
    c = FakeDeviceArray(np.zeros((m_tokens, n)))
    be.gemm(a, b, c, "bf16")
    np.testing.assert_allclose(c.host, a.host @ b.host, rtol=1e-12)
    assert calls == [(n, m_tokens, k, n, k, n, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F)]
