#!/usr/bin/env python3
"""Prints the first of N consecutive TCP ports free on 127.0.0.1 now.

Used by compare-inn.sh and innfeed-check.sh to place a deployment's nodes
and news servers: python3 scripts/free-ports.py N
"""
import random
import socket
import sys

n = int(sys.argv[1])
for _ in range(500):
    base = random.randrange(20000, 60000)
    socks = []
    try:
        for p in range(base, base + n):
            s = socket.socket()
            s.bind(("127.0.0.1", p))
            socks.append(s)
    except OSError:
        continue
    finally:
        for s in socks:
            s.close()
    print(base)
    sys.exit(0)
sys.exit("free-ports: no run of %d free ports" % n)
