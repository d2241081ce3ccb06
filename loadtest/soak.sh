#!/usr/bin/env bash
# soak.sh MINUTES [extra elementals-loadtest args...]
#
# A soak test: the load test held for MINUTES minutes against its own local server (in a
# process of its own, on a temporary database, loopback only), sampling the server's
# resident memory (VmRSS) and open file descriptors every SAMPLE_EVERY. After a warm-up
# (20 % of the hold, at least 2 minutes, at most half; `--warmup 15m` sets it) both should
# stay flat; the script prints them at the end of the warm-up and at the end of the hold,
# with the growth in percent, and a verdict. The server remembers the last 10,000 finished
# games, so its memory grows until that many have finished (~14 minutes at this workload's
# ~12 games a second): give a soak of 24 minutes or more `--warmup 15m` for a verdict on
# the steady state.
#
# The workload (overridable: later flags win): 4,000 players, half of them playing a
# pick every 2-6 s, the rest signed in and listing the open seeks every ~10 s, signed
# in at 200 a second:
#   --players 4000 --playing-fraction 0.5 --think-ms 4000 --ramp-per-s 200
#
# Environment:
#   LOADTEST_BIN     run this elementals-loadtest binary instead of building one. The
#                    binary re-executes itself (/proc/self/exe) for its server, so a copy
#                    outside target/ is safe from rebuilds during the run.
#   LOADTEST_COMMIT  the commit LOADTEST_BIN was built from, for the record.
#   SOAK_OUT         output directory (default /tmp/soak-YYYYmmdd-HHMMSS): samples.csv,
#                    report.json, report.txt (the final table), loadtest.log (the
#                    progress lines), meta.txt (commit, command, machine load).
#   SAMPLE_EVERY     sampling interval (default 10s).
#   SOAK_MAX_RSS_GROWTH_PCT, SOAK_MAX_FD_GROWTH_PCT
#                    growth after the warm-up still called flat (default 5 and 1).
#   TMPDIR           where the local server's database goes; /dev/shm (tmpfs) makes
#                    sign-ins faster than the disk's ~220/s, if a faster ramp needs it.
#
# Without LOADTEST_BIN it builds `cargo build --release -p elementals-loadtest` and runs
# a copy of the binary placed in SOAK_OUT, so that a rebuild during the run cannot
# replace it. Needs jq for the verdict (without it, the load test's own summary rows).
#
# Exit status: 0 flat and clean; 3 RSS or descriptors grew past the limits; 4 not a
# clean soak: errors during the run, or a stall (no round completed in a sample after
# the warm-up, which makes flat figures meaningless); other: the run failed.
#
# Example: loadtest/soak.sh 30
#          LOADTEST_BIN=/tmp/soak/bin/elementals-loadtest loadtest/soak.sh 30 --players 2000
set -euo pipefail

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//' >&2
    exit 2
}

[[ $# -ge 1 && $1 =~ ^[0-9]+$ && $1 -gt 0 ]] || usage
minutes=$1
shift

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${SOAK_OUT:-/tmp/soak-$(date +%Y%m%d-%H%M%S)}
every=${SAMPLE_EVERY:-10s}
max_rss=${SOAK_MAX_RSS_GROWTH_PCT:-5}
max_fds=${SOAK_MAX_FD_GROWTH_PCT:-1}
mkdir -p "$out"
out=$(cd "$out" && pwd)

if [[ -n ${LOADTEST_BIN:-} ]]; then
    bin=$LOADTEST_BIN
    [[ -x $bin ]] || { echo "soak: LOADTEST_BIN=$bin is not an executable" >&2; exit 2; }
    commit=${LOADTEST_COMMIT:-unknown (LOADTEST_BIN=$bin)}
else
    commit=$(git -C "$root" rev-parse HEAD)
    if [[ -n $(git -C "$root" status --porcelain --untracked-files=no) ]]; then
        commit="$commit with uncommitted changes"
    fi
    (cd "$root" && cargo build --release -p elementals-loadtest)
    cp "${CARGO_TARGET_DIR:-$root/target}/release/elementals-loadtest" "$out/elementals-loadtest"
    bin=$out/elementals-loadtest
fi

args=(
    --players 4000 --playing-fraction 0.5 --think-ms 4000 --ramp-per-s 200
    "$@"
    --duration "${minutes}m"
    --sample-every "$every"
    --samples-csv "$out/samples.csv"
    --json "$out/report.json"
)
{
    echo "commit: $commit"
    echo "binary: $bin ($(sha256sum "$bin" | cut -d' ' -f1))"
    echo "command: $bin ${args[*]}"
    echo "TMPDIR: ${TMPDIR:-unset}"
    echo "start: $(date -Is) uptime:$(uptime)"
} >"$out/meta.txt"
cat "$out/meta.txt"
echo "soak: ${minutes} min; progress in $out/loadtest.log"

status=0
"$bin" "${args[@]}" >"$out/report.txt" 2>"$out/loadtest.log" || status=$?
echo "end: $(date -Is) uptime:$(uptime)" | tee -a "$out/meta.txt"
cat "$out/report.txt"
if [[ $status -ne 0 ]]; then
    echo "soak: the load test failed (exit $status); see $out/loadtest.log" >&2
    tail -n 20 "$out/loadtest.log" >&2
    exit "$status"
fi

if ! command -v jq >/dev/null; then
    echo "soak: no jq for the verdict; the summary rows above are the load test's own"
    exit 0
fi
summary=$(jq -c '.server_samples.summary' "$out/report.json")
if [[ $summary == null ]]; then
    echo "soak: no samples after the warm-up (the hold is too short); no verdict" >&2
    exit 0
fi
jq -r --argjson max_rss "$max_rss" --argjson max_fds "$max_fds" '
    def mib: . / 1048576 * 10 | round / 10;
    def pct: . * 10 | round / 10;
    .server_samples.summary as $s
    | $s.server_rss_bytes as $r | $s.server_fds as $f
    | "after warm-up (\($s.warmup_s | round) s into the hold) vs end of hold (\($s.to_hold_s | round) s), \($s.samples) samples:",
      "  server RSS  \($r.first | mib) MiB -> \($r.last | mib) MiB  (\($r.growth_percent | pct) %; min \($r.min | mib), max \($r.max | mib); slope \($r.slope_per_min / 1048576 * 100 | round / 100) MiB/min)",
      "  server fds  \($f.first) -> \($f.last)  (\($f.growth_percent | pct) %; min \($f.min), max \($f.max)); before clients \($s.server_fds_before_clients), after \($s.server_fds_after_clients)",
      "  errors      \(.errors) \(.errors_by_kind | tostring)",
      "  stalls      \($s.samples_without_rounds) of the \($s.samples) samples saw no round completed",
      (if $r.growth_percent <= $max_rss and $f.growth_percent <= $max_fds
       then "verdict: FLAT (RSS growth <= \($max_rss) %, fd growth <= \($max_fds) %)"
       else "verdict: GROWING (limits: RSS \($max_rss) %, fds \($max_fds) %)" end),
      (if .errors > 0 or ($s.samples_without_rounds > 0 and .playing_fraction > 0)
       then "verdict: NOT CLEAN: \(.errors) errors, \($s.samples_without_rounds) samples without a round"
       else empty end)
' "$out/report.json" | tee "$out/verdict.txt"
echo "soak: results in $out"
grep -q '^verdict: FLAT' "$out/verdict.txt" || exit 3
grep -q '^verdict: NOT CLEAN' "$out/verdict.txt" && exit 4
exit 0
