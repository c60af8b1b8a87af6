"""Speculative decoding against published speed-ups (issue 35: within 20% at the stated acceptance).

    python -m tests.validation.spec_report [--profile published|textbook|NAME]

Each record of `spec_records.json` states a model, a GPU, the speculation (method, k) and the
acceptance it was measured at, as the mean tokens a step yields; kvlab solves for its per-token
acceptance (sim.speculative.acceptance_for_tokens_per_step), evaluates the scenario at one request
in flight and compares its `spec_speedup` (ITL without over ITL with) with the source's speed-up.
Error = predicted / measured - 1. No constant is fitted to these records. `--profile published`
(the default) runs each GPU on its `<gpu>-published` profile; TensorRT-LLM records use vLLM's
engine rules as the nearest proxy, as the perf report does.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from kvlab.sim import Scenario, evaluate
from kvlab.sim.profiles import published_profile
from kvlab.sim.speculative import acceptance_for_tokens_per_step

RECORDS = Path(__file__).with_name("spec_records.json")
ENGINES = {"vllm": "vllm", "sglang": "sglang", "tensorrt-llm": "vllm"}  # TensorRT-LLM: vLLM's rules as a proxy


@dataclass(frozen=True)
class Row:
    id: str
    acceptance: float  # kvlab's per-token acceptance for the stated accepted length
    measured: float
    predicted: float

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1.0


def load() -> dict:
    return json.loads(RECORDS.read_text(encoding="utf-8"))


def scenario_for(rec: dict, profile_choice: str) -> Scenario:
    k = rec["spec_tokens"]
    return Scenario(model=rec["model"], gpu=rec["gpu"], tp=rec["tp"], engine=ENGINES[rec["engine"]],
                    weight_dtype=rec["weight_dtype"], kv_dtype=rec["kv_dtype"],
                    profile=published_profile(rec["gpu"]) if profile_choice == "published" else profile_choice,
                    prompt_tokens=rec["input_tokens"], output_tokens=rec["output_tokens"], concurrency=rec["concurrency"],
                    spec_method=rec["spec_method"], spec_tokens=k,
                    spec_acceptance=acceptance_for_tokens_per_step(k, rec["accepted_tokens_per_step"]))


def rows(profile_choice: str = "published") -> list[Row]:
    out = []
    for rec in load()["records"]:
        s = scenario_for(rec, profile_choice)
        r = evaluate(s)
        if r.errors:
            raise ValueError(f"{rec['id']}: {r.errors}")
        out.append(Row(rec["id"], s.spec_acceptance, rec["speedup"], r.spec_speedup))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.validation.spec_report")
    p.add_argument("--profile", default="published", help="published (<gpu>-published), textbook, or a profile name")
    args = p.parse_args(argv)
    table = rows(args.profile)
    print(f"{'record':<50} {'accept':>6} {'measured':>8} {'kvlab':>6} {'error':>7}")
    for row in table:
        print(f"{row.id:<50} {row.acceptance:6.3f} {row.measured:7.2f}x {row.predicted:5.2f}x {row.error:+7.1%}")
    errors = sorted(abs(r.error) for r in table)
    print(f"{len(table)} records, profile {args.profile}: median |error| {errors[len(errors) // 2]:.1%}, "
          f"max {errors[-1]:.1%}; within 20%: {sum(e <= 0.20 for e in errors)} of {len(errors)}")
    for s in load()["skipped"]:
        print(f"skipped {s['id']}: {s['reason']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
