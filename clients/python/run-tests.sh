#!/usr/bin/env bash
# The Python SDK's checks: a virtual environment (VENV, default clients/python/.venv) with the
# package and its test extras from PyPI, mypy --strict, then pytest against a real server
# (ELEMENTALS_SERVER_BIN, else built with cargo: see tests/conftest.py).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${VENV:-$here/.venv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check -e "$here[test]"
cd "$here"
"$venv/bin/mypy"
"$venv/bin/pytest" -q -p no:cacheprovider
