#!/usr/bin/env bash
# Measures triad's NNTP server and INN 2.7 side by side, in one run, on this
# machine, with the same load generator (`triad bench nntp`): 10,000
# articles of 2,450 bytes (the anchor's text articles) and 1,000 of 240,000
# bytes (its binaries), fed with TAKETHIS, POSTed, read with ARTICLE and
# BODY from 1, 4 and 16 connections, and OVER. Prints a markdown table of
# both sets of figures and triad's ratio to INN. The two servers take
# turns, TURNS times (default 3), and each figure is the median of its
# turns: this machine's speed drifts too much for one pass of each.
#
# INN comes from its anchor (../shared/anchors/inn2/run.sh, sourced for its
# functions): installed if missing, configured on 127.0.0.1:$INN_PORT, a
# fresh spool, innd started as user news and stopped again at the end (by
# its PID) unless KEEP_INN=1. The groups triad.bench and triad.bench.large
# are created on INN; the triad server at TRIAD_ADDR must carry them too.
# Without TRIAD_ADDR, or when nothing answers there, only INN is measured.
#
# Needs root. Writes only under $OUT (default a new /tmp folder) and INN's
# own places (/etc/news, /var/spool/news, /var/lib/news). A turn of both
# servers takes about a minute here (every phase is bounded by
# PHASE_SECONDS, default 15). KEEP_INN=1 leaves innd running afterwards, for
# INN_ADDR=127.0.0.1:1119 go test ./internal/bench -run INN.
#
#   sudo TRIAD_ADDR=127.0.0.1:1190 scripts/compare-inn.sh
#
# --sites N (UsenetDHT): instead of a server at TRIAD_ADDR, starts a
# deployment of N news sites sharing one ring, as N machines would run it:
# N `triad node` processes (k = 2 replicas) and N `triad nntp --node`
# front-ends peered in a full mesh, all on 127.0.0.1 under $OUT/sites.
# Articles are fed and POSTed to site 1 (the load generator talks to its
# front-end; the front-end puts each article through its own node, which
# stores it on the key's two successors, durable before the 239/240) and
# read at site 2, a site that did not ingest them and learned of them by
# announcement (its first read of each pulls it from the DHT into its
# cache). POST runs on 1 and 8 connections; the disk's fdatasync latency
# is measured in the same run. The last line is one JSON object of
# triad/INN ratios (takethis_2k, takethis_240k, article_2k, article_240k,
# post_8): a phase with failed or missing articles on either side gets
# null and its failure count instead.
#
#   sudo scripts/compare-inn.sh --sites 3
#
# --cpu-per-site C (with --sites): equal hardware per site on one machine.
# innd runs in a CPU cgroup of C cores, and each site (its node and its
# front-end, as one machine would run them) in a cgroup of its own with the
# same C; the load generator stays outside. The cgroup v1 cpu controller
# (/sys/fs/cgroup/cpu: cpu.cfs_quota_us over a 100 ms period) is used where
# it is mounted, else v2's cpu.max. The cgroups are removed at the end.
#
#   sudo scripts/compare-inn.sh --sites 3 --cpu-per-site 0.6
set -euo pipefail
SITES=0 CPU_PER_SITE=""
while [ $# -gt 0 ]; do
    case $1 in
    --sites)
        SITES=${2:?--sites needs a number}
        [ "$SITES" -ge 2 ] && [ "$SITES" -le 8 ] || { echo "compare-inn: --sites wants 2 to 8" >&2; exit 2; }
        shift 2 ;;
    --cpu-per-site)
        CPU_PER_SITE=${2:?--cpu-per-site needs a number of cores, like 0.6}
        python3 -c 'import os, sys; c = float(sys.argv[1]); sys.exit(0 if 0.05 <= c <= os.cpu_count() else 1)' "$CPU_PER_SITE" 2>/dev/null ||
            { echo "compare-inn: --cpu-per-site wants a number of cores from 0.05 to $(nproc), got $CPU_PER_SITE" >&2; exit 2; }
        shift 2 ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
        exit 0 ;;
    *)
        echo "compare-inn: unknown argument $1 (--sites N [--cpu-per-site C]; --help)" >&2
        exit 2 ;;
    esac
done
[ -z "$CPU_PER_SITE" ] || [ "$SITES" -gt 0 ] || { echo "compare-inn: --cpu-per-site needs --sites" >&2; exit 2; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ANCHOR=${ANCHOR:-$ROOT/../shared/anchors/inn2}
OUT=${OUT:-$(mktemp -d /tmp/triad-vs-inn.XXXXXX)}
export INN_PORT=${INN_PORT:-1119}
[ "$(id -u)" = 0 ] || { echo "compare-inn: run as root (the anchor installs and starts INN)" >&2; exit 1; }
mkdir -p "$OUT"
echo "compare-inn: results in $OUT" >&2

TRIAD=""
if [ "$SITES" -gt 0 ]; then
    unset TRIAD_ADDR
elif [ -z "${TRIAD_ADDR:-}" ]; then
    echo "compare-inn: TRIAD_ADDR is not set: skipping triad, measuring INN only" >&2
else
    host=${TRIAD_ADDR%:*} port=${TRIAD_ADDR##*:}
    host=${host#[} host=${host%]}
    if timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$host" "$port" 2>/dev/null; then
        TRIAD=$TRIAD_ADDR
    else
        echo "compare-inn: nothing answers at TRIAD_ADDR=$TRIAD_ADDR: skipping triad, measuring INN only" >&2
    fi
fi

# CPU cgroups, one per "machine" (--cpu-per-site): cg_make NAME, then
# cg_add NAME PID... ; cg_remove_all at exit.
CG_ROOT="" CG_V=0 CG_MADE=()
cg_init() {
    if [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
        CG_ROOT=/sys/fs/cgroup/cpu CG_V=1
    elif [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
        CG_ROOT=/sys/fs/cgroup CG_V=2
        echo +cpu >"$CG_ROOT/cgroup.subtree_control" 2>/dev/null || true
    else
        echo "compare-inn: --cpu-per-site: no cgroup cpu controller (v1 /sys/fs/cgroup/cpu or v2 cpu.max)" >&2
        exit 1
    fi
}
cg_make() {
    local dir="$CG_ROOT/triad-compare-$$-$1" quota
    quota=$(python3 -c 'import sys; print(round(float(sys.argv[1]) * 100000))' "$CPU_PER_SITE")
    mkdir -p "$dir"
    CG_MADE+=("$dir")
    if [ "$CG_V" = 1 ]; then
        echo 100000 >"$dir/cpu.cfs_period_us"
        echo "$quota" >"$dir/cpu.cfs_quota_us"
    else
        echo "$quota 100000" >"$dir/cpu.max"
    fi
}
cg_add() {
    local dir="$CG_ROOT/triad-compare-$$-$1" pid
    shift
    for pid in "$@"; do
        echo "$pid" >"$dir/cgroup.procs"
    done
}
cg_remove_all() {
    local dir pid
    for dir in "${CG_MADE[@]}"; do
        [ -d "$dir" ] || continue
        # What still runs there (innd with KEEP_INN=1) goes back to the root.
        while read -r pid; do echo "$pid" >"$CG_ROOT/cgroup.procs" 2>/dev/null || true; done <"$dir/cgroup.procs"
        rmdir "$dir" 2>/dev/null || true
    done
}
[ -z "$CPU_PER_SITE" ] || cg_init

echo "compare-inn: building triad..." >&2
(cd "$ROOT" && go build -o "$OUT/triad" ./cmd/triad)

# The sites' deployment, stopped on exit by PID.
SITE_PIDS=()
stop_sites() { [ ${#SITE_PIDS[@]} = 0 ] || { kill -INT "${SITE_PIDS[@]}" 2>/dev/null || true; wait "${SITE_PIDS[@]}" 2>/dev/null || true; }; }
READ_ADDR=""
if [ "$SITES" -gt 0 ]; then
    ports=$(python3 "$ROOT/scripts/free-ports.py" $((2 * SITES)))
    NODE0=$ports NEWS0=$((ports + SITES))
    mkdir -p "$OUT/sites"
    secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
    for i in $(seq 0 $((SITES - 1))); do
        join=""
        [ "$i" = 0 ] || join="--join 127.0.0.1:$NODE0"
        # shellcheck disable=SC2086
        "$OUT/triad" node --listen "127.0.0.1:$((NODE0 + i))" --data "$OUT/sites/node$i" $join \
            >"$OUT/sites/node$i.log" 2>&1 &
        SITE_PIDS+=($!)
        if [ -n "$CPU_PER_SITE" ]; then
            cg_make "site$((i + 1))"
            cg_add "site$((i + 1))" $!
        fi
        sleep 0.5
    done
    for i in $(seq 0 $((SITES - 1))); do
        : >"$OUT/sites/peers$i"
        for j in $(seq 0 $((SITES - 1))); do
            [ "$i" = "$j" ] || printf '[[peer]]\nname = "site%d"\naddr = "127.0.0.1:%d"\nmode = "mesh"\nsecret = "%s"\n\n' \
                "$((j + 1))" "$((NEWS0 + j))" "$secret" >>"$OUT/sites/peers$i"
        done
        "$OUT/triad" nntp --listen "127.0.0.1:$((NEWS0 + i))" --data "$OUT/sites/site$i" --node "127.0.0.1:$((NODE0 + i))" \
            --pathhost "site$((i + 1))" --peers "$OUT/sites/peers$i" --groups triad.bench,triad.bench.large \
            >"$OUT/sites/site$i.log" 2>&1 &
        SITE_PIDS+=($!)
        [ -z "$CPU_PER_SITE" ] || cg_add "site$((i + 1))" $!
    done
    for i in $(seq 0 $((SITES - 1))); do
        for _ in $(seq 100); do
            timeout 1 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0"' "$((NEWS0 + i))" 2>/dev/null && break
            sleep 0.1
        done
    done
    TRIAD=127.0.0.1:$NEWS0 READ_ADDR=127.0.0.1:$((NEWS0 + 1))
    echo "compare-inn: $SITES sites: nodes on 127.0.0.1:$NODE0-$((NODE0 + SITES - 1)), news on 127.0.0.1:$NEWS0-$((NEWS0 + SITES - 1)); ingest at site1, reads at site2" >&2
fi

# The anchor's functions (install_inn, write_confs, reset_spool, start_innd,
# stop_innd); sourced, run.sh defines them and its settings, and returns.
# shellcheck source=/dev/null
source "$ANCHOR/run.sh"
BOUND=${PHASE_SECONDS:-15} # after run.sh, which sets its own MAXS
STEP="INN setup (log: $OUT/inn-setup.log)"
trap 'rc=$?; [ $rc = 0 ] || echo "compare-inn: failed (exit $rc) in $STEP" >&2; stop_sites; [ "${KEEP_INN:-0}" = 1 ] || stop_innd; cg_remove_all' EXIT
install_inn >"$OUT/inn-setup.log" 2>&1
write_confs >>"$OUT/inn-setup.log" 2>&1
reset_spool >>"$OUT/inn-setup.log" 2>&1
start_innd >>"$OUT/inn-setup.log" 2>&1
if [ -n "$CPU_PER_SITE" ]; then
    # innd and what it has started; readers' nnrpd processes are forked
    # from it later, inside.
    cg_make inn
    cg_add inn "$INND_PID" $(pgrep -P "$INND_PID" || true)
    echo "compare-inn: equal hardware: innd and each of the $SITES sites (node and front-end) in a CPU cgroup of $CPU_PER_SITE cores (cgroup v$CG_V); the load generator outside" >&2
fi
STEP="the benchmarks"
for g in triad.bench triad.bench.large; do
    asnews "$BIN/ctlinnd" -s newgroup "$g" y compare-inn
done
echo "compare-inn: INN $(dpkg-query -W -f='${Version}' inn2) running as pid $INND_PID on 127.0.0.1:$INN_PORT, fresh tradspool spool" >&2

# bench NAME ADDR ROUND: both sizes against one server; a failure is
# reported and leaves that server's cells of the round empty.
bench() {
    local name=$1 addr=$2 round=$3 size group extra
    for size in 2450 240000; do
        group=triad.bench
        [ "$size" -gt 16384 ] && group=triad.bench.large
        extra=()
        if [ "$SITES" -gt 0 ]; then
            extra=(--post-conns 1,8)
            [ "$name" = inn ] || extra+=(--read-addr "$READ_ADDR" --sync-probe "$OUT/sites")
            # CPU per article ingested: innd's, or the whole deployment's
            # (every node and front-end), as the bench reads it from /proc.
            if [ "$name" = inn ]; then
                extra+=(--cpu-pids "$INND_PID")
            else
                extra+=(--cpu-pids "$(IFS=,; echo "${SITE_PIDS[*]}")")
            fi
        fi
        echo "compare-inn: round $round, $name, $size-byte articles..." >&2
        if ! "$OUT/triad" bench nntp --addr "$addr" --size "$size" --group "$group" "${extra[@]}" \
            --max-seconds "$BOUND" --json >"$OUT/$name-$size-$round.txt" 2>"$OUT/$name-$size-$round.log"; then
            echo "compare-inn: $name at $size bytes failed:" >&2
            tail -3 "$OUT/$name-$size-$round.log" >&2
        fi
    done
}
# This machine's speed drifts by a third within minutes, so the servers take
# turns, TURNS times (the first to go alternates), and the table gives
# each figure's median over the rounds.
TURNS=${TURNS:-3}
for round in $(seq "$TURNS"); do
    if [ -n "$TRIAD" ] && [ $((round % 2)) = 0 ]; then
        bench triad "$TRIAD" "$round"
        bench inn "127.0.0.1:$INN_PORT" "$round"
    else
        bench inn "127.0.0.1:$INN_PORT" "$round"
        [ -z "$TRIAD" ] || bench triad "$TRIAD" "$round"
    fi
done

python3 - "$OUT" "$TURNS" "$SITES" "$CPU_PER_SITE" <<'PY'
import json, os, statistics, sys
out, rounds, cpu_per_site = sys.argv[1], int(sys.argv[2]), sys.argv[4]
def load1(name, size, r):
    try:
        lines = open(f"{out}/{name}-{size}-{r}.txt").read().strip().splitlines()
        return json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None
    except OSError:
        return None
def load(name, size):
    """The rounds' figures, each phase's numbers the median over the rounds."""
    got = [x for x in (load1(name, size, r) for r in range(1, rounds + 1)) if x]
    if not got:
        return None
    merged = dict(got[0])
    def med(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None
    phases = []
    for p in got[0].get("phases", []):
        same = [q for x in got for q in x.get("phases", []) if (q["name"], q["conns"], q["quickack"]) == (p["name"], p["conns"], p["quickack"])]
        phases.append(dict(p, ops_per_sec=med(q["ops_per_sec"] for q in same), mbps=med(q["mbps"] for q in same),
                           p50_ms=med(q["p50_ms"] for q in same), server_cpu_us=med(q.get("server_cpu_us") for q in same),
                           client_cpu_us=med(q.get("client_cpu_us") for q in same), failed=sum(q["failed"] for q in same),
                           done=min(q["done"] for q in same), rounds=len(same)))
    merged["phases"] = phases
    for k in ("sync_p50_ms", "listed_after_seconds"):
        merged[k] = med(x.get(k) for x in got)
    overs = [x.get("over") for x in got if x.get("over")]
    if overs:
        merged["over"] = dict(overs[0], lines_per_sec=med(o.get("lines_per_sec") for o in overs))
    return merged
def cell(v, fmt):
    return "" if v is None else fmt.format(v)
def ratio(t, i, failed=0):
    if failed:
        return f"no ratio: {failed} failed"
    return "" if t is None or not i else f"{t / i:.2f}x"
print("| size | phase | conns | INN art/s | INN MB/s | triad art/s | triad MB/s | triad/INN art/s | triad/INN MB/s |")
print("|---|---|---|---|---|---|---|---|---|")
for size in (2450, 240000):
    runs = {n: load(n, size) for n in ("inn", "triad")}
    keys = []
    for r in runs.values():
        for p in (r or {}).get("phases", []):
            k = (p["name"] + ("" if p["quickack"] else " (no quickack)"), p["conns"])
            if k not in keys:
                keys.append(k)
    def fig(n, k, f):
        for p in (runs[n] or {}).get("phases", []):
            if (p["name"] + ("" if p["quickack"] else " (no quickack)"), p["conns"]) == k:
                return p[f]
        return None
    for k in keys:
        ia, im, ta, tm = fig("inn", k, "ops_per_sec"), fig("inn", k, "mbps"), fig("triad", k, "ops_per_sec"), fig("triad", k, "mbps")
        # A phase with failures on either side is no basis for a ratio.
        failed = (fig("inn", k, "failed") or 0) + (fig("triad", k, "failed") or 0)
        head = k in (("takethis", 1), ("article", 16))
        name = f"**{k[0]}**" if head else k[0]
        print(f"| {size:,} B | {name} | {k[1]} | {cell(ia, '{:,.0f}')} | {cell(im, '{:.1f}')} | {cell(ta, '{:,.0f}')} | {cell(tm, '{:.1f}')} | {ratio(ta, ia, failed)} | {ratio(tm, im, failed)} |")
    over = {n: (runs[n] or {}).get("over") for n in runs}
    io, to = [(o or {}).get("lines_per_sec") for o in (over["inn"], over["triad"])]
    print(f"| {size:,} B | over (lines/s) | 1 | {cell(io, '{:,.0f}')} | | {cell(to, '{:,.0f}')} | | {ratio(to, io)} | |")
print()
print(f"- Medians of {rounds} rounds; the servers took turns.")
if cpu_per_site:
    print(f"- Equal hardware: innd in a CPU cgroup of {cpu_per_site} cores, and each site (its node and front-end) in one of its own with the same quota; the load generator outside them.")
for n in ("inn", "triad"):
    for size in (2450, 240000):
        r = load(n, size)
        if r is None:
            print(f"- {n}, {size:,} B: no figures (see {out}/{n}-{size}-*.log)")
        elif n == "inn" and size == 2450:
            print(f"- INN: {r['greeting']}")
sites = int(sys.argv[3])
if sites:
    # One JSON line of triad/INN ratios at the ingesting site (reads at a
    # site that did not ingest), medians of the rounds.
    def one(size, name, conns, field):
        out = {}
        for n in ("inn", "triad"):
            r = load(n, size) or {}
            p = next((p for p in r.get("phases", []) if p["name"] == name and p["conns"] == conns and p["quickack"]), None)
            if p is None:
                return None, f"{n}: no {name} phase"
            if p.get("failed"):
                return None, f"{n}: {p['failed']} failed"
            if p["done"] < p["offered"]:
                return None, f"{n}: {p['offered'] - p['done']} of {p['offered']} missing"
            out[n] = p[field]
        return round(out["triad"] / out["inn"], 3) if out["inn"] else None, None
    line = {"sites": sites}
    if cpu_per_site:
        line["cpu_per_site"] = float(cpu_per_site)
    for key, size, name, conns, field in (("takethis_2k", 2450, "takethis", 1, "ops_per_sec"), ("takethis_240k", 240000, "takethis", 1, "mbps"),
                                          ("article_2k", 2450, "article", 16, "ops_per_sec"), ("article_240k", 240000, "article", 16, "mbps"),
                                          ("post_8", 2450, "post", 8, "ops_per_sec")):
        ratio, why = one(size, name, conns, field)
        line[key] = ratio
        if why:
            line[key + "_why"] = why
    # CPU microseconds per article ingested, on this machine's shared cores:
    # innd alone against the whole deployment, and the load generator's.
    for key, size, name, conns in (("takethis_2k", 2450, "takethis", 1), ("takethis_240k", 240000, "takethis", 1), ("post_8", 2450, "post", 8)):
        for n in ("inn", "triad"):
            p = next((p for p in (load(n, size) or {}).get("phases", []) if p["name"] == name and p["conns"] == conns), None)
            if p and p.get("server_cpu_us") is not None:
                line[f"{key}_cpu_us_{n}"] = round(p["server_cpu_us"])
                line[f"{key}_client_cpu_us_{n}"] = round(p["client_cpu_us"] or 0)
    t = load("triad", 2450) or {}
    p1 = next((p for p in t.get("phases", []) if p["name"] == "post" and p["conns"] == 1), None)
    if p1:
        line["post_1_p50_ms"] = p1.get("p50_ms")
    if t.get("sync_p50_ms") is not None:
        line["disk_sync_p50_ms"] = t["sync_p50_ms"]
    if t.get("listed_after_seconds") is not None:
        line["site2_listed_after_s"] = t["listed_after_seconds"]
    print(json.dumps(line))
PY
