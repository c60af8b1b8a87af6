"""Where kvlab writes and finds the user's own files: never inside the installed package.

Standard library only (it runs in Pyodide too, where nothing is found there and nothing breaks).
Each directory follows its platform's convention, the one `platformdirs` also follows:

- Linux and other POSIX: `$XDG_DATA_HOME/kvlab` (default `~/.local/share/kvlab`) and
  `$XDG_CONFIG_HOME/kvlab` (default `~/.config/kvlab`), per the XDG Base Directory specification.
- macOS: `~/Library/Application Support/kvlab` for both (Apple's File System Programming Guide).
- Windows: `%LOCALAPPDATA%\\kvlab` for both (machine-local, not roamed: profiles describe this
  machine's GPU).

`KVLAB_DATA_DIR` / `KVLAB_CONFIG_DIR` override them (tests, shared lab machines). Nothing here
creates a directory: a writer does that when it writes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP_NAME = "kvlab"


def _env_dir(name: str) -> Path | None:
    value = os.environ.get(name, "")
    # XDG: "If an implementation encounters a relative path in any of these variables it should
    # consider the path invalid and ignore it."
    return Path(value) if value and os.path.isabs(value) else None


def _base(xdg_var: str, xdg_default: tuple[str, ...]) -> Path:
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA")
        return Path(local) if local else Path.home() / "AppData" / "Local"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    return _env_dir(xdg_var) or Path.home().joinpath(*xdg_default)


def user_data_dir() -> Path:
    """The user's kvlab data: measured efficiency profiles (`profiles/`), calibration logs (`logs/`)."""
    return _env_dir("KVLAB_DATA_DIR") or _base("XDG_DATA_HOME", (".local", "share")) / APP_NAME


def user_config_dir() -> Path:
    """The user's kvlab settings."""
    return _env_dir("KVLAB_CONFIG_DIR") or _base("XDG_CONFIG_HOME", (".config",)) / APP_NAME


def user_profile_dir() -> Path:
    """Efficiency profiles written on this machine (by `kvlab calibrate`); sim.profiles searches it
    after the shipped profiles."""
    return user_data_dir() / "profiles"
