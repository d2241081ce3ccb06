#!/usr/bin/env bash
# The browser client's tests: installs what they need (the npm packages of clients/web,
# and Debian's Chromium when /usr/bin/chromium is missing), then runs the unit tests and
# the end-to-end tests, which build and start a real elementals-server.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "clients/web/run-tests.sh: Node.js (20 or newer) and npm are needed" >&2
  exit 1
fi

if [ ! -x /usr/bin/chromium ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y chromium fonts-dejavu-core
fi

(cd "$here" && npm ci --no-audit --no-fund)

cd "$repo"
node --test clients/web/test/*.test.mjs
