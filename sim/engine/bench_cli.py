"""`kvlab engine` with a benchmark client's options: the run `vllm bench serve` would make.

    kvlab engine --model llama-3.1-8b --gpu h100-sxm --random-input-len 1024 --random-output-len 128 \\
        --num-prompts 500 --max-concurrency 16 --bench
    kvlab engine --model qwen3-8b --gpu h200 --request-rate 8 --burstiness 0.5 --bench --save-result

The client's options keep vLLM's names (sim.fields.BENCH_FIELDS); `--input-len` and `--output-len`
are its shorthands for the random dataset's. They replace the preset's workload, so the options
that describe that workload (`--num-requests`, `--rate-per-s`, `--arrival` ...) are refused beside
them. Without `--preset`, the engine's own scheduler defaults apply, the accounting follows
`--bench-tool`, and the GPU's measured or published efficiency profile is used.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import fields
from datetime import datetime

from ..cliargs import Check, Parser, flag
from ..evaluate import evaluate
from ..fields import BENCH_FIELDS, shown
from ..profiles import best_profile
from ..scenario import Scenario
from .bench import (
    BENCH_TOOLS,
    DATASETS,
    BenchSpec,
    custom_lengths,
    engine_config,
    profile_note,
    read_lengths,
    validate_spec,
    workload,
)
from .bench_summary import bench_metrics, result_json, summary_lines
from .config import Cluster, EngineConfig, KVManagement, Scheduling, Workload

ENGINE_GROUPS = ("scenario", "workload", "scheduling", "kv", "cluster")

# BenchSpec fields the engine's own options already carry (same name, same meaning).
SHARED = ("max_concurrency", "seed")
SHORTHANDS = {"input_len": "random_input_len", "output_len": "random_output_len"}
OWN = tuple(n for n in BENCH_FIELDS if n not in SHARED and n != "request_rate")


def add_options(p: Parser) -> None:
    """The client's options, after the engine's (which hold --max-concurrency and --seed)."""
    g = p.add_argument_group("benchmark client (vllm bench serve's options; they replace the preset's workload)")
    g.add_argument("--bench-tool", metavar="{" + ",".join(BENCH_TOOLS) + "}",
                   help="whose client to model: its length sampler, its arrivals and its engine (default vllm)")
    g.add_argument("--dataset-name", dest="dataset_name", metavar="{" + ",".join(DATASETS) + "}", help="dataset (default random)")
    p.checks["bench_tool"] = Check("bench_tool", None, BENCH_TOOLS)
    p.checks["dataset_name"] = Check("dataset_name", None, DATASETS)
    for name in OWN:
        b = BENCH_FIELDS[name]
        kind = "integer" if b.integer else "number"
        g.add_argument(flag(name), dest=name, metavar="N" if b.integer else "X", help=f"{b.help} ({kind})")
        p.checks[name] = Check(name, b, None)
    for short, name in SHORTHANDS.items():
        g.add_argument(flag(short), dest=name, help=argparse.SUPPRESS)
    g.add_argument("--dataset-path", metavar="PATH", help="custom dataset: a JSONL file, one request a line: "
                   '{"prompt_tokens": N, "output_tokens": M} (output_tokens optional)')
    g.add_argument("--request-rate", dest="request_rate", metavar="X|inf", help=BENCH_FIELDS["request_rate"].help)
    g.add_argument("--bench", action="store_true", help="print the summary block vllm bench serve prints")
    g.add_argument("--save-result", action="store_true", help="write the run as vllm bench serve --save-result does")
    g.add_argument("--result-filename", metavar="PATH", help="file for --save-result (default: vLLM's naming)")


def wanted(args: argparse.Namespace) -> bool:
    return (args.bench or args.save_result or args.request_rate is not None or args.dataset_path is not None
            or any(getattr(args, n) is not None for n in OWN + ("bench_tool", "dataset_name")))


def _custom(spec: BenchSpec, path: str | None) -> tuple[BenchSpec, list[str]]:
    """`spec` with the custom dataset's lengths read from `path`, or the problems."""
    if path is None:
        return spec, []
    if spec.dataset_name != "custom":
        return spec, ["--dataset-path: only with --dataset-name custom (kvlab ships the other datasets' lengths)"]
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(64 * 2**20 + 1)
    except (OSError, UnicodeDecodeError) as e:
        return spec, [f"--dataset-path: cannot read {shown(path)}: {getattr(e, 'strerror', None) or e}"]
    if len(text) > 64 * 2**20:
        return spec, [f"--dataset-path: {shown(path)} is over 64 MiB"]
    rows, problems = read_lengths(text)
    if problems:
        return spec, [f"--dataset-path: {shown(path)}: {p}" for p in problems]
    return custom_lengths(spec, rows), []


def _rate(text: str | None) -> tuple[float | None, list[str]]:
    if text is None or text.strip().lower() == "inf":
        return None, []
    value, problem = Check("request_rate", BENCH_FIELDS["request_rate"], None).read(text)
    return value, [f"--request-rate: {problem} or inf"] if problem else []


def spec_from_args(args: argparse.Namespace, preset_workload: Workload) -> tuple[BenchSpec | None, list[str]]:
    """The client's run, or the problems: workload options beside the client's, bad values."""
    clash = [f.name for f in fields(Workload) if f.name not in SHARED + ("trace",) and getattr(args, f.name, None) is not None]
    problems = [f"{flag(n)}: describes the preset's workload; not with the benchmark client's options "
                f"(--num-prompts, --request-rate, --random-input-len ...)" for n in clash]
    rate, more = _rate(args.request_rate)
    problems += more
    changes = {n: getattr(args, n) for n in OWN + ("bench_tool", "dataset_name") + SHARED if getattr(args, n) is not None}
    spec = BenchSpec(request_rate=rate, seed=preset_workload.seed).with_(**changes)
    issues = validate_spec(spec)
    unread: list[str] = []
    if not any(i.field in ("num_prompts", "seed", "custom_output_len") for i in issues):  # what reading the file needs
        spec, unread = _custom(spec, args.dataset_path)
        issues = validate_spec(spec)
    problems += unread + [f"{flag(i.field)}: {i.message}" for i in issues if not (unread and i.field == "dataset_path")]
    return (None, problems) if problems else (spec, [])


def config_for(spec: BenchSpec, cfg: EngineConfig, args: argparse.Namespace) -> EngineConfig:
    """`cfg` (the preset with the command line's scenario options) running the client's workload.
    Without --preset: the tool's engine with its default scheduling (bench.engine_config) on the
    GPU's measured or published profile; the engine options given on the command line apply."""
    if args.preset is None:
        base = Scenario(model=cfg.scenario.model, gpu=cfg.scenario.gpu, engine=spec.bench_tool)
        chosen = {f.name: getattr(cfg.scenario, f.name) for f in fields(Scenario)
                  if getattr(args, f.name, None) is not None}
        scenario = base.with_(**chosen)
        if args.profile is None:
            scenario = scenario.with_(profile=best_profile(scenario.gpu))
        given = {f.name: getattr(args, f.name) for group in (Scheduling, KVManagement, Cluster, EngineConfig)
                 for f in fields(group) if f.name not in ENGINE_GROUPS and getattr(args, f.name, None) is not None}
        return engine_config(scenario, spec).with_(**given)
    return cfg.with_(workload=workload(spec))


def _default_name(spec: BenchSpec, model: str, now: datetime) -> str:
    """The file name the client would choose: vLLM's "{backend}-{rate}qps[-concurrency{c}]-{model}-{time}.json",
    SGLang's "{backend}_{MMDD}_{num_prompts}_{in}_{out}.jsonl" (or "..._sharegpt.jsonl"), with kvlab as the backend."""
    if spec.bench_tool == "sglang":
        lengths = (f"{spec.random_input_len}_{spec.random_output_len}" if spec.dataset_name == "random" else "sharegpt")
        return f"kvlab_{now:%m%d}_{spec.num_prompts}_{lengths}.jsonl"
    return (f"kvlab-{'inf' if spec.request_rate is None else spec.request_rate}qps"
            f"{'' if spec.max_concurrency is None else f'-concurrency{spec.max_concurrency}'}-{model}-{now:%Y%m%d-%H%M%S}.json")


def print_run(r, spec: BenchSpec, cfg: EngineConfig, args: argparse.Namespace) -> list[str]:
    """Print the run's summary (and save it); the problems writing the file, if any."""
    s = cfg.scenario
    m = bench_metrics(r)
    print(f"kvlab engine: {r.model_name} on {r.gpus} x {r.gpu_name} (tp {s.tp}), {s.engine} accounting, "
          f"profile {s.profile}, {spec.bench_tool} client, {spec.dataset_name} dataset")
    note = profile_note(s)
    if note:
        print(note)
    # The tokens a verify step yields on average (SGLang prints it as "Accept length"): sim's figure,
    # None without speculative decoding.
    accept = evaluate(s).spec_tokens_per_step
    print("\n".join(summary_lines(m, spec, accept)))
    if args.save_result:
        now = datetime.now()
        name = args.result_filename or _default_name(spec, s.model, now)
        kvlab = {"model": s.model, "gpu": s.gpu, "tp": s.tp, "engine": s.engine, "engine_version": s.engine_version,
                 "profile": s.profile, "tool": spec.bench_tool, "dataset_name": spec.dataset_name,
                 "random_input_len": spec.random_input_len, "random_output_len": spec.random_output_len,
                 "random_range_ratio": spec.random_range_ratio, "seed": spec.seed}
        try:
            with open(name, "w", encoding="utf-8") as f:
                json.dump(result_json(m, spec, model_id=s.model, date=f"{now:%Y%m%d-%H%M%S}", kvlab=kvlab, accept_length=accept), f)
                f.write("\n")  # SGLang's file is JSONL, one run a line; vLLM's reader takes the same file
        except OSError as e:
            return [f"--result-filename: cannot write {shown(name)}: {e.strerror or e}"]
        print(f"saved {name}")
    return []
