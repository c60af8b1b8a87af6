"""A half-minute check that the GPU path works before a long run: python -m kvlab.calibration.smoke

Each check prints OK or FAILED with the reason and the next one still runs: CuPy sees the device,
a bf16 GEMM through cublasGemmEx matches a float32 product, a batch of back-to-back GEMMs is timed
between one event pair, the paged decode-attention kernel compiles and matches the float64
reference on Qwen3-8B's and Llama-3.1-70B's head layouts, the MLA kernel compiles and matches its
float64 reference on DeepSeek-V3's latent layout (16 heads per GPU), a CUDA graph is captured and replayed,
NVML answers, and (where PyTorch is installed) torch._scaled_mm runs an fp8 GEMM.
Exit status 0 when every check passed, 1 otherwise.
"""

from __future__ import annotations

import sys
import time
import traceback
import types


def main() -> int:
    results: list[tuple[str, bool, str]] = []

    def check(name, fn):
        t0 = time.monotonic()
        try:
            detail = fn() or ""
            results.append((name, True, detail))
        except Exception as exc:
            detail = f"{type(exc).__name__}: {exc}"
            traceback.print_exc()
            results.append((name, False, detail))
        print(f"{'OK    ' if results[-1][1] else 'FAILED'} {name} ({time.monotonic() - t0:.1f} s): {results[-1][2]}", flush=True)

    from .backend import load_backend

    be = load_backend("cupy")
    print(be.device_info(), flush=True)
    import numpy as np

    def gemm():
        a, b, c = be.random((96, 320), "bf16", 1), be.random((320, 200), "bf16", 2), be.empty((96, 200), "bf16")
        be.gemm(a, b, c, "bf16")
        ref = be.to_host(a) @ be.to_host(b)
        err = float(np.abs(be.to_host(c) - ref).max() / np.abs(ref).max())
        assert err < 2e-2, f"max rel err {err}"
        return f"max rel err {err:.1e}"

    def batched():
        x, w, y = be.random((1, 4096), "bf16", 3), be.random((4096, 6144), "bf16", 4), be.empty((1, 6144), "bf16")
        be.time_batch(lambda i: be.gemm(x, w, y, "bf16"), 10)
        t = be.time_batch(lambda i: be.gemm(x, w, y, "bf16"), 200)
        return f"qkv 4096x6144 M=1: {t * 1e6:.2f} us per call (L2-resident), event floor {be.event_floor_s() * 1e6:.2f} us"

    def attention(model_id):
        from .benchmarks.attention import _check
        from .catalog import model

        ctx = types.SimpleNamespace(backend=be)
        r = _check(ctx, model(model_id), 5)
        assert r["passed"], r
        return f"max rel err {r['max_rel_err']:.1e}"

    def mla():
        from .benchmarks.attention import _check_mla, mla_heads
        from .catalog import model
        from .plan import full_plan

        ds = model("deepseek-v3")
        ctx = types.SimpleNamespace(backend=be)
        r = _check_mla(ctx, ds, mla_heads(ds, full_plan(("qwen3-8b",))), 6)
        assert r["passed"], r
        return f"max rel err {r['max_rel_err']:.1e}"

    def graph():
        walls = [be.graph_step_wall_s(256) for _ in range(5)]
        dev = be.graph_replay_s(256, 20)
        return f"256 empty kernels: wall {min(walls) * 1e6:.1f} us, device {dev * 1e6:.1f} us per replay"

    def nvml():
        from .telemetry import Telemetry

        t = Telemetry(0)
        assert t.available, t.reason
        return f"{t.static} | {t.sample()}"

    def fp8():
        import torch

        a = torch.randn(16, 4096, device="cuda").to(torch.float8_e4m3fn)
        w = torch.randn(6144, 4096, device="cuda").to(torch.float8_e4m3fn)
        one = torch.ones((), device="cuda")
        y = torch._scaled_mm(a, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        ref = a.float() @ w.float().t()
        err = float((y.float() - ref).abs().max() / ref.abs().max())
        assert err < 2e-2, err
        try:
            torch._scaled_mm(a[:1], w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            m1 = "M=1 accepted"
        except Exception as exc:
            m1 = f"M=1 refused ({str(exc)[:80]})"
        return f"torch {torch.__version__}: max rel err {err:.1e}; {m1}"

    check("bf16 gemmEx vs float32", gemm)
    check("back-to-back timing", batched)
    check("paged attention qwen3-8b (group 4)", lambda: attention("qwen3-8b"))
    check("paged attention llama-3.1-70b (group 8)", lambda: attention("llama-3.1-70b"))
    check("CUDA graph capture and replay", graph)
    check("NVML", nvml)
    check("fp8 via torch._scaled_mm", fp8)
    check("paged MLA attention deepseek-v3 (16 heads)", mla)  # last: a fault would break the CUDA context
    failed = [n for n, ok, _ in results if not ok]
    print(f"smoke: {len(results) - len(failed)} of {len(results)} passed" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
