"""README.md tells the truth: every `kvlab` command it shows runs, its sample CLI output is what
the CLI prints (all of it), and its Python example's figures are sim's."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

from kvlab.sim import Scenario, evaluate

from kvlab.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
SAMPLE_COMMAND = ".venv/bin/kvlab --model qwen3-8b --gpu h100-sxm --prompt-tokens 32768 --kv-dtype fp8"


def readme_kvlab_commands() -> list[list[str]]:
    """The arguments of every `.venv/bin/kvlab` line in the README's bash blocks (comments removed)."""
    blocks = re.findall(r"^```bash\n(.*?)^```", README, flags=re.S | re.M)
    lines = [line.split("#", 1)[0].strip() for block in blocks for line in block.splitlines()]
    return [shlex.split(line)[1:] for line in lines if line.startswith(".venv/bin/kvlab ")]


def test_cli_sample_output_is_current():
    assert SAMPLE_COMMAND in README
    sample = re.search(r"^```\n(Usable memory:.*?)^```", README, flags=re.S | re.M).group(1)
    out = subprocess.run([sys.executable, "-m", "kvlab", *shlex.split(SAMPLE_COMMAND)[1:]], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert sample == out  # the whole output: the engine log, the blank line, the summary


def test_every_kvlab_command_in_the_readme_runs(capsys, monkeypatch):
    commands = readme_kvlab_commands()
    assert len(commands) >= 5, commands  # the sample, --config, --help and the two engine lines
    monkeypatch.chdir(ROOT)  # the README's paths (examples/config.json) are relative to the repository
    for argv in commands:
        assert main(argv) == 0, argv
        out, err = capsys.readouterr()
        assert out and err == "", (argv, err)


def test_python_example_figures():
    r = evaluate(Scenario(model="qwen3-8b", gpu="h100-sxm", prompt_tokens=32768, kv_dtype="fp8"))
    assert "r.max_sequences, r.batch, r.itl_s      # (24, 24, 0.0279...)" in README
    assert (r.max_sequences, r.batch) == (24, 24)
    assert f"{r.itl_s:.4f}" == "0.0279"


def test_bad_input_line_is_current():
    line = "kvlab: error: --prompt-tokens: must be between 1 and 2,097,152, got -1"
    assert line in README
    err = subprocess.run([sys.executable, "-m", "kvlab", "--prompt-tokens", "-1"], capture_output=True, text=True)
    assert err.returncode == 2 and err.stderr.strip() == line
