# Shared by scripts/serve and scripts/test: make .venv with kvlab installed (editable).
# Sourced, not run. Set KVLAB_EXTRAS before sourcing: "" (serve: the app and its runtime only)
# or "dev" (test: adds pytest, hypothesis, Playwright, ruff, build, llm-analysis).
# Idempotent: a second run only checks that everything is in place; a later `scripts/test` after
# `scripts/serve` adds the dev tools to the same .venv.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
KVLAB_EXTRAS="${KVLAB_EXTRAS:-}"

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
# One stamp per set of extras: .venv/.kvlab-installed (serve) and .venv/.kvlab-installed-dev (test).
stamp=".venv/.kvlab-installed${KVLAB_EXTRAS:+-$KVLAB_EXTRAS}"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  target="."
  [ -z "$KVLAB_EXTRAS" ] || target=".[$KVLAB_EXTRAS]"
  echo "kvlab setup: installing Python packages into .venv ($target)"
  # -qq: errors only. setuptools prints an informational banner for every editable install of a
  # package mapped from several folders (sim/ -> kvlab.sim, ...); the import check below is the test.
  .venv/bin/python -m pip install -qq --upgrade pip
  # --no-compile: pip would byte-compile every module of every package (13 s of a 29 s install on the
  # 2-core VM); Python compiles the modules kvlab imports the first time it imports them, and keeps them.
  .venv/bin/python -m pip install -qq --no-compile -e "$target"
  # Fail loudly if the install did not work.
  .venv/bin/python -c "import kvlab.sim, kvlab.app, panel"
  [ -z "$KVLAB_EXTRAS" ] || .venv/bin/python -c "import playwright, hypothesis, pytest, setuptools, xdist"
  touch "$stamp"
fi
