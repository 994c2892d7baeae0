#!/usr/bin/env python3
"""Waits until a ring of triad nodes is consistent, as `triad up` does.

    scripts/wait-ring.py [--within SECONDS] TRIAD ADDR...

TRIAD is the triad executable; each ADDR a node's address. The ring is
consistent when every vnode's first successor is the next vnode clockwise
among all the nodes' vnodes, and its successor list names at least two hosts
(one if there is one node): what a put with k = 2 needs. Exits 0 once it is,
1 (with what is wrong) if it is not within SECONDS (default 60).
"""
import json
import subprocess
import sys
import time


def views(triad, addrs):
    out = []
    for a in addrs:
        r = subprocess.run([triad, "ring", "--addr", a, "--json", "--timeout", "2s"],
                           capture_output=True, text=True, timeout=10)
        if r.returncode != 0:
            raise RuntimeError(f"{a}: {r.stderr.strip()}")
        out += json.loads(r.stdout)["vnodes"]
    return out


def wrong(vnodes, hosts):
    ids = sorted(v["self"]["id"] for v in vnodes)
    after = {ids[i]: ids[(i + 1) % len(ids)] for i in range(len(ids))}
    for v in vnodes:
        me, succs = v["self"], v["successors"] or []
        if len(ids) > 1 and (not succs or succs[0]["id"] != after[me["id"]]):
            return f"vnode {me['id'][:8]} at {me['addr']}: successor {succs[0]['id'][:8] if succs else 'none'}, want {after[me['id']][:8]}"
        if len({s["addr"] for s in succs} | {me["addr"]}) < min(2, hosts):
            return f"vnode {me['id'][:8]} at {me['addr']}: successor list names one host"
    return None


def main(argv):
    if len(argv) < 2 or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    within = 60.0
    if argv[0] == "--within":
        within, argv = float(argv[1]), argv[2:]
    triad, addrs = argv[0], argv[1:]
    deadline, why = time.time() + within, "no answer yet"
    while time.time() < deadline:
        try:
            why = wrong(views(triad, addrs), len(addrs))
        except (RuntimeError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
            why = str(e)
        if why is None:
            return 0
        time.sleep(0.2)
    print(f"wait-ring: not consistent after {within:.0f} s: {why}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
