# Shared by scripts/test and scripts/serve: make .venv with kvlab installed (editable).
# Sourced, not run. Idempotent: a second run only checks that everything is in place.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

apt_install() {
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "kvlab setup: installing Debian packages: $*"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

python3 -c "import venv, ensurepip" 2>/dev/null || apt_install python3-venv
if [ ! -x .venv/bin/python ]; then
  echo "kvlab setup: creating .venv"
  python3 -m venv .venv
fi
stamp=.venv/.kvlab-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "kvlab setup: installing Python packages into .venv"
  .venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v "is ignored" || true
  .venv/bin/python -m pip install -q -e ".[dev]" 2>&1 | grep -v "is ignored" || true
  .venv/bin/python -c "import kvlab.sim, panel, playwright, hypothesis" # fail loudly if the install did not work
  touch "$stamp"
fi
