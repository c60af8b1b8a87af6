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


def _cap(lines: list[str]) -> list[str]:
    if len(lines) <= MAX_LINES:
        return lines
    half = MAX_LINES // 2
    return lines[:half] + [f"... {len(lines) - 2 * half:,} lines omitted ..."] + lines[-half:]


def _rate(buckets: list[float], i: int, width_s: float) -> float:
    return buckets[i] / width_s if i < len(buckets) else 0.0


def vllm_lines(metrics, disaggregated: bool) -> list[str]:
    width = metrics.log_interval_s
    lines = []
    quiet: dict[int, bool] = {}
    for (t, idx, running, waiting, _swapped, usage, _tokens, preemptions, hit, role) in metrics.snapshots:
        st = metrics.inst[idx]
        i = int(round(t / width)) - 1
        prompt = _rate(st.log_prompt, i, width)
        gen = _rate(st.log_generation, i, width)
        idle = prompt == 0 and gen == 0 and running == 0 and waiting == 0
        if idle and quiet.get(idx):
            continue  # vLLM demotes repeated idle lines to DEBUG
        quiet[idx] = idle
        pre = f"Preemptions: {preemptions}, " if preemptions else ""
        tag = f" [{role}]" if disaggregated else ""
        lines.append(f"INFO [t={t:9.1f}s] Engine {idx:03d}{tag}: Avg prompt throughput: {prompt:.1f} tokens/s, "
                     f"Avg generation throughput: {gen:.1f} tokens/s, Running: {running} reqs, Waiting: {waiting} reqs, "
                     f"{pre}GPU KV cache usage: {usage * 100:.1f}%, Prefix cache hit rate: {hit * 100:.1f}%")
    return _merge(lines, metrics.warnings)


def _merge(a: list[str], b: list[str]) -> list[str]:
    def t(line: str) -> float:
        return float(line.split("[t=", 1)[1].split("s]", 1)[0])
    return _cap(sorted(a + b, key=t))


def sglang_lines(metrics) -> list[str]:
    width = metrics.log_interval_s
    entries = []
    for (t, idx, running, waiting, _swapped, usage, tokens, _pre, _hit, role) in metrics.snapshots:
        if running == 0 or role == "prefill":
            continue
        st = metrics.inst[idx]
        gen = _rate(st.log_generation, int(round(t / width)) - 1, width)
        entries.append((t, f"[t={t:9.1f}s] [engine {idx}] Decode batch. #running-req: {running}, #token: {tokens}, "
                           f"token usage: {usage:.2f}, gen throughput (token/s): {gen:.2f}, #queue-req: {waiting}, "))
    for idx, st in enumerate(metrics.inst):
        for (t, new_seqs, new_tokens, cached, usage, running, waiting) in st.prefill_lines.values():
            entries.append((t, f"[t={t:9.1f}s] [engine {idx}] Prefill batch. #new-seq: {new_seqs}, #new-token: {new_tokens}, "
                               f"#cached-token: {cached}, token usage: {usage:.2f}, #running-req: {running}, #queue-req: {waiting}, "))
    entries.sort(key=lambda e: e[0])
    return _cap([line for _, line in entries])
