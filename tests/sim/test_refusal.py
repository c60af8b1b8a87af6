"""sim owns the verdict on whether anything runs (issue 33): `Result.refusal` names why nothing
runs, a refused result carries no latency or throughput, the command line prints the refusal
(exit 0: a valid question answered "nothing runs"), and the panels show what sim says.

Before, `kvlab --prompt-tokens 65536` (Qwen3-8B, context 40,960) printed an ITL of 27.8 ms with a
warning and the Python API returned numbers, while the panels showed dashes because the view
layer decided on its own."""

import pytest
from kvlab.sim import Scenario, evaluate
from kvlab.sim.cli import main

REFUSED = {
    "weights do not fit": Scenario(model="qwen3-32b", gpu_memory_utilization=0.72),
    "vLLM refuses to start": Scenario(model="qwen3-8b", engine="vllm", gpu="l4"),
    "longer than the context": Scenario(model="qwen3-8b", prompt_tokens=65536),
    "not one sequence fits": Scenario(model="qwen3-8b", gpu="l4", prompt_tokens=36000, output_tokens=4096),
}


@pytest.mark.parametrize("reason", REFUSED)
def test_a_refused_request_has_a_reason_and_no_latency(reason):
    r = evaluate(REFUSED[reason])
    assert r.ok and r.refusal is not None, r.warnings
    assert r.refusal["reason"] == reason
    assert r.refusal["message"].endswith("nothing runs.")
    assert r.batch == 0
    assert (r.itl_s, r.ttft_s, r.served_ttft_s, r.served_itl_s, r.decode_step_s) == (None,) * 5
    assert (r.decode_tokens_per_s, r.per_stream_tokens_per_s, r.served_tokens_per_s) == (0.0, 0.0, 0.0)
    assert r.to_dict()["refusal"] == r.refusal


def test_a_request_that_runs_is_not_refused():
    r = evaluate(Scenario())
    assert r.refusal is None and r.itl_s > 0 and r.ttft_s > 0
    assert (r.gpu_name, r.context_tokens, r.scenario["prompt_tokens"]) == ("NVIDIA H100 SXM5 80GB", 40960, 4096)


def test_the_command_line_prints_the_refusal_and_no_itl(capsys):
    assert main(["--prompt-tokens", "65536"]) == 0
    out = capsys.readouterr().out
    assert "Nothing runs (longer than the context)" in out
    assert "ITL" not in out and "TTFT" not in out
    assert main(["--prompt-tokens", "0"]) == 2  # bad input stays an error


def test_the_context_refusal_is_in_the_log_and_the_warnings():
    r = evaluate(REFUSED["longer than the context"])
    assert r.refusal["message"] in r.warnings
    assert "ERROR " + r.refusal["message"] in r.log
