#!/usr/bin/env bash
# A cluster of Elementals nodes on loopback behind nginx, for trying cluster mode on one
# machine (see deploy/README.md). Needs PostgreSQL and Redis (by default those of
# .ci/services), nginx (`apt-get install nginx-light`) and a built server.
#
#   deploy/cluster.sh start          start the nodes and nginx; Ctrl-C stops everything
#   deploy/cluster.sh stop           stop a cluster started elsewhere (its `start` cleans up)
#   deploy/cluster.sh nginx-conf DIR LISTEN NODE...
#                                    only write DIR/nginx.conf for nginx run as this user,
#                                    with deploy/elementals.conf rendered (used by the test)
#
# Settings (environment): ELEMENTALS_BIN (default target/release/elementals-server), NGINX
# (/usr/sbin/nginx), PG_URL (postgres://postgres@127.0.0.1:5432, a server where this user
# may create databases), REDIS_URL (redis://127.0.0.1:6379), NODES (3), LISTEN (nginx's
# port; default a free one). Other ELEMENTALS_* variables reach every node.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=${ELEMENTALS_BIN:-$here/../target/release/elementals-server}
NGINX=${NGINX:-/usr/sbin/nginx}
PG_URL=${PG_URL:-postgres://postgres@127.0.0.1:5432}
REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379}
NODES=${NODES:-3}
# Where a running `start` writes its pid and directory, for `stop`.
STATE=${TMPDIR:-/tmp}/elementals-cluster-$(id -u).state
# How long a node or nginx may take to answer /healthz after it is started, in seconds.
START_TIMEOUT=30

die() {
    echo "cluster.sh: $*" >&2
    exit 1
}

# The HTTP status of GET $2 at $1 (host:port), empty if nothing answers; bash's own
# /dev/tcp, so that nothing beyond bash is needed.
http_status() {
    (
        exec 3<>"/dev/tcp/${1%:*}/${1##*:}" || exit 0
        printf 'GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$2" "$1" >&3
        read -r -t 5 _ code _ <&3 && echo "$code"
    ) 2>/dev/null || true
}

# Sets `port` to a loopback port nothing listens on, and not taken before (in $taken).
taken="" port=""
free_port() {
    for _ in $(seq 1 100); do
        port=$((20000 + RANDOM % 40000))
        if [[ " $taken " != *" $port "* ]] && [ -z "$(http_status "127.0.0.1:$port" /)" ]; then
            taken="$taken $port"
            return
        fi
    done
    die "no free loopback port found"
}

# Writes DIR/nginx.conf (nginx run as this user, every path inside DIR) and
# DIR/elementals.conf, deploy/elementals.conf with @LISTEN@ and one @NODE@ line a node
# (comments are copied as they are).
render_nginx() {
    local dir=$1 listen=$2 line node
    shift 2
    mkdir -p "$dir/tmp"
    while IFS= read -r line; do
        if [[ $line =~ ^[[:space:]]*# ]]; then
            printf '%s\n' "$line"
        elif [[ $line == *@NODE@* ]]; then
            for node in "$@"; do printf '%s\n' "${line//@NODE@/$node}"; done
        else
            printf '%s\n' "${line//@LISTEN@/$listen}"
        fi
    done <"$here/elementals.conf" >"$dir/elementals.conf"
    # Run as root, nginx would switch its workers to `nobody`, who cannot reach DIR.
    local user=""
    [ "$(id -u)" -eq 0 ] && user="user root root;"
    cat >"$dir/nginx.conf" <<EOF
# nginx as the current user, written by deploy/cluster.sh: every path is inside $dir.
$user
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
# Each proxied WebSocket holds two connections (client and node).
events { worker_connections 4096; }
http {
    access_log $dir/access.log;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    include $dir/elementals.conf;
}
EOF
}

# Waits (at most START_TIMEOUT) until $2 answers /healthz 200, while process $3 lives.
until_healthy() {
    local name=$1 addr=$2 pid=$3
    for _ in $(seq 1 $((START_TIMEOUT * 5))); do
        [ "$(http_status "$addr" /healthz)" = 200 ] && return 0
        kill -0 "$pid" 2>/dev/null || die "$name exited while starting: see $dir/$name.log"
        sleep 0.2
    done
    die "$name did not answer /healthz within ${START_TIMEOUT}s: see $dir/$name.log"
}

dir="" cluster="" db="" nginx_pid="" listen=""
pids=() addrs=()

cleanup() {
    trap - EXIT INT TERM
    echo "stopping"
    # TERM, not QUIT: a graceful stop would wait for every open WebSocket to close.
    if [ -n "$nginx_pid" ]; then kill -TERM "$nginx_pid" 2>/dev/null || true; fi
    # SIGTERM: each node hands its games over and exits; kill -9 whatever is left at 15 s.
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for _ in $(seq 1 75); do
        alive=0
        for pid in "${pids[@]}" $nginx_pid; do kill -0 "$pid" 2>/dev/null && alive=1; done
        [ $alive = 0 ] && break
        sleep 0.2
    done
    for pid in "${pids[@]}" $nginx_pid; do kill -9 "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ -n "$cluster" ] && command -v redis-cli >/dev/null; then
        redis-cli -u "$REDIS_URL" --scan --pattern "$cluster:*" |
            xargs -r redis-cli -u "$REDIS_URL" del >/dev/null || true
    fi
    if [ -n "$db" ]; then
        psql "$PG_URL/postgres" -qAtc "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" ||
            echo "cluster.sh: could not drop database $db" >&2
    fi
    rm -f "$STATE"
    if [ -n "$dir" ]; then echo "logs: $dir"; fi
}

start() {
    [ -x "$BIN" ] || die "no server at $BIN: cargo build --release -p elementals-server, or set ELEMENTALS_BIN"
    [ -x "$NGINX" ] || die "no nginx at $NGINX: apt-get install nginx-light (or nginx), or set NGINX"
    if [ -f "$STATE" ] && kill -0 "$(cut -d' ' -f1 "$STATE")" 2>/dev/null; then
        die "a cluster runs already (pid $(cut -d' ' -f1 "$STATE")): $0 stop"
    fi
    dir=$(mktemp -d "${TMPDIR:-/tmp}/elementals-cluster.XXXXXX")
    local suffix=${dir##*.}
    cluster=elementals-$suffix
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    echo "$$ $dir" >"$STATE"

    psql "$PG_URL/postgres" -qAtc "CREATE DATABASE \"elementals_$suffix\"" ||
        die "could not create a database at $PG_URL"
    db=elementals_$suffix
    for i in $(seq 1 "$NODES"); do
        free_port
        addrs+=("127.0.0.1:$port")
        # nginx connects from 127.0.0.1: its X-Forwarded-For is believed from there only.
        "$BIN" --listen "${addrs[-1]}" --database "$PG_URL/$db" --redis "$REDIS_URL" \
            --cluster "$cluster" --node-id "node$i" --trusted-proxy 127.0.0.1 \
            </dev/null >"$dir/node$i.log" 2>&1 &
        pids+=($!)
    done
    for i in $(seq 1 "$NODES"); do
        until_healthy "node$i" "${addrs[i - 1]}" "${pids[i - 1]}"
    done

    if [ -n "${LISTEN:-}" ]; then port=$LISTEN; else free_port; fi
    listen=127.0.0.1:$port
    render_nginx "$dir" "$listen" "${addrs[@]}"
    "$NGINX" -p "$dir/" -c "$dir/nginx.conf" -e "$dir/error.log" -g 'daemon off;' \
        </dev/null >"$dir/nginx.log" 2>&1 &
    nginx_pid=$!
    until_healthy nginx "$listen" "$nginx_pid"

    echo "cluster $cluster: $NODES nodes (${addrs[*]}) on database $db"
    echo "one address:  http://$listen/  (WebSocket ws://$listen/ws)"
    echo "stop with Ctrl-C or: $0 stop"
    watch_nodes
}

# nginx checks nodes only passively, so every 2 s each node's /healthz is asked here: a
# node that stops answering 200 is marked `down` in nginx's list (nginx reloads it) and
# back when it answers again; each change is printed.
watch_nodes() {
    local -a health
    local i now changed
    for i in "${!addrs[@]}"; do health[i]=200; done
    while :; do
        sleep 2 &
        wait $! || true
        changed=0
        for i in "${!addrs[@]}"; do
            now=$(http_status "${addrs[i]}" /healthz)
            now=${now:-none}
            if [ "$now" != "${health[i]}" ]; then
                echo "$(date -u +%T) node$((i + 1)) ${addrs[i]}: /healthz ${health[i]} -> $now"
                health[i]=$now
                changed=1
            fi
        done
        kill -0 "$nginx_pid" 2>/dev/null || die "nginx exited: see $dir/error.log"
        if [ $changed = 1 ]; then
            local -a listed=()
            for i in "${!addrs[@]}"; do
                if [ "${health[i]}" = 200 ]; then listed+=("${addrs[i]}"); else listed+=("${addrs[i]} down"); fi
            done
            render_nginx "$dir" "$listen" "${listed[@]}"
            kill -HUP "$nginx_pid"
        fi
    done
}

stop() {
    [ -f "$STATE" ] || die "no cluster runs (no $STATE)"
    local pid
    pid=$(cut -d' ' -f1 "$STATE")
    kill -TERM "$pid" 2>/dev/null || die "no cluster runs (pid $pid is gone)"
    for _ in $(seq 1 150); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.2
    done
    die "the cluster (pid $pid) is still stopping"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
nginx-conf)
    [ $# -ge 4 ] || die "usage: $0 nginx-conf DIR LISTEN NODE..."
    shift
    render_nginx "$@"
    ;;
*) die "usage: $0 start | stop | nginx-conf DIR LISTEN NODE..." ;;
esac
