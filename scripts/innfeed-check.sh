#!/usr/bin/env bash
# Checks that INN 2.7 (Debian's inn2) can feed triad's news server through
# innfeed, INN's streaming feeder (MODE STREAM, CHECK/TAKETHIS), and that:
#
#  1. every article fed arrives exactly once: triad's group holds as many
#     articles as were fed, with as many distinct message-ids, and ARTICLE
#     <message-id> returns each one with the body byte for byte;
#  2. feeding the same articles again through innfeed is refused: triad
#     answers 439 to TAKETHIS and 438 to CHECK, innfeed counts every one
#     rejected or refused and none accepted, and the group count stays.
#
# How: a fresh `triad nntp` on a free loopback port carries triad.feed and
# triad.nudge; INN comes from its anchor (../shared/anchors/inn2/run.sh,
# sourced for its functions, as compare-inn.sh does) on another free
# loopback port, with a fresh spool, both groups, a newsfeeds entry
# `triad:!*,triad.feed,triad.nudge:Tm:innfeed!` and an innfeed.conf peer
# `triad` for triad's port. N articles (every 50th about 200 KB, the rest
# about 2 KB; body lines that start with dots, 8-bit lines) go into innd
# with TAKETHIS; innd hands them to innfeed, which feeds triad. For the
# re-feeds their storage tokens (grephistory) go, as `@token@ <message-id>`
# lines, into innfeed's backlog file for the peer (innfeed(8): "foo ... it
# will rename it to foo.input ... and will start reading from it"): first
# for the same innfeed, in no-CHECK mode after the feed, nudged by one new
# article in triad.nudge; then for a fresh one (`ctlinnd flush innfeed!`).
#
# innfeed reports to syslog, which this machine lacks (news.notice stays
# empty), so its counts are read from innfeed.status (innfeed.conf(5)
# status-file), which lists offered/accepted/refused/rejected per peer; its
# debug log (debug-level 1) is innfeed.log.
#
# Needs root (INN runs as news). Touches only 127.0.0.0/8, a new temp dir
# ($OUT, removed after a success unless KEEP=1) and INN's own places
# (/etc/news, /var/spool/news, /var/lib/news, /var/log/news, /run/news);
# inn.conf, newsfeeds and innfeed.conf are put back as they were on exit.
# Refuses to run while another innd runs, since it resets INN's spool. Every
# wait has a deadline and a watchdog ends the run after MAX_SECONDS; a run
# takes about 20 s. On exit stops the innd it started, innd's innfeeds and
# the triad it started, by PID.
#
# With SITES=3 (or --sites 3), triad is `triad up --sites 3`: three news
# sites sharing one ring, innfeed feeding the first; every article must then
# arrive once at all three (the first announces the headers to the others),
# and the re-feeds leave every site's count as it was.
#
#   sudo scripts/innfeed-check.sh           # N=500 articles
#   sudo scripts/innfeed-check.sh --sites 3 # three sites on one ring
#   sudo KEEP=1 scripts/innfeed-check.sh    # keep $OUT (logs, articles, triad's data)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ANCHOR=${ANCHOR:-$ROOT/../shared/anchors/inn2}
N=${N:-500}
SITES=${SITES:-1}
if [ "${1:-}" = "--sites" ]; then SITES=${2:?--sites needs a number}; fi
DEADLINE=${DEADLINE:-40}       # seconds for each wait on a feed
MAX_SECONDS=${MAX_SECONDS:-170} # for the whole run, cleanup included
PY=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "innfeed-check: run as root (INN is installed, configured and run as news)" >&2; exit 1; }
if [ -f /run/news/innd.pid ] && kill -0 "$(cat /run/news/innd.pid)" 2>/dev/null; then
    echo "innfeed-check: an innd is running (pid $(cat /run/news/innd.pid)); this check resets INN's spool, so stop it first" >&2
    exit 1
fi
OUT=$(mktemp -d /tmp/innfeed-check.XXXXXX)
export OUT # run.sh puts innd.stdout here
START=$(date +%s)
say() { echo "innfeed-check: $*" >&2; }

freeport() {
    $PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# freeports N: the first of N consecutive free loopback ports.
freeports() { $PY "$ROOT/scripts/free-ports.py" "$1"; }
TPORT=$(freeports "$SITES")
export INN_PORT=${INN_PORT:-$(freeport)}
while [ "$INN_PORT" -ge "$TPORT" ] && [ "$INN_PORT" -lt "$((TPORT + SITES))" ]; do TPORT=$(freeports "$SITES"); done
NODEPORT=$(freeports "$SITES")

# The helper speaks NNTP: makes the articles, injects them into innd, reads
# them back from triad, and reads innfeed.status.
cat >"$OUT/feed.py" <<'PY'
import os, re, socket, sys, threading, time

def conn(port):
    s = socket.create_connection(("127.0.0.1", int(port)), timeout=30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s, s.makefile("rb")

def line(f):
    l = f.readline()
    if not l:
        sys.exit("connection closed")
    return l.decode("utf-8", "replace").rstrip("\r\n")

def cmd(s, f, c):
    s.sendall(c.encode() + b"\r\n")
    return line(f)

def block(f):
    out = []
    while True:
        l = f.readline()
        if not l:
            sys.exit("connection closed in a block")
        l = l[:-2] if l.endswith(b"\r\n") else l.rstrip(b"\n")
        if l == b".":
            return out
        out.append(l[1:] if l.startswith(b".") else l)

def make(dirname, n, tag, group):
    # Article i: about 2 KB, or about 200 KB for every 50th; lines that
    # start with dots (stuffed on the wire) and 8-bit text in the bodies.
    os.makedirs(dirname)
    date = time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime())
    for i in range(n):
        mid = f"<{i}.{tag}@innfeed-check.invalid>"
        big = i % 50 == 0
        body, have, k = [], 0, 0
        size = 200_000 if big else 1_500 + (i * 37) % 1_000
        while have < size:
            if k % 7 == 3:
                body.append(b"." * (1 + k % 3) + f" dotted line {k} of {i}".encode())
            elif k % 11 == 5:
                body.append(f"8-bit: na\u00efve caf\u00e9 {k} \u2014 \u00fcber".encode())
            elif big:
                body.append(b"M" + bytes(33 + (i + k + j) % 60 for j in range(60)))
            else:
                body.append(f"line {k} of article {i}, some words to fill it".encode())
            have += len(body[-1]) + 2
            k += 1
        head = ["Path: innfeed-check!not-for-mail", "From: Checker <check@innfeed-check.invalid>",
                f"Newsgroups: {group}", f"Subject: innfeed check {i} ({'200 KB' if big else '2 KB'})",
                f"Message-ID: {mid}", f"Date: {date}"]
        art = "\r\n".join(head).encode() + b"\r\n\r\n" + b"\r\n".join(body) + b"\r\n"
        with open(os.path.join(dirname, f"{i:06d}"), "wb") as w:
            w.write(art)

def articles(dirname):
    for name in sorted(os.listdir(dirname)):
        raw = open(os.path.join(dirname, name), "rb").read()
        mid = re.search(rb"^Message-ID: (\S+)\r$", raw, re.M).group(1).decode()
        yield mid, raw

def stuff(raw):
    lines = raw.split(b"\r\n")[:-1]
    return b"".join((b"." + l if l.startswith(b".") else l) + b"\r\n" for l in lines) + b".\r\n"

def inject(port, dirname):
    # TAKETHIS to innd, pipelined; a reader thread collects the replies.
    s, f = conn(port)
    g = line(f)
    if not g.startswith("200"):
        sys.exit(f"innd greeting: {g}")
    r = cmd(s, f, "MODE STREAM")
    if not r.startswith("203"):
        sys.exit(f"innd MODE STREAM: {r}")
    arts = list(articles(dirname))
    replies = []
    t = threading.Thread(target=lambda: replies.extend(line(f) for _ in arts))
    t.start()
    for mid, raw in arts:
        s.sendall(f"TAKETHIS {mid}\r\n".encode() + stuff(raw))
    t.join(30)
    bad = [r for r in replies if not r.startswith("239")]
    if len(replies) != len(arts) or bad:
        sys.exit(f"innd took {len(replies) - len(bad)} of {len(arts)}: {bad[:5]}")
    cmd(s, f, "QUIT")
    print(len(arts))

def group(port, name):
    s, f = conn(port)
    line(f)
    r = cmd(s, f, f"GROUP {name}")
    if not r.startswith("211"):
        sys.exit(f"GROUP {name}: {r}")
    print(r.split()[1])

def verify(port, name, dirname):
    # Exactly once: the group lists as many articles as were made, with as
    # many distinct message-ids (OVER), and each reads back with its body.
    s, f = conn(port)
    line(f)
    arts = dict(articles(dirname))
    r = cmd(s, f, f"GROUP {name}")
    count, lo, hi = (int(x) for x in r.split()[1:4])
    if cmd(s, f, f"OVER {lo}-{hi}")[:3] != "224":
        sys.exit("OVER failed")
    ids = [l.split(b"\t")[4].decode() for l in block(f)]
    problems = []
    if count != len(arts) or len(ids) != len(arts) or set(ids) != set(arts):
        problems.append(f"group count {count}, overview lines {len(ids)}, distinct ids {len(set(ids))}, "
                        f"of the fed ones {len(set(ids) & set(arts))}, fed {len(arts)}")
    same = 0
    for mid, raw in arts.items():
        r = cmd(s, f, f"ARTICLE {mid}")
        if not r.startswith("220"):
            problems.append(f"ARTICLE {mid}: {r}")
            continue
        got = b"\r\n".join(block(f)) + b"\r\n"
        want_body = raw.split(b"\r\n\r\n", 1)[1]
        got_body = got.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in got else b""
        if got_body != want_body:
            problems.append(f"ARTICLE {mid}: body differs ({len(got_body)} bytes, want {len(want_body)})")
            continue
        same += 1
    cmd(s, f, "QUIT")
    for p in problems[:10]:
        print(p, file=sys.stderr)
    print(same)
    sys.exit(1 if problems else 0)

def status(path, peer):
    # innfeed.status: the peer's block, "key: value" pairs on its lines.
    try:
        text = open(path).read()
    except OSError:
        return
    m = re.search(r"^" + re.escape(peer) + r"\n.*?(?=^\s*$|\Z)", text, re.M | re.S)
    if not m:
        return
    for k in ("offered", "accepted", "refused", "rejected", "missing", "spooled", "unspooled", "deferred", "requeued"):
        v = re.search(r"\b" + k + r":\s*(\d+)", m.group(0))
        print(f"{k}={v.group(1) if v else ''}")

if __name__ == "__main__":
    {"make": lambda a: make(a[0], int(a[1]), a[2], a[3]), "inject": lambda a: inject(*a),
     "group": lambda a: group(*a), "verify": lambda a: verify(*a),
     "status": lambda a: status(*a)}[sys.argv[1]](sys.argv[2:])
PY

say "results in $OUT"
# The anchor's functions (install_inn, write_confs, reset_spool, start_innd,
# stop_innd); sourced, run.sh defines them and its settings, and returns.
# shellcheck source=/dev/null
source "$ANCHOR/run.sh"
SAVED="inn.conf newsfeeds innfeed.conf"
for f in $SAVED; do [ ! -e "$ETC/$f" ] || cp -p "$ETC/$f" "$OUT/$f.orig"; done

TRIAD_PID="" WATCHDOG="" STEP="setup"
logs() {
    local f
    for f in "$OUT/triad.log" /var/log/news/news.notice /var/log/news/news.err /var/log/news/errlog \
        "$OUT/innd.stdout"; do
        [ -s "$f" ] || continue
        echo "---- $f (last 15 lines)" >&2
        tail -n 15 "$f" >&2
    done
    echo "---- /var/log/news/innfeed.log (last 15 lines but the per-article ones)" >&2
    grep -v -e 'Giving article to peer' -e 'Checkpointing tapes' /var/log/news/innfeed.log 2>/dev/null |
        tail -n 15 >&2 || true
    echo "---- innfeed's counts for the peer triad (/var/log/news/innfeed.status): $(counts)" >&2
}
# is_innfeed PID: PID is a live innfeed (not a zombie innd has yet to reap).
is_innfeed() {
    local st
    st=$(awk '{ print $2, $3 }' "/proc/${1:-none}/stat" 2>/dev/null) || return 1
    [ "${st% *}" = "(innfeed)" ] && [ "${st#* }" != Z ]
}
# innfeeds: the live innfeeds innd started.
innfeeds() {
    local p
    for p in $(cat /proc/"$INND_PID"/task/*/children 2>/dev/null); do
        ! is_innfeed "$p" || echo "$p"
    done
}
# innfeed_settled: innd has exactly one innfeed, the one in the pid file.
# (innd restarts innfeed when it reloads newsfeeds or is told to flush it;
# the old one drains and exits.)
innfeed_settled() {
    [ "$(innfeeds)" = "$(cat /run/news/innfeed.pid 2>/dev/null)" ]
}
# innfeed_ready: innfeed has settled and feeds the peer triad: its status
# file is its own and lists the peer. (An innfeed that starts while the one
# before it still holds the peer's backlog lock runs without that peer.)
innfeed_ready() {
    innfeed_settled &&
        grep -q "^pid $(cat /run/news/innfeed.pid) started" /var/log/news/innfeed.status 2>/dev/null &&
        [ -n "$(feedstat offered)" ]
}
# start_feeder: waits for innd's innfeed to be ready. One that came up
# without the peer never exits by itself: it is stopped (by its PID) and
# innd told to start another (at most twice).
start_feeder() {
    local try pid
    for try in 1 2 3; do
        wait_for 15 "innd's innfeed to settle" innfeed_settled
        pid=$(cat /run/news/innfeed.pid)
        if wait_for 5 "innfeed $pid to list the peer triad" innfeed_ready; then
            FEEDER=$pid
            return 0
        fi
        [ "$try" != 3 ] || break
        asnews "$BIN/ctlinnd" -s flush innfeed!
        ! is_innfeed "$pid" || kill "$pid"
    done
    return 1
}
cleanup() {
    local rc=$? f
    trap - EXIT TERM
    kill "$WATCHDOG" 2>/dev/null || true
    [ $rc = 0 ] || { say "FAILED (exit $rc) in: $STEP; logs follow"; logs; }
    if [ -n "$INND_PID" ]; then
        # innd's shutdown closes innfeed's pipe; innfeed then finishes and
        # exits (it is innd's child: innd started it, and a flush restarts it).
        KIDS=$(innfeeds)
        stop_innd >>"$OUT/inn-setup.log" 2>&1 || true
        for f in $KIDS; do
            for _ in $(seq 1 40); do is_innfeed "$f" || break; sleep 0.25; done
            ! is_innfeed "$f" || kill "$f" || true
        done
    fi
    if [ -n "$TRIAD_PID" ]; then
        kill "$TRIAD_PID" 2>/dev/null || true
        wait "$TRIAD_PID" 2>/dev/null || true
    fi
    for f in $SAVED; do [ ! -e "$OUT/$f.orig" ] || cp -p "$OUT/$f.orig" "$ETC/$f"; done
    [ $rc != 0 ] || [ "${KEEP:-0}" = 1 ] || rm -rf "$OUT"
    exit $rc
}
trap cleanup EXIT
# A watchdog bounds the whole run, whatever hangs.
trap 'say "out of time after $MAX_SECONDS s"; exit 124' TERM
(
    trap 'kill "$nap"; exit 0' TERM
    sleep "$MAX_SECONDS" &
    nap=$!
    wait "$nap" && kill -TERM $$
) >/dev/null 2>&1 &
WATCHDOG=$!

STEP="building triad"
(cd "$ROOT" && go build -o "$OUT/triad" ./cmd/triad)

# wait_for SECONDS WHAT COMMAND...: runs COMMAND every 0.2 s until it succeeds.
wait_for() {
    local secs=$1 what=$2 end
    shift 2
    end=$(($(date +%s) + secs))
    until "$@"; do
        [ "$(date +%s)" -lt "$end" ] || { say "gave up after ${secs}s waiting for $what"; return 1; }
        sleep 0.2
    done
}
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
# count GROUP: how many articles triad's GROUP holds.
count() { $PY "$OUT/feed.py" group "$TPORT" "$1" 2>/dev/null; }
count_is() { [ "$(count "$1")" = "$2" ]; }
# feedstat KEY: innfeed's count for the peer triad, from innfeed.status.
feedstat() { $PY "$OUT/feed.py" status /var/log/news/innfeed.status triad | sed -n "s/^$1=//p"; }
# counts: all of innfeed's counts for the peer triad, on one line.
counts() { $PY "$OUT/feed.py" status /var/log/news/innfeed.status triad | tr '=\n' '  '; }
accepted_is() { [ "$(feedstat accepted)" = "$1" ]; }
not_innfeed() { ! is_innfeed "$1"; }
# answered NUMBER: innfeed counts NUMBER articles refused (438 to CHECK) or
# rejected (439 to TAKETHIS).
answered() {
    local r j
    r=$(feedstat refused) j=$(feedstat rejected)
    [ "$((${r:-0} + ${j:-0}))" -ge "$1" ]
}
# drop_backlog: puts the articles' `@token@ <message-id>` lines where
# innfeed picks them up for the peer triad: the backlog file `triad`.
drop_backlog() {
    install -o news -g news -m 664 "$OUT/backlog" /var/spool/news/innfeed/.triad.new
    mv /var/spool/news/innfeed/.triad.new /var/spool/news/innfeed/triad
}

if [ "$SITES" = 1 ]; then
    STEP="starting triad nntp on 127.0.0.1:$TPORT"
    "$OUT/triad" nntp --listen "127.0.0.1:$TPORT" --data "$OUT/triad-data" --groups triad.feed,triad.nudge \
        --pathhost triad-check >"$OUT/triad.log" 2>&1 &
else
    STEP="starting triad up --sites $SITES on 127.0.0.1:$TPORT-$((TPORT + SITES - 1))"
    "$OUT/triad" up --sites "$SITES" --port "$NODEPORT" --nntp-port "$TPORT" --data "$OUT/triad-data" \
        --groups triad.feed,triad.nudge >"$OUT/triad.log" 2>&1 &
fi
TRIAD_PID=$!
wait_for 20 "triad's greeting" count_is triad.feed 0
# site_counts GROUP: the GROUP's count at every site, space-separated.
site_counts() {
    local i out=""
    for i in $(seq 0 $((SITES - 1))); do out="$out $($PY "$OUT/feed.py" group "$((TPORT + i))" "$1" 2>/dev/null)"; done
    echo "${out# }"
}
# all_sites_are GROUP N: every site's GROUP holds N articles.
all_sites_are() { [ "$(site_counts "$1")" = "$(printf "$2 %.0s" $(seq "$SITES") | sed 's/ $//')" ]; }

STEP="INN setup (log: $OUT/inn-setup.log)"
install_inn >"$OUT/inn-setup.log" 2>&1
write_confs >>"$OUT/inn-setup.log" 2>&1
# innd funnels the articles of the site triad into innfeed (newsfeeds(5));
# innfeed feeds them to the peer triad (innfeed.conf(5)), streaming, on one
# connection (so that its switch to no-CHECK mode is certain). The short
# periods make it look for a backlog file every second. A host queue longer
# than the burst keeps innfeed from spooling part of it to its own backlog
# file, which an innfeed whose connections have gone idle reads again only
# when it next opens a connection (up to a minute later).
cat >"$ETC/innfeed.conf" <<IC
# written by triad's scripts/innfeed-check.sh (put back on exit)
initial-sleep:          2
debug-level:            1
backlog-rotate-period:  1
backlog-newfile-period: 1
backlog-ckpt-period:    1
stats-period:           1
host-queue-highwater:   $((N + 100))
status-file:            innfeed.status
peer triad {
    ip-name:            127.0.0.1
    port-number:        $TPORT
    streaming:          true
    max-connections:    1
}
IC
chown news:news "$ETC/innfeed.conf"
reset_spool >>"$OUT/inn-setup.log" 2>&1
# (the spool is new, so old backlog and dropped-article files name nothing)
rm -rf /var/spool/news/innfeed/triad* /var/spool/news/innfeed/innfeed-dropped.* \
    /var/log/news/innfeed.status /run/news/innfeed.pid
rm -f /var/log/news/innfeed.log
cp -p "$OUT/newsfeeds.orig" "$ETC/newsfeeds"
start_innd >>"$OUT/inn-setup.log" 2>&1
cd "$OUT"
for g in triad.feed triad.nudge; do asnews "$BIN/ctlinnd" -s newgroup "$g" y innfeed-check; done
# The feed goes in only now: innd restarts innfeed on every newgroup, and an
# innfeed that starts while the one before it holds the peer's backlog lock
# runs without the peer.
cat >>"$ETC/newsfeeds" <<NF

# added by triad's scripts/innfeed-check.sh (put back on exit)
innfeed!:!*:Tc,Wnm*:$BIN/innfeed
triad:!*,triad.feed,triad.nudge:Tm:innfeed!
NF
asnews "$BIN/ctlinnd" -s reload newsfeeds innfeed-check
start_feeder
say "INN $(dpkg-query -W -f='${Version}' inn2): innd pid $INND_PID on 127.0.0.1:$INN_PORT, innfeed pid $FEEDER; triad pid $TRIAD_PID on 127.0.0.1:$TPORT"

STEP="making and injecting $N articles into innd"
$PY "$OUT/feed.py" make "$OUT/articles" "$N" "$$.$START" triad.feed
T0=$(date +%s.%N)
$PY "$OUT/feed.py" inject "$INN_PORT" "$OUT/articles" >/dev/null

STEP="the feed: innd -> innfeed -> triad"
wait_for "$DEADLINE" "$N articles in triad.feed" count_is triad.feed "$N"
T1=$(date +%s.%N)
STEP="checking the articles on triad"
SAME=$($PY "$OUT/feed.py" verify "$TPORT" triad.feed "$OUT/articles")
SITES_LINE=""
if [ "$SITES" -gt 1 ]; then
    STEP="the announcements: site 1 -> the other sites"
    wait_for "$DEADLINE" "$N articles in triad.feed at all $SITES sites" all_sites_are triad.feed "$N"
    T1S=$(date +%s.%N)
    for i in $(seq 1 $((SITES - 1))); do
        same=$($PY "$OUT/feed.py" verify "$((TPORT + i))" triad.feed "$OUT/articles")
        [ "$same" = "$SAME" ] || { say "site $((i + 1)) read back $same, site 1 $SAME"; exit 1; }
    done
    SITES_LINE=$(printf 'at all %s sites %.1f s after the feed began, each once, read back the same at each' "$SITES" "$(elapsed "$T0" "$T1S")")
fi
# innfeed's own counts, all from one innfeed process. (innfeed counts an
# article offered twice when it switches to no-CHECK mode between its CHECK
# and its TAKETHIS, so offered may exceed accepted; see buildTakethisBuffers
# in innfeed/connection.c.)
[ "$(cat /run/news/innfeed.pid)" = "$FEEDER" ] || { say "innd restarted innfeed during the feed"; exit 1; }
wait_for 5 "innfeed's status to count $N accepted" accepted_is "$N" || true
FIRST=$(counts)
[ "$(feedstat accepted)" = "$N" ] && [ "$(feedstat refused)" = 0 ] && [ "$(feedstat rejected)" = 0 ] ||
    { say "innfeed's counts for the feed are not $N accepted and none refused: $FIRST"; exit 1; }

# The re-feeds go through innfeed's backlog (innfeed(8)): the articles'
# storage tokens, as `@token@ <message-id>` lines, in the file `triad`,
# which innfeed renames to triad.input and reads when it starts, and when a
# connection asks for more work once the newfile period has passed.
STEP="finding the articles' storage tokens"
sed -n 's/^Message-ID: \(<[^>]*>\)\r$/\1/p' "$OUT"/articles/* >"$OUT/message-ids"
asnews bash -c 'while read -r id; do printf "%s %s\n" "$('"$BIN"'/grephistory "$id")" "$id"; done' \
    <"$OUT/message-ids" >"$OUT/backlog"
[ "$(grep -c '^@[0-9A-F]*@ <' "$OUT/backlog")" = "$N" ] || { say "grephistory did not give a token for every article"; exit 1; }

# Re-feed 1: the same innfeed, whose connection went to no-CHECK mode
# during the feed, so it sends TAKETHIS first (triad: 439) until the
# refusals bring it back to CHECK (triad: 438). A new article for the group
# triad.nudge gives its idle connection work, after which it reads the
# backlog. At most 3 nudges, if the first came before innfeed looked.
STEP="re-feed 1: the backlog file, same innfeed (TAKETHIS, then CHECK)"
drop_backlog
T2=$(date +%s.%N)
NUDGES=0
until [ ! -e /var/spool/news/innfeed/triad ]; do
    [ "$NUDGES" -lt 3 ] || { say "innfeed did not take up its backlog file after $NUDGES new articles"; exit 1; }
    NUDGES=$((NUDGES + 1))
    sleep 1.1 # innfeed.conf: backlog-newfile-period and backlog-rotate-period 1 s
    $PY "$OUT/feed.py" make "$OUT/nudge$NUDGES" 1 "nudge$NUDGES.$$.$START" triad.nudge
    $PY "$OUT/feed.py" inject "$INN_PORT" "$OUT/nudge$NUDGES" >/dev/null
    wait_for 5 "innfeed to take up its backlog file" test ! -e /var/spool/news/innfeed/triad || true
done
wait_for "$DEADLINE" "innfeed to offer the $N articles again" answered "$N"
wait_for 5 "innfeed's status to count the nudges" accepted_is "$((N + NUDGES))" || true
T3=$(date +%s.%N)
SECOND=$(counts)
COUNT1=$(count triad.feed)
REJ1=$(feedstat rejected) REF1=$(feedstat refused)
[ "$(feedstat accepted)" = "$((N + NUDGES))" ] && [ "$((REJ1 + REF1))" = "$N" ] && [ "$REJ1" -gt 0 ] &&
    [ "$COUNT1" = "$N" ] && [ "$(count triad.nudge)" = "$NUDGES" ] && all_sites_are triad.feed "$N" ||
    { say "re-feed 1 was not all refused, with some TAKETHIS: innfeed $SECOND; triad.feed holds $COUNT1"; exit 1; }

# Re-feed 2: `ctlinnd flush innfeed!` makes innd close the idle innfeed's
# pipe (it exits) and start a fresh one, whose counts start from zero and
# whose new connection sends CHECK (triad: 438) for the whole backlog.
STEP="re-feed 2: the backlog file, fresh innfeed (CHECK)"
wait_for 5 "innfeed to finish its backlog file" test ! -e /var/spool/news/innfeed/triad.input
drop_backlog
T4=$(date +%s.%N)
OLD=$FEEDER
asnews "$BIN/ctlinnd" -s flush innfeed!
wait_for 15 "the old innfeed (pid $OLD) to exit" not_innfeed "$OLD"
start_feeder
wait_for "$DEADLINE" "innfeed to offer the $N articles again" answered "$N"
T5=$(date +%s.%N)
THIRD=$(counts)
COUNT2=$(count triad.feed)
[ "$(feedstat accepted)" = 0 ] && [ "$(feedstat offered)" = "$N" ] && [ "$(feedstat refused)" = "$N" ] &&
    [ "$COUNT2" = "$N" ] && all_sites_are triad.feed "$N" ||
    { say "re-feed 2 was not all refused to CHECK: innfeed $THIRD; triad.feed holds $COUNT2"; exit 1; }

BIG=$(find "$OUT/articles" -size +100k | wc -l)
MB=$(du -cb "$OUT"/articles/* | awk 'END { printf "%.1f", $1 / 1e6 }')
echo "innfeed-check: INN $(dpkg-query -W -f='${Version}' inn2), innd -> innfeed -> triad nntp, streaming ($SITES site(s))"
echo "  fed:       $N articles into innd ($((N - BIG)) of about 2 KB, $BIG of about 200 KB; $MB MB)"
printf '  arrived:   %s in triad.feed in %.1f s, each once; %s read back by message-id, bodies identical\n' \
    "$N" "$(elapsed "$T0" "$T1")" "$SAME"
echo "             innfeed: $FIRST"
printf '  re-fed 1:  %s through the same innfeed'"'"'s backlog in %.1f s: %s rejected (439 to TAKETHIS), %s refused (438 to CHECK)\n' \
    "$N" "$(elapsed "$T2" "$T3")" "$REJ1" "$REF1"
echo "             innfeed: $SECOND(counts since the feed; $NUDGES accepted nudge in triad.nudge)"
printf '  re-fed 2:  %s through a fresh innfeed'"'"'s backlog in %.1f s: %s refused (438 to CHECK)\n' \
    "$N" "$(elapsed "$T4" "$T5")" "$(feedstat refused)"
echo "             innfeed: $THIRD"
[ -z "$SITES_LINE" ] || echo "  sites:     $SITES_LINE"
echo "  triad.feed: $N articles after the feed, $COUNT1 after re-feed 1, $COUNT2 after re-feed 2 (every site: $(site_counts triad.feed))"
echo "  time:      $(($(date +%s) - START)) s in all"
