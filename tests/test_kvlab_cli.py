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


def test_one_option_name_per_setting_across_commands():
    # Every setting of both `kvlab` and `kvlab engine` has the same current name in both: its
    # field's name with dashes. Old names are hidden aliases (help=SUPPRESS).
    from kvlab.sim import Scenario
    from kvlab.sim.cli import build_parser as sim_parser
    from kvlab.sim.cliargs import flag
    from kvlab.sim.engine.cli import build_parser as engine_parser

    def current(parser):
        return {a.dest: a.option_strings[0] for a in parser._actions if a.option_strings and a.help != "==SUPPRESS=="
                and a.dest != "help"}

    sim, engine = current(sim_parser()), current(engine_parser())
    shared = set(sim) & set(engine)
    assert {"model", "gpu", "tp", "engine", "engine_version", "kv_dtype", "gpu_memory_utilization", "block_size_tokens"} <= shared
    for dest in shared:
        assert sim[dest] == engine[dest], dest
    for dest, option in {**sim, **engine}.items():
        if dest in Scenario.__dataclass_fields__:
            assert option == flag(dest), (dest, option)
