#!/usr/bin/env python3
"""Prints the first of N consecutive TCP ports free on 127.0.0.1 now.

Used by compare-inn.sh and innfeed-check.sh to place a deployment's nodes
and news servers: python3 scripts/free-ports.py N

The ports are chosen below the kernel's ephemeral range
(net.ipv4.ip_local_port_range): a port free now but inside that range can
be taken as the source port of an outgoing connection (the first nodes
dialling each other) before the process meant to listen on it starts, as
happened once to a compare-inn run ("bind: address already in use").
"""
import random
import socket
import sys

n = int(sys.argv[1])
try:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        ephemeral = int(f.read().split()[0])
except (OSError, ValueError, IndexError):
    ephemeral = 32768
low, high = 10000, max(10000 + 10 * n, ephemeral - n)
for _ in range(500):
    base = random.randrange(low, high)
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
