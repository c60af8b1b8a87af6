"""Without CuPy, or without a device, the suite says so clearly instead of failing obscurely."""

import sys
import types

import pytest
from kvlab.calibration import cli
from kvlab.calibration.backend import CUPY_MISSING, NO_DEVICE, BackendUnavailable, NumpyBackend
from kvlab.calibration.cli import load_backend


def test_package_imports_without_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    import importlib

    import kvlab.calibration.backend_cupy as bc

    importlib.reload(bc)  # importing the CuPy backend module must not import cupy


def test_missing_cupy_gives_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` raise ImportError
    with pytest.raises(BackendUnavailable) as err:
        load_backend("cupy")
    assert "CuPy is not installed: pip install cupy-cuda12x" in str(err.value)
    assert "--backend numpy" in str(err.value)


def test_missing_cupy_through_the_cli(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "cupy", None)
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert CUPY_MISSING in err


def _fake_cupy(get_device_count):
    runtime = types.SimpleNamespace(getDeviceCount=get_device_count)
    return types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime), __version__="13.0.0")


def test_no_device_gives_a_clear_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(lambda: 0))
    with pytest.raises(BackendUnavailable) as err:
        load_backend("cupy")
    assert str(err.value) == NO_DEVICE
    assert "no CUDA device found" in str(err.value)


def test_cuda_error_on_device_query_is_reported_as_no_device(monkeypatch):
    def fail():
        raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")

    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(fail))
    with pytest.raises(BackendUnavailable) as err:
        load_backend("cupy")
    assert "no CUDA device found" in str(err.value)
    assert "cudaErrorNoDevice" in str(err.value)


def test_device_index_out_of_range(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(lambda: 2))
    with pytest.raises(BackendUnavailable, match="GPU 5 requested but 2 found"):
        load_backend("cupy", device_index=5)


def test_unknown_backend():
    with pytest.raises(BackendUnavailable, match="unknown backend"):
        load_backend("opencl")


def test_numpy_backend_basics():
    be = NumpyBackend()
    a = be.random((3, 4), "bf16", 1)
    b = be.random((4, 5), "bf16", 2)
    c = be.empty((3, 5), "bf16")
    be.gemm(a, b, c, "bf16")
    assert c == pytest.approx(a @ b)
    assert (a != 0).all()  # random, not zero
    raw = be.random_bytes(1000, 3)
    assert raw.nbytes == 1000 and (raw != 0).all()
    dst = be.random_bytes(1000, 4)
    be.copy(dst, raw)
    assert (dst == raw).all()
    times = be.time_calls(lambda i: None, 4)
    assert len(times) == 4 and all(t >= 0 for t in times)
    with pytest.raises(BackendUnavailable):
        be.step_skeleton_s(10, use_graph=True)
    assert be.step_skeleton_s(10, use_graph=False) > 0
