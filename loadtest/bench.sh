#!/usr/bin/env bash
# bench.sh [-n RUNS] [TARGET...]
#
# Runs the load-test issue's benchmarks RUNS times each (default 3) with the exact
# commands of BENCHMARKS.md, and prints each one's runs side by side with their median
# (`elementals-loadtest medians`), ready for BENCHMARKS.md. One run proves little on a
# shared machine; this is the median of several, on one binary.
#
# Targets (default: all but pairing, about 27 minutes for three runs each):
#   capacity      §1: 19,000 players, half of them in games picking every ~4 s
#   throughput    §2: 2,000 players thinking 0 ms, with the echo ceiling
#   unpaced       §2: the same with the rate limit raised (--message-rate=50), so that
#                 the players' pacing cannot cap the offered load
#   roundcost     §2: the server's CPU per round (server µs/round) at a fixed load below
#                 saturation (2,000 players thinking 300 ms): the steadiest measure of a
#                 change to the move path; compare builds in alternating runs
#   density       §3: 10,000 and 19,000 idle signed-in players
#   fanout        §4: one game, 10,000 lean spectators, with the fan-out ceiling
#   persistence   §5: the criterion bench over 20,000 accounts (its own estimates)
#   storm         §6: 10,000 players resuming at once
#   pairing       §7: the criterion bench of the lobby's pool (not in the default set)
#   deployments   the cluster's cost: the same load (DEPLOY_PLAYERS, default 6,000, half
#                 of them in games thinking 4 s, 40 s) on one SQLite node, one PostgreSQL
#                 node, one node in cluster mode and three nodes, one after another in each
#                 round; printed as CPU per round by process group (deployments.py). Not in
#                 the default set: about 5 minutes a round
#
# The runs go round-robin over the targets (all targets' first runs, then their second),
# so a slow stretch of the machine does not fall on one target alone, and each starts
# once the 1-minute load average is below BENCH_QUIET_LOAD (default 1.5; waiting at most
# 2 minutes).
#
# Environment:
#   LOADTEST_BIN     run this elementals-loadtest binary instead of building one (a copy
#                    outside target/ is safe from rebuilds during the run).
#   BENCH_OUT        output directory (default /tmp/bench-YYYYmmdd-HHMMSS): each run's
#                    --json report and output, bench.log (start, end, load average),
#                    medians.md (what is printed at the end).
#   BENCH_QUIET_LOAD the load average below which a run may start.
#
# Example: loadtest/bench.sh                 # everything, three runs each
#          loadtest/bench.sh -n 5 fanout      # five fan-out runs
set -euo pipefail

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//' >&2
    exit 2
}

runs=3
if [[ ${1:-} == -n ]]; then
    [[ ${2:-} =~ ^[0-9]+$ && $2 -gt 0 ]] || usage
    runs=$2
    shift 2
fi
all=(capacity throughput unpaced roundcost density fanout persistence storm)
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${all[@]}")
for t in "${targets[@]}"; do
    [[ " ${all[*]} pairing deployments " == *" $t "* ]] || { echo "bench: unknown target $t" >&2; usage; }
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${BENCH_OUT:-/tmp/bench-$(date +%Y%m%d-%H%M%S)}
quiet_load=${BENCH_QUIET_LOAD:-1.5}
mkdir -p "$out"
out=$(cd "$out" && pwd)

if [[ -n ${LOADTEST_BIN:-} ]]; then
    bin=$LOADTEST_BIN
    [[ -x $bin ]] || { echo "bench: LOADTEST_BIN=$bin is not an executable" >&2; exit 2; }
else
    (cd "$root" && cargo build --release -p elementals-loadtest)
    cp "${CARGO_TARGET_DIR:-$root/target}/release/elementals-loadtest" "$out/elementals-loadtest"
    bin=$out/elementals-loadtest
fi
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
# The criterion benches are built now, so that no run's build falls on another run.
for t in "${targets[@]}"; do
    case $t in
    persistence | pairing) (cd "$root" && cargo bench -p elementals-server --bench "$t" --no-run) ;;
    esac
done

load() { cut -d' ' -f1 /proc/loadavg; }

wait_quiet() {
    local waited
    for waited in $(seq 1 60); do
        awk -v l="$(load)" -v q="$quiet_load" 'BEGIN { exit !(l < q) }' && return
        sleep 2
    done
}

# One run of a target: its report is $out/<name>.json, its output $out/<name>.out.
run_one() {
    local name=$1
    shift
    wait_quiet
    echo "$(date +%T) start $name (load $(load))" | tee -a "$out/bench.log"
    local status=0
    "$@" >"$out/$name.out" 2>&1 || status=$?
    echo "$(date +%T) end $name: exit $status (load $(load))" | tee -a "$out/bench.log"
    [[ $status -eq 0 ]] || echo "bench: $name failed; see $out/$name.out" >&2
}

shm() { TMPDIR=/dev/shm "$@"; }

run_target() {
    local t=$1 i=$2
    case $t in
    capacity)
        run_one "capacity-$i" shm "$bin" --players 19000 --playing-fraction 0.5 \
            --think-ms 4000 --ramp-per-s 500 --duration 30s --json "$out/capacity-$i.json" ;;
    throughput)
        run_one "throughput-$i" "$bin" --echo --players 2000 --think-ms 0 \
            --ramp-per-s 300 --duration 20s --json "$out/throughput-$i.json" ;;
    unpaced)
        run_one "unpaced-$i" "$bin" --echo --players 2000 --think-ms 0 --ramp-per-s 300 \
            --duration 20s --server-arg=--message-rate=50 --json "$out/unpaced-$i.json" ;;
    roundcost)
        run_one "roundcost-$i" "$bin" --players 2000 --think-ms 300 --ramp-per-s 400 \
            --duration 20s --server-arg=--message-rate=50 --json "$out/roundcost-$i.json" ;;
    density)
        local n
        for n in 10000 19000; do
            run_one "density$n-$i" shm "$bin" --players $n --playing-fraction 0 \
                --lobby-poll-ms 0 --ramp-per-s 1000 --duration 5s --json "$out/density$n-$i.json"
        done ;;
    fanout)
        run_one "fanout-$i" "$bin" --players 2 --spectators 10000 --lean-spectators \
            --fanout-ceiling --think-ms 1000 --ramp-per-s 1000 --duration 60s \
            --json "$out/fanout-$i.json" ;;
    storm)
        run_one "storm-$i" shm "$bin" --players 10000 --think-ms 2000 --ramp-per-s 300 \
            --duration 20s --reconnect-storm --json "$out/storm-$i.json" ;;
    persistence)
        run_one "persistence-$i" env -C "$root" PERSISTENCE_ACCOUNTS=20000 \
            cargo bench -p elementals-server --bench persistence -- batched ;;
    pairing)
        run_one "pairing-$i" env -C "$root" cargo bench -p elementals-server --bench pairing ;;
    deployments)
        local d
        local -A flags=([sqlite]="" [postgres]="--postgres" [cluster1]="--nodes 1" [nodes3]="--nodes 3")
        for d in sqlite postgres cluster1 nodes3; do
            # shellcheck disable=SC2086 # the flags are words
            run_one "deploy-$d-$i" shm "$bin" --players "${DEPLOY_PLAYERS:-6000}" \
                --playing-fraction 0.5 --think-ms 4000 --ramp-per-s 500 --duration 40s \
                --processes 2 ${flags[$d]} --json "$out/deploy-$d-$i.json"
        done ;;
    esac
}

echo "bench: $runs run(s) of ${targets[*]} on $commit; output in $out" | tee "$out/bench.log"
for i in $(seq 1 "$runs"); do
    for t in "${targets[@]}"; do
        run_target "$t" "$i"
    done
done

# The summary: a table per load-test target, criterion's estimates for the benches.
{
    echo "# bench.sh on $commit, $(date -u +%Y-%m-%dT%H:%MZ), $runs run(s) each"
    for t in "${targets[@]}"; do
        case $t in
        deployments)
            echo
            echo "## deployments (${DEPLOY_PLAYERS:-6000} players; medians of $runs runs)"
            echo
            python3 "$root/loadtest/deployments.py" "$out" "$runs" ;;
        persistence | pairing)
            echo
            echo "## $t (criterion's estimates: low, central, high)"
            for i in $(seq 1 "$runs"); do
                echo
                echo "run $i:"
                grep -E '^(persistence|pairing)/|thrpt:|time:' "$out/$t-$i.out" | grep -v '%' || true
            done ;;
        *)
            prefixes=("$t")
            [[ $t == density ]] && prefixes=(density10000 density19000)
            for p in "${prefixes[@]}"; do
                echo
                echo "## $p"
                echo
                files=()
                for i in $(seq 1 "$runs"); do
                    [[ -s $out/$p-$i.json ]] && files+=("$out/$p-$i.json")
                done
                if [[ ${#files[@]} -gt 0 ]]; then
                    "$bin" medians "${files[@]}"
                else
                    echo "(no run of $p completed)"
                fi
            done ;;
        esac
    done
} | tee "$out/medians.md"
