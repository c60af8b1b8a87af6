"""`kvlab compare RESULT.json --gpu h100-sxm`: a measured benchmark run beside the engine's prediction.

    kvlab compare vllm-infqps-concurrency16-Llama-3.1-8B-Instruct-20261201-101010.json --gpu h100-sxm
    kvlab compare sglang_1204_1000_1024_128.jsonl --gpu h200 --tp 4 --model llama-3.1-70b
    kvlab compare results.jsonl --gpu l40s --replicas 4 --model qwen3-4b

The file states the client's run (sim.engine.compare); the options state what the file cannot:
the GPU, the tensor-parallel size and, where its model id matches no catalog model, the model.
Each run of the file is replayed by the engine with that client's sampler and arrivals, the
engine's own scheduler defaults and the GPU's measured or published profile, and printed as
measured, predicted and the signed error per figure. Bad input exits with status 2, naming the
option or the file's key.
"""

from __future__ import annotations

import json
import sys

from ..catalog import model_for_repo
from ..cliargs import Parser, parse, report
from ..fidelity import replay_line
from ..fields import ENGINE_FIELDS
from ..profiles import best_profile
from ..scenario import ENGINES, TP_SIZES, Scenario
from ..units import KV_DTYPES, WEIGHT_DTYPES
from ..userfile import FileProblem, read_bytes, shown_path
from .bench import BENCH_TOOLS, REPLAYED_DATASETS, engine_config, profile_note
from .bench_summary import bench_metrics
from .compare import MAX_RESULT_BYTES, METRICS, ResultFileProblem, error, largest_gap, read_runs
from .run import simulate

PROG = "kvlab compare"


def build_parser() -> Parser:
    p = Parser(prog=PROG, description="Replay a vllm bench serve (or SGLang bench_serving) result file in the engine "
               "and print measured beside predicted.")
    p.add_argument("result", metavar="RESULT", help="the tool's result file (.json, or .jsonl with one run a line)")
    p.add_argument("--gpu", help="catalog GPU id the run used (required)")
    p.add_option("tp", choices=TP_SIZES, integer_choices=True, default=1, help="tensor-parallel size")
    p.add_option("replicas", bound=ENGINE_FIELDS["replicas"], default=1,
                 help="engine instances behind one endpoint, each on tp GPUs (a router or gateway in front)")
    p.add_argument("--model", help="catalog model id (default: the file's model_id, matched to the catalog)")
    p.add_option("engine_version", help="engine release whose rules apply, major.minor")
    p.add_argument("--profile", help="efficiency profile (default: the GPU's measured profile, else its published one)")
    p.add_option("kv_dtype", choices=KV_DTYPES)
    p.add_option("weight_dtype", choices=WEIGHT_DTYPES)
    p.add_option("bench_tool", choices=BENCH_TOOLS, help="whose client wrote the file (default: read from its keys)")
    p.add_option("dataset_name", choices=REPLAYED_DATASETS, help="the run's dataset, which vLLM's files do not name (default: the "
                 "file's dataset_name; without one, every request at the file's mean lengths)")
    p.add_argument("--json", action="store_true", help="print one JSON object per run")
    return p


def _scenario(args, model: str) -> Scenario:
    s = Scenario(model=model, gpu=args.gpu, tp=args.tp)
    changes = {k: getattr(args, k) for k in ("engine_version", "kv_dtype", "weight_dtype") if getattr(args, k) is not None}
    return s.with_(profile=args.profile or best_profile(args.gpu), **changes)


def main(argv: list[str] | None = None) -> int:
    parsed = parse(build_parser(), list(sys.argv[1:] if argv is None else argv))
    report(PROG, parsed.notices, "note")
    if parsed.args is None:
        report(PROG, parsed.problems)
        return 2
    args, problems = parsed.args, list(parsed.problems)
    if not args.gpu:
        problems.append("--gpu: required: the catalog GPU the run used (kvlab --help lists them)")
    runs = []
    try:
        runs = read_runs(read_bytes(args.result, MAX_RESULT_BYTES), args.bench_tool, args.dataset_name)
    except FileProblem as e:
        problems += e.lines()
    except ResultFileProblem as e:
        problems += [f"{shown_path(args.result)}: {line}" for line in e.lines]
    models = []
    for run in runs:
        model = args.model or (model_for_repo(run.model_id) if run.model_id else None)
        if model is None:
            problems.append(f"--model: required: the file's model_id {run.model_id!r} matches no catalog model"
                            if run.model_id else "--model: required: the file names no model (SGLang's files do not)")
            break
        models.append(model)
    if problems:
        report(PROG, problems)
        return 2
    out = []
    for run, model in zip(runs, models, strict=True):
        scenario = _scenario(args, model)
        cfg = engine_config(scenario.with_(engine=run.bench_tool if run.bench_tool in ENGINES else "vllm"), run.spec,
                            args.replicas)
        r = simulate(cfg)
        if r.errors:
            report(PROG, [f"--{e['field'].replace('_', '-')}: {e['message']}" for e in r.errors])
            return 2
        predicted = bench_metrics(r).flat()
        errors = {k: error(predicted[k], v) for k, v in run.measured.items()}
        out.append((run, cfg, r, predicted, errors))
    if args.json:
        for run, cfg, _, predicted, errors in out:
            print(json.dumps({"model": cfg.scenario.model, "gpu": cfg.scenario.gpu, "tp": cfg.scenario.tp,
                              "profile": cfg.scenario.profile, "bench_tool": run.bench_tool, "lengths": run.lengths,
                              "measured": run.measured, "predicted": {k: predicted[k] for k in run.measured},
                              "error": errors, "largest_gap": largest_gap(errors)}, sort_keys=True))
        return 0
    for n, (run, cfg, r, predicted, errors) in enumerate(out, 1):
        s, spec = cfg.scenario, run.spec
        rate = "inf" if spec.request_rate is None else f"{spec.request_rate:g} req/s"
        conc = "" if spec.max_concurrency is None else f", at most {spec.max_concurrency} in flight"
        print(f"run {n} of {len(out)}: {spec.num_prompts:,} requests at rate {rate}{conc} ({run.bench_tool} client); {run.lengths}")
        print(f"predicted: {r.model_name} on {r.gpus} x {r.gpu_name} (tp {s.tp}), {s.engine} accounting, profile {s.profile}")
        if profile_note(s):
            print(profile_note(s))
        print(f"{'':<34}{'measured':>12}{'predicted':>12}{'error':>9}")
        for key, label in METRICS:
            if key in run.measured:
                print(f"{label:<34}{run.measured[key]:>12,.2f}{predicted[key]:>12,.2f}{errors[key]:>+9.0%}")
        print(f"largest gap: {largest_gap(errors)}")
        print(replay_line(r.model_family))
    return 0


if __name__ == "__main__":
    sys.exit(main())
