#!/usr/bin/env bash
# The browser client's tests: the unit tests and the end-to-end tests, which start a real
# elementals-server. What they need (the npm packages of clients/web, Chromium) is
# installed by .ci/test.sh; missing, the run fails and says so.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "clients/web/run-tests.sh: Node.js (20 or newer) and npm are needed" >&2
  exit 1
fi

missing=()
[ -x /usr/bin/chromium ] || missing+=("Chromium (/usr/bin/chromium)")
[ -d "$here/node_modules/playwright-core" ] || missing+=("clients/web's npm packages")
if [ ${#missing[@]} -gt 0 ]; then
  echo "clients/web/run-tests.sh: missing ${missing[*]}: run .ci/test.sh, which installs them" >&2
  exit 1
fi

cd "$repo"
node --test clients/web/test/*.test.mjs
