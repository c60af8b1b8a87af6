"""The panels' profile selector lists a profile written after the server started (issue 12)."""

import json

from kvlab.app.views.state import Settings
from kvlab.sim import clear_caches, profiles


def test_a_profile_written_while_serving_shows_in_the_next_session(monkeypatch, tmp_path):
    monkeypatch.setenv("KVLAB_DATA_DIR", str(tmp_path))
    before = Settings()
    assert "my-gpu" not in before.param.profile.objects
    user = tmp_path / "profiles"
    user.mkdir()
    shipped = json.loads((profiles.PROFILE_DIR / "textbook.json").read_text())
    (user / "my-gpu.json").write_text(json.dumps({**shipped, "name": "my-gpu"}))
    clear_caches()
    try:
        s = Settings(profile="my-gpu")  # param's own check accepts it: the list was re-read
        assert s.profile == "my-gpu" and "my-gpu" in s.param.profile.objects
        assert s.scenario().profile == "my-gpu"
    finally:
        clear_caches()
    monkeypatch.setenv("KVLAB_DATA_DIR", str(tmp_path / "elsewhere"))
    assert "my-gpu" not in Settings().param.profile.objects  # and gone again once the folder is
    monkeypatch.undo()
    Settings()  # leave the class's choices as the real environment lists them, for the tests after this one
