#!/usr/bin/env bash
# Profiles the ingesting site of a small UsenetDHT deployment on equal
# hardware: 3 `triad site` processes on 127.0.0.1 (fixed ports 17100-17102
# for the nodes, 17200-17202 for news, so that runs compare), each in a CPU
# cgroup of CPU cores (default 0.6, as compare-inn.sh --cpu-per-site), 8
# vnodes each, peered in a full mesh. Once the ring is consistent, `triad
# bench nntp` feeds N articles of SIZE bytes at site 1 (PHASES, default
# takethis) from outside the cgroups. It prints the bench's rate, then each
# site's CPU ticks (1/100 s), minor page faults and cgroup throttled
# periods over the feed, and the CPU per article at site 1 and in all.
#
#   sudo scripts/profile-sites.sh                       # 30,000 x 2,450 B
#   sudo SIZE=240000 N=3000 scripts/profile-sites.sh    # binaries
#   sudo PROF=1 scripts/profile-sites.sh                # + cpu0..2.prof
#   sudo PHASES=post N=5000 CPU=2 scripts/profile-sites.sh
#
# Settings (environment): N, SIZE, PHASES, CPU, VNODES (8), PROF=1 (each
# site writes --cpuprofile DIR/cpuI.prof; read it with `go tool pprof
# BIN DIR/cpu0.prof`), STRACE=1 (strace -c of site 1 during the feed),
# EXTRA (more `triad site` flags, as "--cache-mb 0"), BENCH (more `triad
# bench nntp` flags, as "--post-conns 8"), BIN (a triad binary;
# default: built from this tree into DIR), KEEP=1 (keep DIR; by default
# only its logs and profiles are kept), ROUNDS (default 1: feeds of N
# articles one after another on the same sites, each measured, to see
# whether a site's cost grows with what it stores), PRE (a number: feed
# and read back that many 2,450 B articles at site 1 first, unmeasured,
# as compare-inn.sh's text turn comes before its 240 KB one: the sites
# then run as they do after minutes of service, their maps of the ring
# learnt), PERF=1 (perf record -g of site 1 during the feed, kernel time
# included, which --cpuprofile misses in part; read it with `perf report
# -i DIR/perf.data`), WARM_MEMORY=0 (skip scripts/warm-memory.py, which
# compare-inn.sh runs too). Needs root (cgroups). Uses the cgroup v1 cpu
# controller at /sys/fs/cgroup/cpu, or v2's cpu.max.
set -euo pipefail
case ${1:-} in
-h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0 ;;
"") ;;
*)
    echo "profile-sites: no arguments, only settings in the environment (--help)" >&2
    exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { echo "profile-sites: run as root (CPU cgroups)" >&2; exit 1; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=${N:-30000} SIZE=${SIZE:-2450} PHASES=${PHASES:-takethis} VNODES=${VNODES:-8} CPU=${CPU:-0.6} ROUNDS=${ROUNDS:-1}
PRE=${PRE:-0}
[[ $PRE =~ ^[0-9]+$ ]] || { echo "profile-sites: PRE wants a number of articles, got $PRE" >&2; exit 2; }
if [ "${PERF:-0}" = 1 ] && ! command -v perf >/dev/null; then
    echo "profile-sites: PERF=1 needs perf (apt-get install linux-perf)" >&2
    exit 2
fi
for v in N SIZE VNODES ROUNDS; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "profile-sites: $v wants a positive integer, got ${!v}" >&2; exit 2; }
done
quota=$(python3 -c 'import os, sys; c = float(sys.argv[1]); assert 0.05 <= c <= os.cpu_count(); print(round(c * 100000))' "$CPU" 2>/dev/null) ||
    { echo "profile-sites: CPU wants a number of cores from 0.05 to $(nproc), got $CPU" >&2; exit 2; }
DIR=$(mktemp -d /tmp/profile-sites.XXXXXX)
BIN=${BIN:-}
if [ -z "$BIN" ]; then
    BIN=$DIR/triad
    (cd "$ROOT" && go build -o "$BIN" ./cmd/triad)
fi
if [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
    CG=/sys/fs/cgroup/cpu CGV=1
elif grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    CG=/sys/fs/cgroup CGV=2
    echo +cpu >"$CG/cgroup.subtree_control" 2>/dev/null || true
else
    echo "profile-sites: no cgroup cpu controller (v1 /sys/fs/cgroup/cpu or v2 cpu.max)" >&2
    exit 1
fi
GROUPS_LIST=triad.bench,triad.bench.large
node0=17100 news0=17200 secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
pids=() nodes=()
cleanup() {
    [ ${#pids[@]} = 0 ] || { kill -INT "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true; }
    local i p
    for i in 1 2 3; do
        [ -d "$CG/profile-sites-$$-$i" ] || continue
        while read -r p; do echo "$p" >"$CG/cgroup.procs" 2>/dev/null || true; done <"$CG/profile-sites-$$-$i/cgroup.procs"
        rmdir "$CG/profile-sites-$$-$i" 2>/dev/null || true
    done
    [ -z "$REPORTING" ] || python3 "$ROOT/scripts/warm-memory.py" --restore "$REPORTING" || true
    [ "${KEEP:-0}" = 1 ] || rm -rf "$DIR"/node* "$DIR"/site[0-9]
}
REPORTING=""
trap cleanup EXIT
# a VM's memory as a real machine's, as compare-inn.sh does
[ "${WARM_MEMORY:-1}" != 1 ] || REPORTING=$(python3 "$ROOT/scripts/warm-memory.py")
wait_port() {
    local _
    for _ in $(seq 100); do
        # shellcheck disable=SC2016 # $0 is the inner shell's
        timeout 1 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0"' "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "profile-sites: nothing answers on 127.0.0.1:$1" >&2
    return 1
}
for i in 0 1 2; do
    : >"$DIR/peers$i"
    for j in 0 1 2; do
        [ "$i" = "$j" ] || printf '[[peer]]\nname = "site%d"\naddr = "127.0.0.1:%d"\nmode = "mesh"\nsecret = "%s"\n\n' \
            $((j + 1)) $((news0 + j)) "$secret" >>"$DIR/peers$i"
    done
done
for i in 0 1 2; do
    cg=$CG/profile-sites-$$-$((i + 1))
    mkdir -p "$cg"
    if [ "$CGV" = 1 ]; then
        echo 100000 >"$cg/cpu.cfs_period_us"
        echo "$quota" >"$cg/cpu.cfs_quota_us"
    else
        echo "$quota 100000" >"$cg/cpu.max"
    fi
    args=(site --listen "127.0.0.1:$((news0 + i))" --data "$DIR/site$i" --pathhost "site$((i + 1))" --peers "$DIR/peers$i"
        --groups "$GROUPS_LIST" --node-listen "127.0.0.1:$((node0 + i))" --node-data "$DIR/node$i"
        --node-vnodes "$VNODES")
    [ "$i" = 0 ] || args+=(--node-join "127.0.0.1:$node0")
    [ "${PROF:-0}" != 1 ] || args+=(--cpuprofile "$DIR/cpu$i.prof")
    # shellcheck disable=SC2206 # EXTRA is a list of flags
    [ -z "${EXTRA:-}" ] || args+=($EXTRA)
    "$BIN" "${args[@]}" >"$DIR/site$i.log" 2>&1 &
    pids+=($!)
    echo $! >"$cg/cgroup.procs"
    wait_port $((node0 + i))
    # each site joins the ring the ones before it made (a new node chooses
    # its positions from the ring it sees), as compare-inn.sh starts them
    nodes+=("127.0.0.1:$((node0 + i))")
    [ "$i" = 0 ] || python3 "$ROOT/scripts/wait-ring.py" "$BIN" "${nodes[@]}" >/dev/null
done
for i in 0 1 2; do wait_port $((news0 + i)); done
# field F of each site's /proc/PID/stat (10: minor faults), or with no F
# its CPU ticks (user + system)
stat_of() {
    local p
    for p in "${pids[@]}"; do
        awk -v f="${1:-0}" '{print f ? $f : $14 + $15}' "/proc/$p/stat"
    done | tr '\n' ' '
}
throttled() {
    local i
    for i in 1 2 3; do
        awk '/nr_throttled/ {print $2}' "$CG/profile-sites-$$-$i/cpu.stat"
    done | tr '\n' ' '
}
if [ "$PRE" -gt 0 ]; then
    echo "feeding and reading back $PRE articles of 2,450 bytes first (PRE)..." >&2
    "$BIN" bench nntp --addr 127.0.0.1:$news0 --size 2450 --group triad.bench --articles "$PRE" \
        --phases takethis,article --max-seconds 120 >"$DIR/pre.out" 2>"$DIR/pre.log" ||
        { echo "profile-sites: the PRE feed failed:" >&2; tail -3 "$DIR/pre.log" >&2; exit 1; }
fi
for round in $(seq "$ROUNDS"); do
[ "$ROUNDS" = 1 ] || echo "round $round of $ROUNDS"
t0=$(stat_of) f0=$(stat_of 10) th0=$(throttled)
if [ "${STRACE:-0}" = 1 ]; then
    strace -c -f -p "${pids[0]}" -o "$DIR/strace.txt" &
    spid=$!
    sleep 1
fi
if [ "${PERF:-0}" = 1 ]; then
    perf record -q -F 999 -g -p "${pids[0]}" -o "$DIR/perf.data" 2>"$DIR/perf.log" &
    perfpid=$!
    sleep 1
fi
group=triad.bench
[ "$SIZE" -gt 16384 ] && group=triad.bench.large
# shellcheck disable=SC2086 # BENCH is a list of flags
"$BIN" bench nntp --addr 127.0.0.1:$news0 --size "$SIZE" --group $group --articles "$N" --phases "$PHASES" \
    --max-seconds 60 ${BENCH:-} 2>"$DIR/bench.log" | tee "$DIR/bench.out"
if [ "${PERF:-0}" = 1 ]; then
    kill -INT "$perfpid"
    wait "$perfpid" || true
fi
if [ "${STRACE:-0}" = 1 ]; then
    kill -INT "$spid"
    wait "$spid" || true
    head -20 "$DIR/strace.txt"
fi
t1=$(stat_of) f1=$(stat_of 10) th1=$(throttled)
python3 - "$t0" "$t1" "$f0" "$f1" "$th0" "$th1" "$N" <<'PY'
import sys
t0, t1, f0, f1, h0, h1 = ([int(x) for x in a.split()] for a in sys.argv[1:7])
n = int(sys.argv[7])
d = [b - a for a, b in zip(t0, t1)]
print("CPU ticks per site:", d, " minor faults:", [b - a for a, b in zip(f0, f1)],
      " throttled periods:", [b - a for a, b in zip(h0, h1)])
print(f"CPU per article: site 1 {d[0] * 10000 / n:.0f} µs, all sites {sum(d) * 10000 / n:.0f} µs")
PY
done
echo "profile-sites: logs${PROF:+ and profiles} in $DIR"
