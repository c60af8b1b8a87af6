"""Engine log lines as vLLM and SGLang print them, written from the metrics' snapshots.

vLLM (V1 `LoggingStatLogger`, every 10 s by default):

    Engine 000: Avg prompt throughput: 9120.4 tokens/s, Avg generation throughput: 310.2 tokens/s,
    Running: 12 reqs, Waiting: 3 reqs, GPU KV cache usage: 41.3%, Prefix cache hit rate: 0.0%

kvlab adds `Preemptions: P,` (cumulative, per engine) before the cache usage once the engine has
preempted anything -- the figure to look for when latency falls off a cliff. SGLang prints a
"Prefill batch." line per prefill batch (kvlab keeps the first of each interval) and a
"Decode batch." line every `decode_log_interval` steps (kvlab: one per interval). Each line is
prefixed with the simulated time, as a log file's timestamps would be.
"""

from __future__ import annotations

MAX_LINES = 20_000


def _cap(lines: list[str], total: int | None = None) -> list[str]:
    """At most MAX_LINES: the first and last half, and how many were left out. `total` counts the
    lines the metrics did not keep (they keep the first and last LOG_KEEP of each stream)."""
    total = len(lines) if total is None else total
    if total <= MAX_LINES:
        return lines
    half = MAX_LINES // 2
    return lines[:half] + [f"... {total - 2 * half:,} lines omitted ..."] + lines[-half:]


def vllm_lines(metrics, disaggregated: bool) -> list[str]:
    lines = []
    snaps = metrics.vllm_snapshots
    for (t, idx, running, waiting, usage, _tokens, preemptions, hit, role, prompt, gen) in snaps.items():  # by time, engine
        pre = f"Preemptions: {preemptions}, " if preemptions else ""
        tag = f" [{role}]" if disaggregated else ""
        lines.append(f"INFO [t={t:9.1f}s] Engine {idx:03d}{tag}: Avg prompt throughput: {prompt:.1f} tokens/s, "
                     f"Avg generation throughput: {gen:.1f} tokens/s, Running: {running} reqs, Waiting: {waiting} reqs, "
                     f"{pre}GPU KV cache usage: {usage * 100:.1f}%, Prefix cache hit rate: {hit * 100:.1f}%")
    warnings = metrics.warnings
    return _merge(lines, warnings.items(), snaps.count + warnings.count)


def _merge(a: list[str], b: list[str], total: int) -> list[str]:
    def t(line: str) -> float:
        return float(line.split("[t=", 1)[1].split("s]", 1)[0])
    return _cap(sorted(a + b, key=t), total)


def sglang_lines(metrics) -> list[str]:
    entries = []
    decode, prefill = metrics.sglang_decode, metrics.prefill_lines
    for (t, idx, running, waiting, usage, tokens, gen) in decode.items():
        entries.append((t, 0, idx, f"[t={t:9.1f}s] [engine {idx}] Decode batch. #running-req: {running}, #token: {tokens}, "
                                   f"token usage: {usage:.2f}, gen throughput (token/s): {gen:.2f}, #queue-req: {waiting}, "))
    for (t, idx, new_seqs, new_tokens, cached, usage, running, waiting) in prefill.items():
        entries.append((t, 1, idx, f"[t={t:9.1f}s] [engine {idx}] Prefill batch. #new-seq: {new_seqs}, #new-token: {new_tokens}, "
                                   f"#cached-token: {cached}, token usage: {usage:.2f}, #running-req: {running}, #queue-req: {waiting}, "))
    # By time; at one time decode lines first, then prefill lines by engine (stable within each).
    entries.sort(key=lambda e: (e[0], e[1], e[2]))
    return _cap([e[3] for e in entries], decode.count + prefill.count)
