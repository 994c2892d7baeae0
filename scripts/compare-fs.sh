#!/usr/bin/env bash
# compare-fs.sh: D2 beside the local disk, the FUSE ceiling and GlusterFS,
# on the same workloads, in one run, on this machine (issue 46).
#
#   scripts/compare-fs.sh [--quick] [--turns N] [--targets local,loopback,gluster,d2]
#
# Targets:
#   local     a folder on the local disk (ext4 or whatever /tmp is)
#   loopback  go-fuse's own example/loopback over a local folder, built from
#             the module cache at the version triad uses: the ceiling for any
#             Go FUSE file system here
#   gluster   a GlusterFS replica-3 volume from Debian's glusterfs-server, 3
#             bricks on local folders, FUSE-mounted (mount -t glusterfs)
#   d2        D2 on `triad up --sites 3 --nodes 2` (6 nodes in one process,
#             mutual TLS, r = 3), one writable `triad fs mount` in its
#             default mode, close-to-open: a close of a changed file returns
#             once the file is durable on the volume's replicas
#
# Workloads, each in a fresh folder, in interleaved turns (turn 1 runs
# every workload on every target, then turn 2, ...); the table gives the
# median of the turns:
#   cp       cp -r of the tree (Go's src; --quick: src/encoding) + sync
#            (and, on D2, `triad fs sync`, which finds nothing left)
#   diff     diff -r of the copy against the tree, cold: the file system is
#            unmounted and mounted again first (local: caches dropped
#            where the kernel lets us, else warm, and said so)
#   tar      tar c of the copy, cold, to a pipe that counts its bytes
#   lsR      ls -lR of the copy, warm
#   create   N empty files made by touch (10,000; --quick 1,000) + sync
#   w64      a 64 MiB file written with dd conv=fsync; r64 read back cold
#   w1g      a 1 GiB file, the same (not with --quick); r1g
#   clone    git clone of this repository (file://) then git status
#   build    go build ./... of the clone, in the mount (warm build cache;
#            --quick: ./internal/d2/key)
# Every copy is checked (diff -r, sha256 of the big files, the clone's
# HEAD), and a failed or wrong-bytes operation makes the script exit 1;
# a workload with a failure on a target gets no ratio.
#
# Ratios are speeds: loopback's time / D2's time ("D2/loopback", the
# issue's target >= 0.5) and GlusterFS's time / D2's time. Every target
# shares this machine's cores: D2's 6 nodes and its mount, GlusterFS's
# glusterd, 3 bricks and client, and loopback's one process alike; none
# has a CPU cgroup of its own. Prints a table and a JSON line last.
# Needs root (mount(2), glusterd). Results go in $OUT. TRIAD_BIN names a
# triad binary to run instead of building this tree's (to compare builds).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
QUICK=0
TURNS=
TARGETS=local,loopback,gluster,d2
TREE=${TREE:-}
while [ $# -gt 0 ]; do
    case $1 in
    --quick) QUICK=1 ;;
    --turns) TURNS=$2; shift ;;
    --targets) TARGETS=$2; shift ;;
    --tree) TREE=$2; shift ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare-fs: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
if [ "$(id -u)" != 0 ] || [ ! -c /dev/fuse ]; then
    echo "compare-fs: needs root and /dev/fuse" >&2
    exit 2
fi
GOROOT_SRC=$(go env GOROOT)/src
if [ "$QUICK" = 1 ]; then
    TREE=${TREE:-$GOROOT_SRC/encoding}
    TURNS=${TURNS:-1}
    NCREATE=1000
    BIGS="64"
    BUILD_PKG=./internal/d2/key
else
    TREE=${TREE:-$GOROOT_SRC}
    TURNS=${TURNS:-3}
    NCREATE=10000
    BIGS="64 1024"
    BUILD_PKG=./...
fi
OUT=${OUT:-$(mktemp -d /tmp/triad-compare-fs.XXXXXX)}
mkdir -p "$OUT"
LOG=$OUT/log
RESULTS=$OUT/results.tsv
: >"$RESULTS"
echo "compare-fs: results and logs in $OUT" >&2
say() { echo "compare-fs: $*" >&2; }

# --- the targets: setup_T, mount_T, unmount_T, teardown_T; MNT_T is where
# the workloads run.

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; }
LOCAL_COLD=no
setup_local() { MNT_local=$OUT/local; mkdir -p "$MNT_local"; drop_caches && LOCAL_COLD=yes; }
mount_local() { drop_caches; return 0; }
unmount_local() { :; }
teardown_local() { rm -rf "$MNT_local"; }

wait_mounted() { # dir pid: waits for a FUSE mount on dir, 60 s at most
    local i
    for i in $(seq 600); do
        mountpoint -q "$1" && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
wait_gone() { # pid: waits for it to exit, 120 s at most, then kills it
    local i
    for i in $(seq 1200); do
        kill -0 "$1" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -9 "$1" 2>/dev/null
    return 1
}

setup_loopback() {
    MNT_loopback=$OUT/loopback-mnt
    LOOP_ORIG=$OUT/loopback-orig
    mkdir -p "$MNT_loopback" "$LOOP_ORIG"
    (cd "$ROOT" && go build -o "$OUT/loopback" github.com/hanwen/go-fuse/v2/example/loopback) || return 1
    mount_loopback
}
mount_loopback() {
    drop_caches
    "$OUT/loopback" -q -directmountstrict "$MNT_loopback" "$LOOP_ORIG" >>"$LOG.loopback" 2>&1 &
    LOOP_PID=$!
    wait_mounted "$MNT_loopback" "$LOOP_PID"
}
unmount_loopback() { umount "$MNT_loopback" && wait_gone "$LOOP_PID"; }
teardown_loopback() { unmount_loopback; rm -rf "$LOOP_ORIG"; }

GLUSTER_VOL=triadcmp$$
setup_gluster() {
    command -v glusterd >/dev/null || { say "glusterd not installed (apt-get install -y glusterfs-server)"; return 1; }
    MNT_gluster=$OUT/gluster-mnt
    mkdir -p "$MNT_gluster" "$OUT/bricks"
    pgrep -x glusterd >/dev/null || glusterd >>"$LOG.gluster" 2>&1 || return 1
    local i host
    host=$(hostname)
    for i in $(seq 100); do gluster --mode=script volume list >/dev/null 2>&1 && break; sleep 0.1; done
    gluster --mode=script volume create "$GLUSTER_VOL" replica 3 \
        "$host:$OUT/bricks/1" "$host:$OUT/bricks/2" "$host:$OUT/bricks/3" force >>"$LOG.gluster" 2>&1 || return 1
    gluster --mode=script volume start "$GLUSTER_VOL" >>"$LOG.gluster" 2>&1 || return 1
    mount_gluster
}
mount_gluster() {
    drop_caches
    local i
    for i in $(seq 30); do
        mount -t glusterfs "$(hostname):/$GLUSTER_VOL" "$MNT_gluster" >>"$LOG.gluster" 2>&1 && return 0
        sleep 1
    done
    return 1
}
unmount_gluster() { umount "$MNT_gluster"; }
teardown_gluster() {
    unmount_gluster 2>/dev/null
    gluster --mode=script volume stop "$GLUSTER_VOL" force >>"$LOG.gluster" 2>&1
    gluster --mode=script volume delete "$GLUSTER_VOL" >>"$LOG.gluster" 2>&1
}

setup_d2() {
    MNT_d2=$OUT/d2-mnt
    mkdir -p "$MNT_d2"
    if [ -n "${TRIAD_BIN:-}" ]; then
        cp "$TRIAD_BIN" "$OUT/triad" || return 1
    else
        (cd "$ROOT" && go build -o "$OUT/triad" ./cmd/triad) || return 1
    fi
    local port i
    port=$(python3 "$ROOT/scripts/free-ports.py" 6) || return 1
    D2_ADDRS=$(for i in 0 1 2 3 4 5; do printf '127.0.0.1:%d,' $((port + i)); done)
    D2_ADDRS=${D2_ADDRS%,}
    "$OUT/triad" up --sites 3 --nodes 2 --port "$port" --nntp-port 0 --http-port 0 \
        --data "$OUT/up" >>"$LOG.d2" 2>&1 &
    UP_PID=$!
    export TRIAD_TLS=$OUT/up/ca/bundles/operator
    for i in $(seq 120); do
        kill -0 "$UP_PID" 2>/dev/null || { say "triad up exited; see $LOG.d2"; return 1; }
        "$OUT/triad" fs mkvol bench --addr "$D2_ADDRS" --key "$OUT/bench.key" >>"$LOG.d2" 2>&1 && break
        [ "$i" = 120 ] && { say "no volume made in 120 s; see $LOG.d2"; return 1; }
        sleep 1
    done
    mount_d2
}
mount_d2() {
    "$OUT/triad" fs mount bench "$MNT_d2" --addr "$D2_ADDRS" --key "$OUT/bench.key" >>"$LOG.d2" 2>&1 &
    MOUNT_PID=$!
    wait_mounted "$MNT_d2" "$MOUNT_PID"
}
unmount_d2() { kill -INT "$MOUNT_PID" 2>/dev/null && wait_gone "$MOUNT_PID"; }
teardown_d2() {
    unmount_d2
    kill -INT "$UP_PID" 2>/dev/null && wait_gone "$UP_PID"
}

IFS=, read -r -a TARGET_LIST <<<"$TARGETS"
for t in "${TARGET_LIST[@]}"; do
    case $t in local | loopback | gluster | d2) ;; *) say "unknown target $t"; exit 2 ;; esac
done
STARTED=()
cleanup() {
    local t
    for t in "${STARTED[@]}"; do "teardown_$t" >/dev/null 2>&1; done
}
trap cleanup EXIT

# --- timing and checks

FAILED=0
now() { echo "$EPOCHREALTIME"; }
# record target workload turn seconds ok
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >>"$RESULTS"; }
# timed target workload turn command...: runs the command, records its time
timed() {
    local t=$1 w=$2 turn=$3 start end ok=1
    shift 3
    if ! alive "$t"; then
        record "$t" "$w" "$turn" 0 0
        say "$t: $w not run in turn $turn: the file system is not mounted"
        FAILED=1
        return 1
    fi
    start=$(now)
    "$@" >>"$LOG.$t" 2>&1 || ok=0
    end=$(now)
    local secs
    secs=$(python3 -c "print(f'{$end - $start:.3f}')")
    record "$t" "$w" "$turn" "$secs" "$ok"
    [ "$ok" = 1 ] || { say "$t: $w failed in turn $turn (see $LOG.$t)"; FAILED=1; }
    return $((1 - ok))
}
remount() { "unmount_$1" && "mount_$1"; }
# alive target: the target's file system is there (a FUSE mount that died
# leaves an empty folder, where a workload would measure the local disk).
alive() { [ "$1" = local ] || mountpoint -q "$(eval echo "\$MNT_$1")"; }

w_cp() { cp -r "$TREE" "$1/src" && sync && { [ "$T" != d2 ] || "$OUT/triad" fs sync "$MNT_d2"; }; }
w_diff() { diff -r "$TREE" "$1/src" >/dev/null; }
w_tar() {
    local n
    n=$(tar cf - -C "$1" src | wc -c)
    [ "$n" -ge "$TREE_BYTES" ] || { echo "tar c gave $n bytes, under the tree's $TREE_BYTES"; return 1; }
}
w_lsR() {
    local n
    n=$(ls -lR "$1/src" | grep -c '^-')
    [ "$n" = "$TREE_LS" ] || { echo "ls -lR listed $n files, $TREE_LS in the tree's own listing"; return 1; }
}
w_create() { mkdir "$1/empty" && seq -f "$1/empty/f%g" "$NCREATE" | xargs touch && sync; }
w_write() { dd if="$OUT/big$2" of="$1/big$2" bs=1M conv=fsync status=none; }
w_read() {
    local got
    got=$(sha256sum <"$1/big$2" | cut -d' ' -f1)
    [ "$got" = "$(cat "$OUT/big$2.sum")" ] || { echo "big$2 read back as $got"; return 1; }
}
w_clone() {
    git clone -q "file://$ROOT" "$1/repo" && git -C "$1/repo" status --short >/dev/null &&
        [ "$(git -C "$1/repo" rev-parse HEAD)" = "$(git -C "$ROOT" rev-parse HEAD)" ]
}
w_build() { (cd "$1/repo" && go build "$BUILD_PKG"); }

remount_or_fail() {
    remount "$1" && return 0
    say "$1: remount failed in turn $turn (see $LOG.$1)"
    FAILED=1
    return 1
}

# --- the run

TREE_FILES=$(find "$TREE" -type f | wc -l)
TREE_BYTES=$(du -sb "$TREE" | cut -f1)
TREE_LS=$(ls -lR "$TREE" | grep -c '^-') # ls shows some odd names on two lines
say "tree $TREE: $TREE_FILES files, $TREE_BYTES bytes; $TURNS turn(s); targets $TARGETS"
for mb in $BIGS; do
    head -c $((mb << 20)) /dev/urandom >"$OUT/big$mb"
    sha256sum <"$OUT/big$mb" | cut -d' ' -f1 >"$OUT/big$mb.sum"
done
for t in "${TARGET_LIST[@]}"; do
    say "starting $t"
    if ! "setup_$t"; then
        say "$t could not be started (see $LOG.$t)"
        FAILED=1
        record "$t" setup 0 0 0
        continue
    fi
    STARTED+=("$t")
done
for turn in $(seq "$TURNS"); do
    for T in "${STARTED[@]}"; do
        mv=MNT_$T
        dir=${!mv}/turn$turn
        say "turn $turn: $T"
        mkdir -p "$dir" || { FAILED=1; continue; }
        # A remount that fails ends the target's turn: what follows would
        # not run on it (alive, in timed, says so for each).
        if timed "$T" cp "$turn" w_cp "$dir"; then
            remount_or_fail "$T" && timed "$T" diff "$turn" w_diff "$dir"
            remount_or_fail "$T" && timed "$T" tar "$turn" w_tar "$dir"
            timed "$T" lsR "$turn" w_lsR "$dir"
        fi
        timed "$T" create "$turn" w_create "$dir"
        for mb in $BIGS; do
            w=$([ "$mb" = 1024 ] && echo 1g || echo "$mb")
            if timed "$T" "w$w" "$turn" w_write "$dir" "$mb"; then
                remount_or_fail "$T" && timed "$T" "r$w" "$turn" w_read "$dir" "$mb"
            fi
        done
        timed "$T" clone "$turn" w_clone "$dir" && timed "$T" build "$turn" w_build "$dir"
        # Free the disk for the next turn; not timed.
        rm -rf "$dir" >>"$LOG.$T" 2>&1
    done
done

python3 - "$RESULTS" "$QUICK" "$LOCAL_COLD" "$TREE_FILES" "$TREE_BYTES" <<'PY'
import json, statistics, sys
path, quick, local_cold, files, nbytes = sys.argv[1:]
rows = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
order = ["cp", "diff", "tar", "lsR", "create", "w64", "r64", "w1g", "r1g", "clone", "build"]
targets = [t for t in ["local", "loopback", "gluster", "d2"] if any(r[0] == t for r in rows)]
cell = {}
for t, w, turn, secs, ok in rows:
    c = cell.setdefault((t, w), {"secs": [], "failed": 0})
    if ok == "1":
        c["secs"].append(float(secs))
    else:
        c["failed"] += 1
def med(t, w):
    c = cell.get((t, w))
    if not c or c["failed"] or not c["secs"]:
        return None
    return statistics.median(c["secs"])
def show(t, w):
    c = cell.get((t, w))
    if not c:
        return "-"
    if c["failed"]:
        return "FAILED (%d)" % c["failed"]
    return "%.2f" % med(t, w)
def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b
print()
print("| workload | " + " | ".join(targets) + " | D2/loopback | D2/GlusterFS |")
print("|---" * (len(targets) + 3) + "|")
summary = {"quick": quick == "1", "tree_files": int(files), "tree_bytes": int(nbytes),
           "local_cold": local_cold == "yes", "workloads": {}}
for w in order:
    if not any((t, w) in cell for t in targets):
        continue
    d2 = med("d2", w)
    rl, rg = ratio(med("loopback", w), d2), ratio(med("gluster", w), d2)
    fmt = lambda r: "-" if r is None else "%.2f" % r
    print("| %s | %s | %s | %s |" % (w, " | ".join(show(t, w) for t in targets), fmt(rl), fmt(rg)))
    summary["workloads"][w] = {t: med(t, w) for t in targets}
    summary["workloads"][w]["d2_over_loopback"] = rl
    summary["workloads"][w]["d2_over_gluster"] = rg
print()
print("Seconds, median of the turns; ratios are speeds (the peer's time / D2's): "
      "D2/loopback >= 0.5 and D2/GlusterFS >= 5 (cp), >= 3 (diff) are the issue's targets.")
if local_cold != "yes":
    print("local: the kernel refused to drop its caches here, so local's cold reads are warm.")
print(json.dumps(summary))
PY
if [ "$FAILED" = 1 ]; then
    say "an operation failed (FAILED above; logs in $OUT)"
    exit 1
fi
