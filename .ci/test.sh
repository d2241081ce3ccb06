#!/usr/bin/env bash
# The README's test command: installs what the tests need and is missing, each step an
# `ensure_*` function, then runs every test. Arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."

# Root installs directly; anyone else through sudo.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Node.js and npm build the browser client (server/build.rs) and run its tests.
ensure_node() {
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo ".ci/test.sh: Node.js (20 or newer) and npm are needed" >&2
    exit 1
  fi
}

# Debian's Chromium (and a font) for the browser end-to-end tests.
ensure_chromium() {
  if [ ! -x /usr/bin/chromium ]; then
    as_root apt-get update
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y chromium fonts-dejavu-core
  fi
}

# The browser tests' npm packages (playwright-core, axe-core), from the committed lock,
# unless the lock installed is the one committed.
ensure_web_packages() {
  local web=clients/web
  if ! cmp -s "$web/package-lock.json" "$web/node_modules/.installed-package-lock.json"; then
    (cd "$web" && npm ci --no-audit --no-fund)
    cp "$web/package-lock.json" "$web/node_modules/.installed-package-lock.json"
  fi
}

# Debian's nginx, for the cluster behind it (server/tests/nginx.rs runs it as this user, on
# a port and from a directory of its own). The package would start a system nginx on port
# 80; a policy-rc.d that refuses (Debian's switch for installs that start nothing) is in
# place during the install unless the machine has one (containers often do).
ensure_nginx() {
  if [ ! -x /usr/sbin/nginx ]; then
    local policy=/usr/sbin/policy-rc.d added="" status=0
    if [ ! -e "$policy" ]; then
      printf '#!/bin/sh\nexit 101\n' | as_root tee "$policy" >/dev/null
      as_root chmod +x "$policy"
      added=1
    fi
    as_root apt-get update || status=$?
    if [ "$status" -eq 0 ]; then
      DEBIAN_FRONTEND=noninteractive as_root apt-get install -y nginx || status=$?
    fi
    if [ -n "$added" ]; then as_root rm -f "$policy"; fi
    [ "$status" -eq 0 ] || exit "$status"
  fi
}

# PostgreSQL and Redis at 127.0.0.1 (the storage tests run on both backends).
ensure_services() {
  as_root .ci/services
}

ensure_node
ensure_services
ensure_nginx
ensure_chromium
ensure_web_packages
cargo test --workspace "$@"
