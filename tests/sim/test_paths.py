"""sim.paths: the user's own directories follow each platform's convention, and the profiles
kvlab calibrate writes there are found by name after the shipped ones."""

import json
import sys

import pytest
from kvlab.sim import clear_caches, paths, profiles


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for var in ("KVLAB_DATA_DIR", "KVLAB_CONFIG_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "LOCALAPPDATA", "KVLAB_PROFILE_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_linux_follows_xdg(monkeypatch, clean_env):
    monkeypatch.setattr(sys, "platform", "linux")
    assert paths.user_data_dir() == clean_env / ".local" / "share" / "kvlab"
    assert paths.user_config_dir() == clean_env / ".config" / "kvlab"
    monkeypatch.setenv("XDG_DATA_HOME", "/srv/data")
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/is/ignored")  # the XDG spec: relative paths are invalid
    assert paths.user_data_dir() == paths.Path("/srv/data/kvlab")
    assert paths.user_config_dir() == clean_env / ".config" / "kvlab"
    assert paths.user_profile_dir() == paths.Path("/srv/data/kvlab/profiles")


def test_macos_and_windows(monkeypatch, clean_env):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert paths.user_data_dir() == clean_env / "Library" / "Application Support" / "kvlab"
    assert paths.user_config_dir() == paths.user_data_dir()
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("LOCALAPPDATA", str(clean_env / "AppData" / "Local"))
    assert paths.user_data_dir() == clean_env / "AppData" / "Local" / "kvlab"


def test_override_and_no_directory_created(monkeypatch, clean_env, tmp_path):
    monkeypatch.setenv("KVLAB_DATA_DIR", str(tmp_path / "mine"))
    assert paths.user_profile_dir() == tmp_path / "mine" / "profiles"
    assert not (tmp_path / "mine").exists()


def test_profiles_search_the_user_directory_after_the_shipped_ones(monkeypatch, clean_env, tmp_path):
    monkeypatch.setenv("KVLAB_DATA_DIR", str(tmp_path / "data"))
    user = paths.user_profile_dir()
    user.mkdir(parents=True)
    shipped = json.loads((profiles.PROFILE_DIR / "textbook.json").read_text())
    (user / "my-h100.json").write_text(json.dumps({**shipped, "name": "my-h100", "bandwidth_efficiency": 0.7}))
    # A user file named like a shipped profile does not shadow it.
    (user / "textbook.json").write_text(json.dumps({**shipped, "bandwidth_efficiency": 0.1}))
    clear_caches()
    try:
        names = profiles.profile_names()
        assert names.index("my-h100") > names.index("textbook") and names.count("textbook") == 1
        assert profiles.load_profile("my-h100").bandwidth_efficiency == 0.7
        assert profiles.load_profile("textbook").bandwidth_efficiency == shipped["bandwidth_efficiency"]
    finally:
        clear_caches()
