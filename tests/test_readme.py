"""README.md tells the truth: its sample CLI output is what the CLI prints, and its Python
example's figures are sim's."""

import re
import subprocess
import sys
from pathlib import Path

from kvlab.sim import Scenario, evaluate

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_cli_sample_output_is_current():
    command = ".venv/bin/kvlab --model qwen3-8b --gpu h100-sxm --prompt 32768 --kv-dtype fp8"
    assert command in README
    sample = re.search(r"^```\n(Usable memory:.*?)^```", README, flags=re.S | re.M).group(1)
    out = subprocess.run([sys.executable, "-m", "kvlab.sim", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--prompt", "32768",
                          "--kv-dtype", "fp8"], capture_output=True, text=True, check=True).stdout
    log = out.split("\n\n")[0]
    assert sample.strip() == log.strip()


def test_python_example_figures():
    r = evaluate(Scenario(model="qwen3-8b", gpu="h100-sxm", prompt_tokens=32768, kv_dtype="fp8"))
    assert "r.max_sequences, r.batch, r.itl_s      # (24, 24, 0.0279...)" in README
    assert (r.max_sequences, r.batch) == (24, 24)
    assert f"{r.itl_s:.4f}" == "0.0279"


def test_bad_input_line_is_current():
    line = "kvlab: error: --prompt: must be between 1 and 2,097,152, got -1"
    assert line in README
    err = subprocess.run([sys.executable, "-m", "kvlab.sim", "--prompt", "-1"], capture_output=True, text=True)
    assert err.returncode == 2 and err.stderr.strip() == line
