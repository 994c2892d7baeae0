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
# N `triad site` processes, each a node (k = 2 replicas) and the news
# front-end on it, peered in a full mesh, all on 127.0.0.1 under
# $OUT/sites (SITE_PROCESSES below).
# Phases, per size, in this order:
#   takethis (JSON: takethis_*_one): the whole feed at site 1 (the load
#     generator talks to its front-end; the front-end puts each article
#     through its own node, which stores it on the key's two successors,
#     durable before the 239);
#   post on 1 and 8 connections at site 1 (the disk's fdatasync latency is
#     measured in the same run);
#   article/body/over/plain read at site 2, a site that did not ingest
#     those articles and learned of them by announcement (its first read of
#     each pulls it from the DHT into its cache);
#   takethis-spread (takethis_*_spread), last: as many more articles as
#     takethis, offered at every site at once, one TAKETHIS connection per
#     site, split round-robin (each site takes 1/N from its own upstream).
#     First every site must list what the earlier phases fed; then the
#     phase counts only articles acknowledged AND listed at all N sites,
#     and its time runs from the first article sent to the moment the last
#     site is seen listing the last one (GROUP, then OVER for the
#     message-ids, every 10 ms after the feed). INN is one server: its
#     spread phase is the same N connections, all to innd.
# After the rounds, the bytes each side stores for the same feed (both
# took the same articles: same rounds, sizes and counts, and the article
# counts are printed so that can be checked): per site, `du` of its node's
# data dir plus its front-end's; for INN, its articles, overview and
# history (patharticles, pathoverview, tradspool.map, pathdb/history*, from
# innconfval). Apparent sizes (du -sb) are the headline; allocated blocks
# (du -s -B1) are printed beside them.
# The last line of a count is one JSON object: triad/INN ratios
# (takethis_2k_one, takethis_240k_one, takethis_2k_spread,
# takethis_240k_spread, article_2k, article_240k, post_8), the
# deployment's aggregate spread feed (feed_2k_spread_aps in articles/s,
# feed_240k_spread_mbps in MB/s), CPU µs per article, the bytes
# (bytes_per_site, bytes_inn, bytes_per_site_ratio = the largest site /
# INN, the same for allocated blocks, and articles_per_site, articles_inn).
# A phase with failed or missing articles on either side gets null and a
# `<key>_why` instead; so does the bytes ratio when the counts differ.
#
#   sudo scripts/compare-inn.sh --sites 3
#
# --sites N1,N2,... (a scaling run): each count in turn gets a fresh
# deployment and a fresh INN (a new spool, INN measured again with the same
# turns, so every count is a comparison of its own on the same feed), its
# results under $OUT/<N>sites, its table and its JSON line. A last JSON
# line gives the deployment's aggregate spread feed at each count
# (feed_240k_spread_mbps, feed_2k_spread_aps: lists in the order of the
# counts) and feed_240k_scaling: the largest count's 240 KB rate over the
# smallest count's.
#
#   sudo scripts/compare-inn.sh --sites 3,6 --cpu-per-site 0.3
#
# --cpu-per-site C (with --sites): equal hardware per site on one machine.
# innd runs in a CPU cgroup of C cores, and each site (its node and its
# front-end, as one machine would run them) in a cgroup of its own with the
# same C; the load generator stays outside. The cgroup v1 cpu controller
# (/sys/fs/cgroup/cpu: cpu.cfs_quota_us over a 100 ms period) is used where
# it is mounted, else v2's cpu.max. The cgroups are removed at the end.
#
#   sudo scripts/compare-inn.sh --sites 3 --cpu-per-site 0.6
#
# Quick runs: ARTICLES_SMALL (default 10000) and ARTICLES_LARGE (default
# 1000) set how many articles of 2,450 and 240,000 bytes each feed phase
# sends (the POST phases send a fifth as many), for both servers alike:
#
#   sudo TURNS=1 PHASE_SECONDS=5 ARTICLES_SMALL=2000 ARTICLES_LARGE=200 \
#       scripts/compare-inn.sh --sites 2,3 --cpu-per-site 0.4
#
# The sites' stores (a few GB a run) are removed once their bytes are
# measured, their logs kept; KEEP_SITES=1 keeps them.
#
# Each site is one `triad site` process, its front-end calling its node
# in-process as a site on a machine of its own would run them;
# SITE_PROCESSES=2 runs each as a `triad node` and a `triad nntp --node`
# process instead, talking over loopback TCP (both in the site's cgroup).
#
# SYNC_PERIOD (a duration, as 20ms) runs the sites with periodic
# durability (triad site --sync-period): an article is acknowledged once
# its copies and its listing are written, and synced within the period,
# as INN does (innd syncs nothing per article). Its figures are that
# mode's, not the durable one's, and the table says so.
#
# VNODES (default 8) sets each node's virtual servers (--vnodes): more
# spread the keys, and so the bytes and the work, more evenly over the
# sites, at some cost in ring upkeep. Every feed starts once the ring is
# consistent (scripts/wait-ring.py).
#
# As root it first makes the machine's memory behave as a real machine's
# (scripts/warm-memory.py: no free page reporting to a VM's host for the
# run, every page touched once; about a minute), and restores the setting
# at the end; WARM_MEMORY=0 skips that.
set -euo pipefail
SITES=0 COUNTS=() CPU_PER_SITE=""
while [ $# -gt 0 ]; do
    case $1 in
    --sites)
        IFS=, read -r -a COUNTS <<<"${2:?--sites needs a number, or a comma list of them}"
        [ ${#COUNTS[@]} -gt 0 ] || { echo "compare-inn: --sites needs a number" >&2; exit 2; }
        for n in "${COUNTS[@]}"; do
            if ! [[ $n =~ ^[0-9]+$ ]] || [ "$n" -lt 2 ] || [ "$n" -gt 8 ]; then
                echo "compare-inn: --sites wants counts of 2 to 8, got $n" >&2
                exit 2
            fi
        done
        SITES=${COUNTS[0]}
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
        echo "compare-inn: unknown argument $1 (--sites N[,N...] [--cpu-per-site C]; --help)" >&2
        exit 2 ;;
    esac
done
[ -z "$CPU_PER_SITE" ] || [ "$SITES" -gt 0 ] || { echo "compare-inn: --cpu-per-site needs --sites" >&2; exit 2; }
for v in ARTICLES_SMALL ARTICLES_LARGE; do
    [[ ${!v:-1} =~ ^[1-9][0-9]*$ ]] || { echo "compare-inn: $v wants a positive number of articles, got ${!v}" >&2; exit 2; }
done
VNODES=${VNODES:-8}
SYNC_PERIOD=${SYNC_PERIOD:-}
[ -z "$SYNC_PERIOD" ] || [[ $SYNC_PERIOD =~ ^[0-9]+(ms|s)$ ]] || { echo "compare-inn: SYNC_PERIOD wants a duration such as 20ms, got $SYNC_PERIOD" >&2; exit 2; }
SITE_PROCESSES=${SITE_PROCESSES:-1}
[[ $SITE_PROCESSES =~ ^[12]$ ]] || { echo "compare-inn: SITE_PROCESSES wants 1 (triad site) or 2 (triad node and triad nntp), got $SITE_PROCESSES" >&2; exit 2; }
[[ $VNODES =~ ^[1-9][0-9]?$ ]] || { echo "compare-inn: VNODES wants 1 to 99 virtual servers per node, got $VNODES" >&2; exit 2; }
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
    # shellcheck disable=SC2016 # $0 and $1 are the inner shell's
    if timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$host" "$port" 2>/dev/null; then
        TRIAD=$TRIAD_ADDR
    else
        echo "compare-inn: nothing answers at TRIAD_ADDR=$TRIAD_ADDR: skipping triad, measuring INN only" >&2
    fi
fi

# CPU cgroups, one per "machine" (--cpu-per-site): cg_make NAME, then
# cg_add NAME PID... ; cg_remove_all at exit. A later count of --sites
# reuses the names (the earlier count's processes are gone by then).
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
    [ -d "$dir" ] || CG_MADE+=("$dir")
    mkdir -p "$dir"
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
        # A process that has exited meanwhile (one of innd's short-lived
        # children) is no error.
        if ! echo "$pid" >"$dir/cgroup.procs" 2>/dev/null && kill -0 "$pid" 2>/dev/null; then
            echo "compare-inn: cannot put process $pid in $dir" >&2
            return 1
        fi
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

# The sites' deployment (start_sites N DIR), stopped by PID (stop_sites).
SITE_PIDS=() NEWS_ADDRS=()
stop_sites() { [ ${#SITE_PIDS[@]} = 0 ] || { kill -INT "${SITE_PIDS[@]}" 2>/dev/null || true; wait "${SITE_PIDS[@]}" 2>/dev/null || true; }; SITE_PIDS=(); }
READ_ADDR=""
start_sites() {
    local n=$1 dir=$2 ports node0 news0 secret i j join
    ports=$(python3 "$ROOT/scripts/free-ports.py" $((2 * n)))
    node0=$ports news0=$((ports + n))
    mkdir -p "$dir"
    secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
    NEWS_ADDRS=()
    for i in $(seq 0 $((n - 1))); do
        : >"$dir/peers$i"
        for j in $(seq 0 $((n - 1))); do
            [ "$i" = "$j" ] || printf '[[peer]]\nname = "site%d"\naddr = "127.0.0.1:%d"\nmode = "mesh"\nsecret = "%s"\n\n' \
                "$((j + 1))" "$((news0 + j))" "$secret" >>"$dir/peers$i"
        done
        NEWS_ADDRS+=("127.0.0.1:$((news0 + i))")
    done
    local news=(--groups "triad.bench,triad.bench.large") nodes=()
    for i in $(seq 0 $((n - 1))); do
        join=""
        [ "$i" = 0 ] || join="127.0.0.1:$node0"
        if [ "$SITE_PROCESSES" = 1 ]; then
            "$OUT/triad" site --listen "127.0.0.1:$((news0 + i))" --data "$dir/site$i" --pathhost "site$((i + 1))" \
                --peers "$dir/peers$i" "${news[@]}" --node-listen "127.0.0.1:$((node0 + i))" --node-data "$dir/node$i" \
                --node-vnodes "$VNODES" ${join:+--node-join "$join"} ${SYNC_PERIOD:+--sync-period "$SYNC_PERIOD"} >"$dir/site$i.log" 2>&1 &
        else
            "$OUT/triad" node --listen "127.0.0.1:$((node0 + i))" --data "$dir/node$i" --vnodes "$VNODES" \
                ${join:+--join "$join"} ${SYNC_PERIOD:+--sync-period "$SYNC_PERIOD"} >"$dir/node$i.log" 2>&1 &
        fi
        SITE_PIDS+=($!)
        if [ -n "$CPU_PER_SITE" ]; then
            cg_make "site$((i + 1))"
            cg_add "site$((i + 1))" $!
        fi
        for _ in $(seq 100); do
            # shellcheck disable=SC2016 # $0 is the inner shell's
            timeout 1 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0"' "$((node0 + i))" 2>/dev/null && break
            sleep 0.1
        done
        # Each site joins the ring the ones before it made: a new node
        # chooses its positions from the ring it sees (docs/architecture.md,
        # Positions). The feed starts on a consistent ring.
        nodes+=("127.0.0.1:$((node0 + i))")
        [ "$i" = 0 ] || python3 "$ROOT/scripts/wait-ring.py" "$OUT/triad" "${nodes[@]}"
    done
    if [ "$SITE_PROCESSES" = 2 ]; then
        for i in $(seq 0 $((n - 1))); do
            "$OUT/triad" nntp --listen "127.0.0.1:$((news0 + i))" --data "$dir/site$i" --node "127.0.0.1:$((node0 + i))" \
                --pathhost "site$((i + 1))" --peers "$dir/peers$i" "${news[@]}" ${SYNC_PERIOD:+--sync-period "$SYNC_PERIOD"} >"$dir/site$i.log" 2>&1 &
            SITE_PIDS+=($!)
            [ -z "$CPU_PER_SITE" ] || cg_add "site$((i + 1))" $!
        done
    fi
    for i in $(seq 0 $((n - 1))); do
        for _ in $(seq 100); do
            # shellcheck disable=SC2016 # $0 is the inner shell's
            timeout 1 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0"' "$((news0 + i))" 2>/dev/null && break
            sleep 0.1
        done
    done
    TRIAD=127.0.0.1:$news0 READ_ADDR=127.0.0.1:$((news0 + 1))
    echo "compare-inn: $n sites: nodes on 127.0.0.1:$node0-$((node0 + n - 1)), news on 127.0.0.1:$news0-$((news0 + n - 1)); ingest at site1 and at every site (spread), reads at site2" >&2
}

# The anchor's functions (install_inn, write_confs, reset_spool, start_innd,
# stop_innd); sourced, run.sh defines them and its settings, and returns.
# shellcheck source=/dev/null
source "$ANCHOR/run.sh"
BOUND=${PHASE_SECONDS:-15} # after run.sh, which sets its own MAXS
# A virtual machine's memory as a real machine's, for both servers alike:
# the host keeps what the guest frees, and every page was touched once
# (scripts/warm-memory.py: a page cache growing into pages the host took
# back cost 9x the CPU per 240 KB write, and more to triad's two copies
# than to INN's one).
# The trap is set first: a warm-up that fails or is killed still restores
# the setting it printed.
REPORTING=""
# shellcheck disable=SC2154 # rc is set inside the trap
trap 'rc=$?; [ -z "$REPORTING" ] || python3 "$ROOT/scripts/warm-memory.py" --restore "$REPORTING" || true; [ $rc = 0 ] || echo "compare-inn: failed (exit $rc) in $STEP" >&2; stop_sites; [ "${KEEP_INN:-0}" = 1 ] || stop_innd; cg_remove_all' EXIT
if [ "$(id -u)" = 0 ] && [ "${WARM_MEMORY:-1}" = 1 ]; then
    STEP="warming the memory (scripts/warm-memory.py)"
    REPORTING=$(python3 "$ROOT/scripts/warm-memory.py")
fi
STEP="INN setup (log: $OUT/inn-setup.log)"
install_inn >"$OUT/inn-setup.log" 2>&1
write_confs >>"$OUT/inn-setup.log" 2>&1

# fresh_inn: a new, empty spool and a started innd (in its cgroup with
# --cpu-per-site) carrying the bench groups.
fresh_inn() {
    STEP="INN setup (log: $OUT/inn-setup.log)"
    reset_spool >>"$OUT/inn-setup.log" 2>&1
    start_innd >>"$OUT/inn-setup.log" 2>&1
    if [ -n "$CPU_PER_SITE" ]; then
        # innd and what it has started; readers' nnrpd processes are forked
        # from it later, inside.
        cg_make inn
        # shellcheck disable=SC2046
        cg_add inn "$INND_PID" $(pgrep -P "$INND_PID" || true)
        echo "compare-inn: equal hardware: innd and each of the $SITES sites (node and front-end) in a CPU cgroup of $CPU_PER_SITE cores (cgroup v$CG_V); the load generator outside" >&2
    fi
    STEP="the benchmarks"
    for g in triad.bench triad.bench.large; do
        asnews "$BIN/ctlinnd" -s newgroup "$g" y compare-inn
    done
    echo "compare-inn: INN $(dpkg-query -W -f='${Version}' inn2) running as pid $INND_PID on 127.0.0.1:$INN_PORT, fresh tradspool spool" >&2
}

# bench NAME ADDR ROUND DIR: both sizes against one server; a failure is
# reported and leaves that server's cells of the round empty.
bench() {
    local name=$1 addr=$2 round=$3 dir=$4 size group extra articles
    for size in 2450 240000; do
        group=triad.bench articles=${ARTICLES_SMALL:-10000}
        [ "$size" -gt 16384 ] && group=triad.bench.large articles=${ARTICLES_LARGE:-1000}
        extra=()
        if [ "$SITES" -gt 0 ]; then
            extra=(--post-conns "1,8")
            # The spread feed: one connection to each site; INN, one
            # server, gets the same number of connections.
            if [ "$name" = inn ]; then
                extra+=(--spread-addrs "$(for _ in "${NEWS_ADDRS[@]}"; do printf '%s,' "$addr"; done)")
            else
                extra+=(--spread-addrs "$(IFS=,; echo "${NEWS_ADDRS[*]}")")
                extra+=(--read-addr "$READ_ADDR" --sync-probe "$dir/sites")
            fi
            # CPU per article ingested: innd's, or the whole deployment's
            # (every node and front-end), as the bench reads it from /proc.
            if [ "$name" = inn ]; then
                extra+=(--cpu-pids "$INND_PID")
            else
                extra+=(--cpu-pids "$(IFS=,; echo "${SITE_PIDS[*]}")")
            fi
        fi
        echo "compare-inn: round $round, $name, $articles articles of $size bytes..." >&2
        # What the other server's turn left dirty goes to the disk first,
        # so that neither side's turn pays for the other's writeback.
        sync
        if ! "$OUT/triad" bench nntp --addr "$addr" --size "$size" --group "$group" --articles "$articles" "${extra[@]}" \
            --max-seconds "$BOUND" --json >"$dir/$name-$size-$round.txt" 2>"$dir/$name-$size-$round.log"; then
            echo "compare-inn: $name at $size bytes failed:" >&2
            tail -3 "$dir/$name-$size-$round.log" >&2
        fi
    done
}

# group_counts ADDR: the article counts of the bench groups at one server
# (GROUP), as JSON.
group_counts() {
    python3 - "$1" <<'PY'
import json, socket, sys
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host, int(port)), timeout=10)
f = s.makefile("rwb")
f.readline()
counts = {}
for cmd in ["MODE READER"] + [f"GROUP {g}" for g in ("triad.bench", "triad.bench.large")]:
    f.write(cmd.encode() + b"\r\n")
    f.flush()
    reply = f.readline().decode().split()
    if cmd.startswith("GROUP"):
        counts[cmd.split()[1]] = int(reply[1]) if reply and reply[0] == "211" else None
f.write(b"QUIT\r\n")
f.flush()
print(json.dumps(counts))
PY
}

# bytes_of PATH...: one JSON object of the paths' bytes together, apparent
# size (du -sb) and allocated blocks (du -s -B1); du counts a hard-linked
# file once.
bytes_of() {
    local apparent allocated
    apparent=$(du -scb "$@" 2>/dev/null | tail -1 | cut -f1)
    allocated=$(du -sc -B1 "$@" 2>/dev/null | tail -1 | cut -f1)
    printf '{"bytes": %d, "allocated": %d}' "$apparent" "$allocated"
}

# measure_bytes DIR: after the rounds, what each side stores for the same
# feed, into DIR/bytes.json: each site's node and front-end data dirs, and
# INN's articles, overview and history, with the article counts.
measure_bytes() {
    local dir=$1 i articles overview db sites=""
    sync
    articles=$(asnews "$BIN/innconfval" patharticles 2>/dev/null || echo /var/spool/news/articles)
    overview=$(asnews "$BIN/innconfval" pathoverview 2>/dev/null || echo /var/spool/news/overview)
    db=$(asnews "$BIN/innconfval" pathdb 2>/dev/null || echo /var/lib/news)
    for i in $(seq 0 $((${#NEWS_ADDRS[@]} - 1))); do
        sites+="${sites:+, }{\"addr\": \"${NEWS_ADDRS[$i]}\", \"node\": $(bytes_of "$dir/sites/node$i"), \"front_end\": $(bytes_of "$dir/sites/site$i"), \"all\": $(bytes_of "$dir/sites/node$i" "$dir/sites/site$i"), \"articles\": $(group_counts "${NEWS_ADDRS[$i]}")}"
    done
    # shellcheck disable=SC2086
    printf '{"inn": {"paths": "%s", "all": %s, "articles": %s}, "sites": [%s]}\n' \
        "$articles $overview ${articles%/*}/tradspool.map $db/history*" \
        "$(bytes_of "$articles" "$overview" "${articles%/*}/tradspool.map" $db/history*)" \
        "$(group_counts "127.0.0.1:$INN_PORT")" "$sites" >"$dir/bytes.json"
}

# This machine's speed drifts by a third within minutes, so the servers take
# turns, TURNS times (the first to go alternates), and the table gives
# each figure's median over the rounds.
TURNS=${TURNS:-3}
# run_count N DIR: one whole comparison (N sites, or TRIAD, against a fresh
# INN), its results under DIR.
run_count() {
    local n=$1 dir=$2 round
    mkdir -p "$dir"
    SITES=$n
    [ "$n" = 0 ] || start_sites "$n" "$dir/sites"
    if [ -n "$SYNC_PERIOD" ] && [ "$n" != 0 ]; then
        echo "triad's sites: periodic durability (--sync-period $SYNC_PERIOD): an article is acknowledged once written on k = 2 nodes and in its site's journal, synced within $SYNC_PERIOD, as innd (which syncs nothing per article); not the durable mode's figures."
        echo
    fi
    fresh_inn
    for round in $(seq "$TURNS"); do
        if [ -n "$TRIAD" ] && [ $((round % 2)) = 0 ]; then
            bench triad "$TRIAD" "$round" "$dir"
            bench inn "127.0.0.1:$INN_PORT" "$round" "$dir"
        else
            bench inn "127.0.0.1:$INN_PORT" "$round" "$dir"
            [ -z "$TRIAD" ] || bench triad "$TRIAD" "$round" "$dir"
        fi
    done
    [ "$n" = 0 ] || measure_bytes "$dir"
    summarize "$dir" "$n"
    stop_sites
    # The sites' stores are a few GB a run: measured, they go, unless
    # KEEP_SITES=1 (their logs stay).
    if [ "$n" != 0 ] && [ "${KEEP_SITES:-0}" != 1 ]; then
        rm -rf "$dir"/sites/node*/ "$dir"/sites/site*/
    fi
}

# summarize DIR N: the table and the JSON line of one comparison (N sites,
# or 0 for TRIAD_ADDR); the line is also kept in DIR/summary.json.
summarize() {
    python3 - "$1" "$TURNS" "$2" "$CPU_PER_SITE" <<'PY'
import json, os, statistics, sys
out, rounds, sites, cpu_per_site = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def load1(name, size, r):
    try:
        lines = open(f"{out}/{name}-{size}-{r}.txt").read().strip().splitlines()
        return json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None
    except OSError:
        return None
def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None
def load(name, size):
    """The rounds' figures, each phase's numbers the median over the rounds."""
    got = [x for x in (load1(name, size, r) for r in range(1, rounds + 1)) if x]
    if not got:
        return None
    merged = dict(got[0])
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
    merged["spread_listed_after_seconds"] = med((x.get("spread") or {}).get("listed_after_seconds") for x in got)
    overs = [x.get("over") for x in got if x.get("over")]
    if overs:
        merged["over"] = dict(overs[0], lines_per_sec=med(o.get("lines_per_sec") for o in overs))
    return merged
runs = {(n, size): load(n, size) for n in ("inn", "triad") for size in (2450, 240000)}
def cell(v, fmt):
    return "" if v is None else fmt.format(v)
def ratio(t, i, failed=0):
    if failed:
        return f"no ratio: {failed} failed"
    return "" if t is None or not i else f"{t / i:.2f}x"
def label(p):
    return p["name"] + ("" if p["quickack"] else " (no quickack)")
print("| size | phase | conns | INN art/s | INN MB/s | triad art/s | triad MB/s | triad/INN art/s | triad/INN MB/s |")
print("|---|---|---|---|---|---|---|---|---|")
for size in (2450, 240000):
    keys = []
    for n in ("inn", "triad"):
        for p in (runs[n, size] or {}).get("phases", []):
            if (label(p), p["conns"]) not in keys:
                keys.append((label(p), p["conns"]))
    # The spread feed ran last; its row goes under the feed at site 1.
    if ("takethis-spread", sites) in keys and ("takethis", 1) in keys:
        keys.remove(("takethis-spread", sites))
        keys.insert(keys.index(("takethis", 1)) + 1, ("takethis-spread", sites))
    def fig(n, k, f):
        return next((p[f] for p in (runs[n, size] or {}).get("phases", []) if (label(p), p["conns"]) == k), None)
    for k in keys:
        ia, im, ta, tm = fig("inn", k, "ops_per_sec"), fig("inn", k, "mbps"), fig("triad", k, "ops_per_sec"), fig("triad", k, "mbps")
        # A phase with failures on either side is no basis for a ratio.
        failed = (fig("inn", k, "failed") or 0) + (fig("triad", k, "failed") or 0)
        head = k in (("takethis", 1), ("takethis-spread", sites), ("article", 16))
        name = f"**{k[0]}**" if head else k[0]
        print(f"| {size:,} B | {name} | {k[1]} | {cell(ia, '{:,.0f}')} | {cell(im, '{:.1f}')} | {cell(ta, '{:,.0f}')} | {cell(tm, '{:.1f}')} | {ratio(ta, ia, failed)} | {ratio(tm, im, failed)} |")
    io, to = [((runs[n, size] or {}).get("over") or {}).get("lines_per_sec") for n in ("inn", "triad")]
    print(f"| {size:,} B | over (lines/s) | 1 | {cell(io, '{:,.0f}')} | | {cell(to, '{:,.0f}')} | | {ratio(to, io)} | |")
print()
print(f"- Medians of {rounds} rounds; the servers took turns.")
if cpu_per_site:
    print(f"- Equal hardware: innd in a CPU cgroup of {cpu_per_site} cores, and each site (its node and front-end) in one of its own with the same quota; the load generator outside them.")
if sites:
    print(f"- takethis: the whole feed at site 1. takethis-spread: as many more articles, one TAKETHIS connection to each of the {sites} sites at once, split round-robin;"
          f" only articles acknowledged and listed at all {sites} sites count, and the time runs from the first article sent to the moment the last site was seen listing the last one."
          f" INN is one server: its takethis-spread is the same {sites} connections, all to innd.")
    for size in (2450, 240000):
        t = runs["triad", size] or {}
        if t.get("spread_listed_after_seconds") is not None:
            print(f"- {size:,} B: every site listed the spread feed {t['spread_listed_after_seconds']:.3f} s (median) after its last acknowledgement.")
for n in ("inn", "triad"):
    for size in (2450, 240000):
        r = runs[n, size]
        if r is None:
            print(f"- {n}, {size:,} B: no figures (see {out}/{n}-{size}-*.log)")
        elif n == "inn" and size == 2450:
            print(f"- INN: {r['greeting']}")
if not sites:
    sys.exit(0)

# One JSON line of triad/INN ratios, medians of the rounds.
def phase(n, size, name, conns):
    return next((p for p in (runs[n, size] or {}).get("phases", []) if p["name"] == name and p["conns"] == conns and p["quickack"]), None)
def complete(p, n, name):
    """Why the phase is no basis for a figure, or None."""
    if p is None:
        return f"{n}: no {name} phase"
    if p.get("failed"):
        return f"{n}: {p['failed']} failed"
    if p["done"] < p["offered"]:
        return f"{n}: {p['offered'] - p['done']} of {p['offered']} missing"
    return None
def one(size, name, conns, field):
    out = {}
    for n in ("inn", "triad"):
        p = phase(n, size, name, conns)
        why = complete(p, n, name)
        if why:
            return None, why
        out[n] = p[field]
    return round(out["triad"] / out["inn"], 3) if out["inn"] else None, None
line = {"sites": sites}
if cpu_per_site:
    line["cpu_per_site"] = float(cpu_per_site)
phases = (("takethis_2k_one", 2450, "takethis", 1, "ops_per_sec"), ("takethis_240k_one", 240000, "takethis", 1, "mbps"),
          ("takethis_2k_spread", 2450, "takethis-spread", sites, "ops_per_sec"), ("takethis_240k_spread", 240000, "takethis-spread", sites, "mbps"),
          ("article_2k", 2450, "article", 16, "ops_per_sec"), ("article_240k", 240000, "article", 16, "mbps"),
          ("post_8", 2450, "post", 8, "ops_per_sec"))
for key, size, name, conns, field in phases:
    r, why = one(size, name, conns, field)
    line[key] = r
    if why:
        line[key + "_why"] = why
# The deployment's aggregate spread feed, for a scaling run's last line.
for key, size, field, digits in (("feed_2k_spread_aps", 2450, "ops_per_sec", 0), ("feed_240k_spread_mbps", 240000, "mbps", 1)):
    p = phase("triad", size, "takethis-spread", sites)
    why = complete(p, "triad", "takethis-spread")
    line[key] = None if why else round(p[field], digits)
    if why:
        line[key + "_why"] = why
# CPU microseconds per article ingested, on this machine's shared cores:
# innd alone against the whole deployment, and the load generator's.
for key, size, name, conns, _ in phases:
    if name not in ("takethis", "takethis-spread", "post"):
        continue
    for n in ("inn", "triad"):
        p = phase(n, size, name, conns)
        if p and p.get("server_cpu_us") is not None:
            line[f"{key}_cpu_us_{n}"] = round(p["server_cpu_us"])
            line[f"{key}_client_cpu_us_{n}"] = round(p["client_cpu_us"] or 0)
t = runs["triad", 2450] or {}
p1 = phase("triad", 2450, "post", 1)
if p1:
    line["post_1_p50_ms"] = p1.get("p50_ms")
if t.get("sync_p50_ms") is not None:
    line["disk_sync_p50_ms"] = t["sync_p50_ms"]
if t.get("listed_after_seconds") is not None:
    line["site2_listed_after_s"] = t["listed_after_seconds"]

# Bytes stored after the rounds, each site against INN, for the same feed.
try:
    b = json.load(open(f"{out}/bytes.json"))
except (OSError, ValueError) as e:
    b = None
    line["bytes_per_site_ratio"] = None
    line["bytes_per_site_ratio_why"] = f"no bytes measured: {e}"
if b:
    total = lambda counts: sum(v or 0 for v in counts.values())
    inn_n, site_n = total(b["inn"]["articles"]), [total(s["articles"]) for s in b["sites"]]
    line["bytes_per_site"] = [s["all"]["bytes"] for s in b["sites"]]
    line["bytes_inn"] = b["inn"]["all"]["bytes"]
    line["articles_per_site"], line["articles_inn"] = site_n, inn_n
    same = all(n == inn_n for n in site_n) and inn_n > 0
    for key, field in (("bytes_per_site_ratio", "bytes"), ("bytes_per_site_ratio_allocated", "allocated")):
        most, inn = max(s["all"][field] for s in b["sites"]), b["inn"]["all"][field]
        line[key] = round(most / inn, 3) if same and inn else None
    if not same:
        line["bytes_per_site_ratio_why"] = f"articles listed differ: INN {inn_n}, sites {site_n}"
    print()
    print(f"- Bytes stored after the rounds (apparent size, du -sb; allocated blocks, du -s -B1, in brackets), for the same feed:")
    print(f"  INN {b['inn']['all']['bytes']:,} ({b['inn']['all']['allocated']:,}) for {inn_n:,} articles: {b['inn']['paths']}")
    for i, s in enumerate(b["sites"]):
        print(f"  site{i + 1} {s['all']['bytes']:,} ({s['all']['allocated']:,}) for {site_n[i]:,} articles listed: node {s['node']['bytes']:,}, front-end {s['front_end']['bytes']:,}")
print(json.dumps(line))
with open(f"{out}/summary.json", "w") as f:
    json.dump(line, f)
PY
}

if [ "$SITES" = 0 ]; then
    run_count 0 "$OUT"
elif [ ${#COUNTS[@]} = 1 ]; then
    run_count "$SITES" "$OUT"
else
    for n in "${COUNTS[@]}"; do
        echo "compare-inn: $n sites, results in $OUT/${n}sites" >&2
        echo "## $n sites"
        echo
        run_count "$n" "$OUT/${n}sites"
        echo
    done
    # The scaling line: the deployment's aggregate spread feed at each count.
    python3 - "$OUT" "${COUNTS[@]}" <<'PY'
import json, sys
out, counts = sys.argv[1], [int(c) for c in sys.argv[2:]]
lines = []
for n in counts:
    try:
        lines.append(json.load(open(f"{out}/{n}sites/summary.json")))
    except (OSError, ValueError):
        lines.append({})
line = {"sites": counts}
if lines[0].get("cpu_per_site") is not None:
    line["cpu_per_site"] = lines[0]["cpu_per_site"]
for key in ("feed_240k_spread_mbps", "feed_2k_spread_aps"):
    line[key] = [l.get(key) for l in lines]
lo, hi = counts.index(min(counts)), counts.index(max(counts))
a, b = line["feed_240k_spread_mbps"][lo], line["feed_240k_spread_mbps"][hi]
line["feed_240k_scaling"] = round(b / a, 3) if a and b is not None else None
if line["feed_240k_scaling"] is None:
    line["feed_240k_scaling_why"] = "; ".join(f"{n} sites: {l.get('feed_240k_spread_mbps_why', 'no figures')}" for n, l in zip(counts, lines) if l.get("feed_240k_spread_mbps") is None)
print(json.dumps(line))
PY
fi
