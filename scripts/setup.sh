#!/usr/bin/env bash
# palaestra's set-up: system packages (when root), ./.venv with everything, Pachi. The editable install builds
# the scoreboard's web assets from web/package.json with npm (setup.py), as packaging does.
# Idempotent; `make demo` and `make test` run it when its inputs change.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=.venv

install_system_packages() {
  local wanted missing=()
  echo "palaestra set-up: checking the system packages of scripts/system-packages.txt ..."
  wanted=$(grep -v '^\s*#' scripts/system-packages.txt | grep -v '^\s*$')
  for pkg in $wanted; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "palaestra set-up: please install these system packages (as root): ${missing[*]}" >&2
    echo "  e.g. sudo apt-get install -y ${missing[*]}" >&2
    echo "  (continuing: the features and tests that need them will say so)" >&2
    return 0
  fi
  echo "palaestra set-up: installing system packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

install_python() {
  if [ ! -x "$VENV/bin/python" ]; then
    echo "palaestra set-up: creating the virtual environment $VENV ..."
    "$PYTHON" -m venv "$VENV"
  fi
  echo "palaestra set-up: upgrading pip ..."
  "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
  echo "palaestra set-up: installing Python packages into $VENV (pip install -e '.[all,ray,dev]'; a few minutes the first time) ..."
  "$VENV/bin/python" -m pip install -q -e '.[all,ray,dev]'
}

install_system_packages
install_python
bash scripts/build-pachi.sh "$VENV"
echo "palaestra set-up: done ($VENV; \`source $VENV/bin/activate\` puts palaestra on PATH)"
