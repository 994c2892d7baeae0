#!/usr/bin/env bash
# d2-restarts.sh: issue 43's checks of D2 on real processes with a FUSE
# mount (as root, with /dev/fuse):
#
#   1. RESTARTS restarts (default 5) of the node that owns the volume's
#      lease block, GAP seconds apart (default 15), each a SIGKILL and a
#      start on the same data, while a writer creates a file in the mount
#      and fsyncs it every second: after each the mount must still be
#      writable, and at the end every file whose fsync returned must read
#      back with its hash (through the mount and through a fresh read-only
#      mount).
#   2. cp -r of Go's src/net into the mount (default close-to-open mode),
#      SIGKILL of the mount as soon as cp returns, a remount: diff -r must
#      be clean.
#
# It prints each step and a summary line, and exits 1 on a failed check.
#
#   sudo scripts/d2-restarts.sh            # NODES=8 RESTARTS=5 GAP=15
#   sudo BIN=/tmp/triad-old scripts/d2-restarts.sh   # another build
set -euo pipefail

if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  sed -n '2,/^set -euo/p' "$0" | sed 's/^# \{0,1\}//; /^set -euo/d'
  exit 0
fi
[ "$(id -u)" = 0 ] && [ -c /dev/fuse ] || { echo "d2-restarts.sh: needs root and /dev/fuse (FUSE mounts)" >&2; exit 2; }

NODES=${NODES:-8}
RESTARTS=${RESTARTS:-5}
GAP=${GAP:-15}
PORT=${PORT:-4601}
dir=$(mktemp -d /tmp/d2-restarts.XXXXXX)
if [ -z "${BIN:-}" ]; then
  BIN=$dir/triad
  (cd "$(dirname "$0")/.." && go build -o "$BIN" ./cmd/triad)
fi
export XDG_CONFIG_HOME=$dir/config
declare -a pids addrs
mountpid=

cleanup() {
  rm -f "$dir/writing"
  [ -n "$mountpid" ] && kill "$mountpid" 2>/dev/null || true
  for m in "$dir/mnt" "$dir/ro"; do umount -l "$m" 2>/dev/null || true; done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

start_node() { # index
  local i=$1 args=(node --listen "${addrs[$1]}" --data "$dir/node$1" --d2 --d2-stabilize 1s)
  [ "$i" -gt 0 ] && args+=(--join "${addrs[0]}")
  "$BIN" "${args[@]}" >>"$dir/node$i.log" 2>&1 &
  pids[$i]=$!
}

for i in $(seq 0 $((NODES - 1))); do
  addrs[$i]=127.0.0.1:$((PORT + i))
  start_node "$i"
  sleep 0.3
done
all=$(IFS=,; echo "${addrs[*]}")
fs() { "$BIN" fs "$@"; }

for _ in $(seq 1 120); do
  fs mkvol home --addr "${addrs[0]}" >"$dir/mkvol.out" 2>&1 && break
  sleep 1
done
grep -qE '^[0-9a-f]{40}$' "$dir/mkvol.out" || { cat "$dir/mkvol.out"; echo "FAIL: mkvol"; exit 1; }
mkdir -p "$dir/mnt" "$dir/ro"
# mount_rw mounts home writable, retrying while a killed mount's lease
# (10 s) has not lapsed.
mount_rw() {
  for _ in $(seq 1 30); do
    : >"$dir/mount.log"
    "$BIN" fs mount home "$dir/mnt" --addr "$all" --lease 10s >>"$dir/mount.log" 2>&1 &
    mountpid=$!
    for _ in $(seq 1 40); do
      grep -q "triad fs: mounted" "$dir/mount.log" && return 0
      kill -0 "$mountpid" 2>/dev/null || break
      sleep 0.25
    done
    kill "$mountpid" 2>/dev/null || true
    wait "$mountpid" 2>/dev/null || true
    sleep 2
  done
  tail "$dir/mount.log"
  echo "FAIL: mount"
  exit 1
}
mount_rw
echo "$NODES nodes, volume home mounted on $dir/mnt"

# The writer: a file a second, fsynced; each one whose fsync returned is
# recorded with its SHA-256.
touch "$dir/writing"
python3 - "$dir" <<'EOF' &
import hashlib, os, sys, time
d = sys.argv[1]
i = 0
with open(os.path.join(d, "acked"), "a") as acked, open(os.path.join(d, "writer.log"), "a") as log:
    while os.path.exists(os.path.join(d, "writing")):
        i += 1
        data = os.urandom(2000 + i * 37 % 30000)
        name = "f%04d" % i
        try:
            fd = os.open(os.path.join(d, "mnt", name), os.O_CREAT | os.O_WRONLY, 0o644)
            os.write(fd, data)
            os.fsync(fd)
            os.close(fd)
            acked.write("%s %s\n" % (name, hashlib.sha256(data).hexdigest()))
            acked.flush()
        except OSError as e:
            log.write("%s %s: %s\n" % (time.strftime("%H:%M:%S"), name, e))
            log.flush()
        time.sleep(1)
EOF
writerpid=$!

owner() {
  fs status home --addr "$all" 2>/dev/null | awk '/^lease held by:/ {gsub(",", "", $4); print $4; exit}'
}
fail=0
for r in $(seq 1 "$RESTARTS"); do
  sleep "$GAP"
  o=$(owner)
  idx=-1
  for i in "${!addrs[@]}"; do [ "${addrs[$i]}" = "$o" ] && idx=$i; done
  [ "$idx" -ge 0 ] || { echo "restart $r: no lease owner found ($o)"; fail=1; continue; }
  kill -9 "${pids[$idx]}"; wait "${pids[$idx]}" 2>/dev/null || true
  sleep 1
  start_node "$idx"
  sleep 3
  if echo probe >"$dir/mnt/probe$r" 2>>"$dir/writer.log"; then w=writable; else w="NOT WRITABLE"; fail=1; fi
  echo "restart $r: killed and restarted the lease block's owner $o; the mount is $w; $(wc -l <"$dir/acked") fsyncs acknowledged"
done
sleep 3
rm -f "$dir/writing"
wait "$writerpid" || true
errors=$(wc -l <"$dir/writer.log" 2>/dev/null || echo 0)

check() { # root label
  local lost=0
  while read -r name sum; do
    got=$(sha256sum "$1/$name" 2>/dev/null | cut -d' ' -f1)
    [ "$got" = "$sum" ] || lost=$((lost + 1))
  done <"$dir/acked"
  echo "$2: $(wc -l <"$dir/acked") fsynced files, $lost lost"
  [ "$lost" = 0 ] || fail=1
}
check "$dir/mnt" "through the writable mount"
"$BIN" fs mount home "$dir/ro" --ro --addr "$all" >"$dir/ro.log" 2>&1 &
ropid=$!
for _ in $(seq 1 60); do grep -q "triad fs: mounted" "$dir/ro.log" && break; sleep 0.5; done
check "$dir/ro" "through a fresh read-only mount"
kill "$ropid"; wait "$ropid" 2>/dev/null || true
if grep -q "lease lost" "$dir/mount.log"; then echo "the mount logged a lost lease:"; grep "lease lost" "$dir/mount.log" | head -3; fail=1; fi
echo "writer errors: $errors (in $dir/writer.log)"

# 2. cp -r, then SIGKILL of the mount as soon as cp returns.
src=$(go env GOROOT)/src/net
start=$(date +%s.%N)
cp -r "$src" "$dir/mnt/"
took=$(echo "$(date +%s.%N) - $start" | bc)
kill -9 "$mountpid"; wait "$mountpid" 2>/dev/null || true
umount -l "$dir/mnt" 2>/dev/null || true
mountpid=
sleep 1
mount_rw
if diff -r "$src" "$dir/mnt/net" >"$dir/diff.out" 2>&1; then d=clean; else d="NOT CLEAN ($(wc -l <"$dir/diff.out") lines)"; fail=1; fi
files=$(find "$src" -type f | wc -l)
echo "cp -r $src ($files files) into the mount: ${took}s; mount SIGKILLed as cp returned; after a remount diff -r is $d"
[ "$fail" = 0 ] && echo "d2-restarts: PASS" || { echo "d2-restarts: FAIL (logs in $dir)"; exit 1; }
