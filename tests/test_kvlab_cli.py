"""`kvlab`: the commands are listed in --help, `kvlab help [COMMAND]` works, a wrong command is
status 2 with the list, and each command's --help is status 0."""

import pytest

from kvlab.cli import SUBCOMMANDS, main


def test_help_lists_every_command(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name, (_, _, text) in SUBCOMMANDS.items():
        assert f"  {name}" in out and text in out
    assert main(["help"]) == 0 and capsys.readouterr().out == out


@pytest.mark.parametrize("name", ["serve", "build-site", "engine", "calibrate"])
def test_help_of_each_command(capsys, name):
    assert main(["help", name]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: ") and "--help" in out
    assert main([name, "--help"]) == 0 and capsys.readouterr().out == out


@pytest.mark.parametrize("argv", [["serv"], ["help", "nope"], ["help", "engine", "extra"], ["help", "help"]])
def test_a_wrong_command_is_status_2_with_the_list(capsys, argv):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("kvlab: error: no command ") and "serve, build-site" in err
