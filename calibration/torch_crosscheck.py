"""PyTorch cross-checks on a GPU box that has PyTorch: fp8 GEMMs and prefill attention.

    python -m kvlab.calibration.torch_crosscheck PROFILE.json [--budget-s 50]

CuPy reaches cuBLAS through cublasGemmEx, which takes no fp8 operands, and has no fused attention
kernel; PyTorch has both, so where it is installed this adds to a measured profile:
- fp8 (e4m3) projection GEMMs of the profile's models through torch._scaled_mm (cuBLASLt, per-tensor
  scales, bf16 out), same shapes and M grid as the bf16 sweep -> gemm_efficiency[model]["fp8"] and
  fp8_compute_efficiency (the default model's curve), over the datasheet fp8 peak;
- bf16 torch.matmul at a few M for the first model, beside the CuPy numbers (recorded, not fitted);
- causal prefill attention through torch.nn.functional.scaled_dot_product_attention (FlashAttention
  or cuDNN, whichever PyTorch picks), Qwen3-8B heads (32 q, 8 kv, head_dim 128), bf16, sequence
  lengths 1k-16k -> prefill_attention_efficiency (the best, over the datasheet bf16 peak), with the
  causal FLOPs 4 x (L (L + 1) / 2) x q_heads x head_dim.
Timing: many back-to-back calls between one pair of CUDA events, median of 5 batches, rotating
weights over 4 x L2. The profile is rewritten only if it still validates; every step is noted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from .catalog import datasheet, load_models
from .fit import gemm_model_curves, round_sig
from .profile import write_json
from .schema import validate_profile

PREFILL_LENGTHS = (1024, 4096, 8192, 16384)


def _bench(torch, call, target_s: float = 0.03, batches: int = 5, max_calls: int = 200) -> float:
    """Median seconds per call over `batches` batches of back-to-back calls between one event pair."""
    call(0)
    call(1)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    call(2)
    torch.cuda.synchronize()
    est = max(time.perf_counter() - t0, 1e-6)
    n = max(1, min(max_calls, int(target_s / batches / est)))
    out = []
    for b in range(batches):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(int(min(n * 20e-6, 0.05) * 1.5e9))  # queue work first, as the CuPy backend spins
        s.record()
        for i in range(n):
            call(b * n + i)
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e) * 1e-3 / n)
    return statistics.median(out)


def _time_fp8(torch, m, shape, ws, one) -> float:
    x = (torch.randn(m, shape.k, device="cuda") * 0.1).to(torch.float8_e4m3fn)
    n_w = len(ws)
    return _bench(torch, lambda i: torch._scaled_mm(x, ws[i % n_w].t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16))


def fp8_points(torch, model, tokens, l2_bytes: int, deadline: float, log) -> tuple[list[dict], list[str]]:
    points, notes = [], []
    f8 = torch.float8_e4m3fn
    one = torch.ones((), device="cuda", dtype=torch.float32)
    for shape in model.projection_shapes():
        if shape.name == "lm_head":
            continue
        n_w = max(1, min(16, -(-4 * l2_bytes // (shape.k * shape.n))))
        # W stored [N, K] row-major, passed transposed: the column-major operand _scaled_mm wants.
        ws = [(torch.randn(shape.n, shape.k, device="cuda") * 0.1).to(f8) for _ in range(n_w)]
        for m in tokens:
            if time.monotonic() > deadline:
                notes.append(f"fp8 {model.id} {shape.name}: budget spent at M={m}")
                return points, notes
            padded = None
            try:
                t = _time_fp8(torch, m, shape, ws, one)
            except Exception as exc:  # cuBLASLt fp8 wants dimensions divisible by 16 on some versions
                padded = -(-m // 16) * 16
                try:
                    t = _time_fp8(torch, padded, shape, ws, one)
                except Exception as exc2:
                    notes.append(f"fp8 {model.id} {shape.name} M={m}: torch._scaled_mm failed ({type(exc2).__name__}: "
                                 f"{str(exc2)[:120]})")
                    continue
                if m == tokens[0]:
                    notes.append(f"fp8 {model.id} {shape.name}: M not a multiple of 16 refused ({str(exc)[:80]}); "
                                 "such M timed padded to the next multiple of 16 (as an engine would pad)")
            flops = 2.0 * m * shape.k * shape.n
            points.append({"model": model.id, "shape": shape.name, "dtype": "fp8", "m": m, "k": shape.k, "n": shape.n,
                           "flops": flops, "time_s": t, "flops_per_s": flops / t, "path": "torch._scaled_mm",
                           "padded_m": padded})
        del ws
        torch.cuda.empty_cache()
        log(f"  fp8 {model.id} {shape.name}: {len([p for p in points if p['shape'] == shape.name])} points")
    return points, notes


def bf16_points(torch, model, tokens, l2_bytes: int) -> list[dict]:
    out = []
    for shape in model.projection_shapes():
        if shape.name == "lm_head":
            continue
        n_w = max(1, min(16, -(-4 * l2_bytes // (2 * shape.k * shape.n))))
        ws = [torch.randn(shape.k, shape.n, device="cuda", dtype=torch.bfloat16) for _ in range(n_w)]
        for m in tokens:
            x = torch.randn(m, shape.k, device="cuda", dtype=torch.bfloat16)
            t = _bench(torch, lambda i, x=x, ws=ws, n_w=n_w: torch.matmul(x, ws[i % n_w]))
            flops = 2.0 * m * shape.k * shape.n
            out.append({"model": model.id, "shape": shape.name, "dtype": "bf16", "m": m, "time_s": t,
                        "flops_per_s": flops / t, "path": "torch.matmul"})
        del ws
        torch.cuda.empty_cache()
    return out


def prefill_points(torch, model, deadline: float) -> list[dict]:
    F = torch.nn.functional
    hq, hkv, d = model.num_attention_heads, model.num_key_value_heads, model.head_dim
    out = []
    for n in PREFILL_LENGTHS:
        if time.monotonic() > deadline:
            break
        q = torch.randn(1, hq, n, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(1, hkv, n, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(1, hkv, n, d, device="cuda", dtype=torch.bfloat16)
        try:
            t = _bench(torch, lambda i, q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                                      enable_gqa=True), max_calls=50)
        except TypeError:  # an older PyTorch without enable_gqa: repeat K and V per group
            k2, v2 = k.repeat_interleave(hq // hkv, 1), v.repeat_interleave(hq // hkv, 1)
            t = _bench(torch, lambda i, q=q, k2=k2, v2=v2: F.scaled_dot_product_attention(q, k2, v2, is_causal=True),
                       max_calls=50)
        flops = 4.0 * (n * (n + 1) / 2) * hq * d
        out.append({"model": model.id, "tokens": n, "time_s": t, "flops": flops, "flops_per_s": flops / t})
    return out


def merge(profile: dict, section: dict, sheet) -> tuple[dict, list[str]]:
    """A copy of `profile` with the cross-check's fits merged in (fp8 curves of whole models,
    fp8_compute_efficiency, prefill_attention_efficiency) and section kept under
    measurements.torch_crosscheck; (profile, the notes added). Pure: refit.py reuses it."""
    pts = section.get("fp8_points", [])
    notes = list(section.get("notes", []))
    fields_notes: list[str] = []
    curves = gemm_model_curves(pts, "fp8", sheet.fp8_dense_flops, fields_notes) if sheet.fp8_dense_flops else {}
    updated = json.loads(json.dumps(profile))
    for model_id, curve in curves.items():
        updated.setdefault("gemm_efficiency", {}).setdefault(model_id, {})["fp8"] = curve
    order = list(profile.get("gemm_efficiency", {})) + [m for m in curves if m not in profile.get("gemm_efficiency", {})]
    default = next((m for m in order if m in curves), None)
    version = section.get("torch_version", "?")
    if default:
        updated["fp8_compute_efficiency"] = curves[default]
        fields_notes.append(f"fp8_compute_efficiency: {default}'s fp8 projection GEMMs through PyTorch {version} "
                            f"torch._scaled_mm (cuBLASLt), over {sheet.fp8_dense_flops / 1e12:.0f} TFLOP/s")
        updated["notes"] = [x for x in updated.get("notes", []) if not x.startswith("fp8_compute_efficiency: not measured")]
    pre = section.get("prefill_attention", [])
    if pre:
        best = max(pre, key=lambda q: q["flops_per_s"])
        eff = best["flops_per_s"] / sheet.bf16_dense_flops
        if eff > 1:
            fields_notes.append(f"prefill_attention_efficiency: {eff:.3f} above 1 capped")
            eff = 1.0
        updated["prefill_attention_efficiency"] = round_sig(eff)
        fields_notes.append(f"prefill_attention_efficiency: causal SDPA (PyTorch {version}) on qwen3-8b heads, best "
                            f"{best['flops_per_s'] / 1e12:.0f} TFLOP/s at {best['tokens']} tokens over "
                            f"{sheet.bf16_dense_flops / 1e12:.1f} TFLOP/s")
    fields_notes = [f"torch cross-check: {x}" for x in notes] + fields_notes
    updated["notes"] = updated.get("notes", []) + fields_notes
    updated.setdefault("measurements", {})["torch_crosscheck"] = section
    updated["provenance"].setdefault("fit_notes", []).extend(fields_notes)
    return updated, fields_notes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kvlab.calibration.torch_crosscheck")
    p.add_argument("profile", type=Path)
    p.add_argument("--budget-s", type=float, default=50.0)
    args = p.parse_args(argv)
    t_start = time.monotonic()
    deadline = t_start + args.budget_s
    try:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
    except Exception as exc:
        print(f"torch cross-check: PyTorch with CUDA is not available here ({exc}); nothing added")
        return 0
    profile = json.loads(args.profile.read_text())
    sheet = datasheet(profile["gpu"])
    catalog = load_models()
    # dense models only: projection_shapes() are a dense layer's; an MoE layer's fp8 experts are not timed here
    models = [catalog[m] for m in profile.get("gemm_efficiency", {}) if m in catalog and not catalog[m].moe
              and not catalog[m].mla] or [catalog["qwen3-8b"]]
    tokens = sorted({int(m) for m, _ in profile["gemm_efficiency"][models[0].id]["bf16"]}) if profile.get(
        "gemm_efficiency") else [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 16384]
    l2 = torch.cuda.get_device_properties(0).L2_cache_size

    def log(msg: str) -> None:
        print(f"[{time.monotonic() - t_start:6.1f} s] {msg}", flush=True)

    section: dict = {"torch_version": torch.__version__, "device": torch.cuda.get_device_name(0),
                     "cublaslt_fp8": "torch._scaled_mm, e4m3 x e4m3, per-tensor scales, bf16 out"}
    notes: list[str] = []
    log(f"PyTorch {torch.__version__} on {section['device']}")
    pts, n = [], []
    try:
        section["prefill_attention"] = prefill_points(torch, catalog["qwen3-8b"], t_start + 0.3 * args.budget_s)
        log(f"  prefill attention: {[(q['tokens'], round(q['flops_per_s'] / 1e12)) for q in section['prefill_attention']]} TFLOP/s")
    except Exception as exc:
        section["prefill_attention_error"] = f"{type(exc).__name__}: {exc}"
        log(f"  prefill attention failed: {exc}")
    try:
        section["bf16_matmul"] = bf16_points(torch, models[0], [1, 16, 256, 4096], l2)
    except Exception as exc:
        section["bf16_matmul_error"] = f"{type(exc).__name__}: {exc}"
    if sheet.fp8_dense_flops:
        for model in models:
            if time.monotonic() > deadline:
                notes.append(f"fp8: {model.id} not measured: cross-check budget of {args.budget_s:.0f} s spent")
                continue
            try:
                more, n = fp8_points(torch, model, tokens, l2, deadline, log)
            except Exception as exc:
                n = [f"fp8 {model.id}: failed: {type(exc).__name__}: {exc}"]
                more = []
            pts += more
            notes += n
    section["fp8_points"] = pts
    section["notes"] = notes
    updated, fields_notes = merge(profile, section, sheet)
    errors = validate_profile(updated, file_stem=args.profile.stem)
    for line in fields_notes:
        log(f"  note: {line}")
    if errors:
        bad = args.profile.with_name(args.profile.stem + ".torch.json.invalid")
        write_json(bad, updated)
        log(f"the merged profile does not validate ({errors[:3]}); {args.profile} left as it was, merged copy at {bad}")
        return 1
    write_json(args.profile, updated)
    log(f"merged into {args.profile}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
