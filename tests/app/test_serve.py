"""`kvlab serve`: which pages, which flags, and what the --setup script changes."""

import subprocess
import sys

import pytest
from kvlab.app.server import serve


def test_serves_every_page_script_on_loopback_with_the_setup_script():
    pages = serve.page_scripts()
    names = [p.name for p in pages]
    assert {"admission.py", "phases.py", "index.py"} <= set(names)
    cmd = serve.command(5123, show=False, pages=pages)
    assert cmd[1:4] == ["-m", "panel", "serve"]
    assert cmd[cmd.index("--address") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--port") + 1] == "5123"
    assert "127.0.0.1:5123" in cmd and str(serve.SETUP) in cmd
    assert "--show" not in cmd and "--show" in serve.command(5123, show=True, pages=pages)


def test_lesson_pages_are_served_only_if_they_are_pages():
    for p in serve.page_scripts():
        assert p.parent.name in ("pages", "lessons")
        if p.parent.name == "lessons":
            assert ".servable(" in p.read_text()


@pytest.mark.parametrize(("argv", "says"), [
    (["--port", "80"], "kvlab serve: error: --port: must be between 1,024 and 65,535, got 80"),
    (["--port", "abc"], "kvlab serve: error: --port: must be an integer between 1,024 and 65,535, got 'abc'"),
    (["--port", "9" * 500], "kvlab serve: error: --port: must be between 1,024 and 65,535, got a 500-digit integer"),
    (["--prot", "8080"], "kvlab serve: error: unrecognized option '--prot'"),
])
def test_bad_arguments_are_named_without_a_traceback(argv, says, capsys):
    with pytest.raises(SystemExit) as e:
        serve.parse_args(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(says) and err.count("\n") == 1, err


def test_a_busy_port_is_refused_with_advice(capsys):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        if port < 1024:
            pytest.skip("ephemeral port below 1024")
        assert serve.main(["--port", str(port), "--no-show"]) == 2
    assert f"port {port} is in use" in capsys.readouterr().err


def test_free_port_is_free():
    assert serve.port_is_free(serve.free_port())


def test_setup_script_removes_the_debounce_nagle_and_busy_costs():
    # In a child process: the script patches classes, which must not leak into this test session.
    code = (
        "import runpy; from kvlab.app.server import serve; runpy.run_path(str(serve.SETUP));"
        "from panel.reactive import Syncable; from bokeh.server.views.ws import WSHandler;"
        "print(Syncable._debounce, getattr(WSHandler.open, '_kvlab_patch', None),"
        " getattr(Syncable._change_event, '_kvlab_patch', None), 'value' in Syncable._busy__ignore)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["2", "nodelay", "one_message", "True"]


def test_the_server_runs_where_kvlab_itself_is_importable():
    # A checkout: its root (the checkout's own code is served). Installed: site-packages
    # (tests/test_packaging.py runs that case). Never a folder inside the package.
    assert (serve.IMPORT_ROOT / "kvlab" / "__init__.py").is_file()
