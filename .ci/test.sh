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

# Debian's nginx, for the cluster behind it (server/tests/it/nginx.rs runs it as this user, on
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

# Python 3.11+ with venv (Debian ships venv apart), for the Python SDK's tests, which
# install their PyPI packages into a virtual environment of their own.
ensure_python() {
  local probe
  probe="$(mktemp -d)"
  if ! python3 -m venv "$probe/venv" >/dev/null 2>&1; then
    as_root apt-get update
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y python3 python3-venv
  fi
  rm -rf "$probe"
}

# PostgreSQL and Redis at 127.0.0.1 (the storage tests run on both backends).
ensure_services() {
  as_root .ci/services
}

# Schemathesis and openapi-spec-validator (PyPI), pinned, in a virtual environment of their
# own under the target directory unless they are there already (ensure_python makes sure
# venv works).
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
[[ "$TARGET_DIR" == /* ]] || TARGET_DIR="$PWD/$TARGET_DIR"
SCHEMATHESIS_VENV="$TARGET_DIR/schemathesis-venv"
ensure_schemathesis() {
  if [ ! -x "$SCHEMATHESIS_VENV/bin/schemathesis" ] || [ ! -x "$SCHEMATHESIS_VENV/bin/openapi-spec-validator" ]; then
    rm -rf "$SCHEMATHESIS_VENV"
    python3 -m venv "$SCHEMATHESIS_VENV"
    "$SCHEMATHESIS_VENV/bin/pip" install --quiet 'schemathesis==4.32.5' 'openapi-spec-validator==0.9.0'
  fi
}

# The AsyncAPI initiative's parser (npm), from the committed lock in .ci/asyncapi, installed
# under the target directory unless the lock installed is the one committed.
ASYNCAPI_CHECK="$TARGET_DIR/asyncapi-check"
ensure_asyncapi_parser() {
  if ! cmp -s .ci/asyncapi/package-lock.json "$ASYNCAPI_CHECK/node_modules/.installed-package-lock.json"; then
    rm -rf "$ASYNCAPI_CHECK"
    mkdir -p "$ASYNCAPI_CHECK"
    cp .ci/asyncapi/package.json .ci/asyncapi/package-lock.json "$ASYNCAPI_CHECK/"
    (cd "$ASYNCAPI_CHECK" && npm ci --no-audit --no-fund)
    cp .ci/asyncapi/package-lock.json "$ASYNCAPI_CHECK/node_modules/.installed-package-lock.json"
  fi
  cp .ci/asyncapi/check.cjs "$ASYNCAPI_CHECK/"
}

# The committed documents (which server/src/api_docs.rs's test holds to the types, and the
# server serves) checked by each format's own validator: openapi-spec-validator (the
# OpenAPI 3.1 schema, references resolved) and the AsyncAPI parser (the AsyncAPI 3.0 schema
# and the spec's rules). Either fails the run on an invalid document.
validate_api_documents() {
  "$SCHEMATHESIS_VENV/bin/openapi-spec-validator" protocol/schema/openapi.json
  node "$ASYNCAPI_CHECK/check.cjs" protocol/schema/asyncapi.json
}

# The HTTP API fuzzed: schemathesis runs every operation of the document the server serves
# (/openapi.json, the committed protocol/schema/openapi.json) against the server binary
# ($ELEMENTALS_SERVER_BIN) on 127.0.0.1 with a temporary SQLite file, bounded in examples
# per operation and in time. It fails the run on a 5xx, an answer that does not match the
# document, or a status code the document does not list (`--checks all`). Every request
# carries the session token of an account .ci/seed_api.py gives a finished game and a
# correspondence game under way (the Python SDK's environment, which its suite made). The request
# limit is off (0) so that the operations, not the 429s the document also lists, are what
# gets tested. `/ws` is left out: a valid upgrade is answered 101 and the connection then
# speaks WebSocket, which an HTTP fuzzer cannot follow (server/tests cover the upgrade's
# refusals, AsyncAPI describes what follows it). It runs in the temporary directory,
# where it keeps its cache.
fuzz_http_api() {
  local dir port pid status=0
  dir=$(mktemp -d)
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$ELEMENTALS_SERVER_BIN" --listen "127.0.0.1:$port" --database "$dir/api.db" \
    --http-requests-per-ip 0 >"$dir/server.log" 2>&1 &
  pid=$!
  # An account with a finished game and one under way, whose token every request carries.
  local token
  token=$(timeout 180 "${VENV:-clients/python/.venv}/bin/python" .ci/seed_api.py "ws://127.0.0.1:$port/ws") || status=$?
  if [ "$status" -ne 0 ]; then
    echo ".ci/test.sh: seeding the HTTP API's data failed (exit $status)" >&2
    kill "$pid" 2>/dev/null || true
    return "$status"
  fi
  (cd "$dir" && timeout 600 "$SCHEMATHESIS_VENV/bin/schemathesis" run \
    "http://127.0.0.1:$port/openapi.json" --url "http://127.0.0.1:$port" \
    --header "Authorization: Bearer $token" \
    --exclude-path /ws --wait-for-schema 60 --checks all --max-examples 30 \
    --max-time 240 --seed 42 --workers 2) || status=$?
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if [ "$status" -ne 0 ]; then
    echo ".ci/test.sh: schemathesis found problems in the HTTP API (exit $status); server log:" >&2
    tail -n 50 "$dir/server.log" >&2
  fi
  rm -rf "$dir"
  return "$status"
}

ensure_node
ensure_python
ensure_services
ensure_nginx
ensure_chromium
ensure_web_packages
ensure_schemathesis
ensure_asyncapi_parser
validate_api_documents
cargo test --workspace --no-fail-fast "$@"

# The SDKs' suites play full games against the server binary the workspace tests built
# (its integration tests need it; its test hooks act only when their environment variables
# are set). A `cargo build` here would resolve features anew and rebuild the dependencies.
target_dir="${CARGO_TARGET_DIR:-target}"
[[ "$target_dir" == /* ]] || target_dir="$PWD/$target_dir"
export ELEMENTALS_SERVER_BIN="$target_dir/debug/elementals-server"
if [ ! -x "$ELEMENTALS_SERVER_BIN" ]; then
  echo ".ci/test.sh: $ELEMENTALS_SERVER_BIN was not built by the tests" >&2
  exit 1
fi
clients/python/run-tests.sh
clients/ts/run-tests.sh
fuzz_http_api
