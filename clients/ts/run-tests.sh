#!/usr/bin/env bash
# The TypeScript SDK's checks: its npm packages from the committed lock (unless the lock
# installed is the one committed; `npm ci` also builds dist/), then the tests, compiled with
# tsc, against a real server (ELEMENTALS_SERVER_BIN, else built with cargo: see test/server.ts).
set -euo pipefail
cd "$(dirname "$0")"
if ! cmp -s package-lock.json node_modules/.installed-package-lock.json; then
  npm ci --no-audit --no-fund
  cp package-lock.json node_modules/.installed-package-lock.json
fi
npm test
