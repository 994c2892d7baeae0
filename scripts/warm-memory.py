#!/usr/bin/env python3
"""Makes a virtual machine's memory behave as a real machine's for the
benchmarks that follow: the host keeps the pages the guest frees, and every
page has been touched once.

    old=$(scripts/warm-memory.py [--keep-mb MB])   # as root
    ... benchmark ...
    scripts/warm-memory.py --restore "$old"

A virtual machine's memory is often backed by the host only when the guest
first writes a page. On the machines these scripts run on, a 240 KB write
into the page cache cost about 70 µs of CPU while the page cache reused
pages touched before, and 620-670 µs once it grew into pages never touched
(a plain Go program appending 240 KB records, 6,000 a round: rounds 1-4 at
72-74 µs, rounds 5-6 at 619-668). A benchmark that writes gigabytes then
gets slower turn by turn, and the server that writes more bytes (two
copies of each article against one) pays more of it, which a real
machine's memory does not charge.

The guest gives free memory back (free page reporting: the module
parameter page_reporting_order, 9 here, and a first touch again after
that), so touching memory once is not enough: this raises the reporting
order past the largest block (11), which stops it, and prints the old
setting (`page_reporting_order=9`) for --restore; a machine without the
parameter prints nothing. It then touches all of MemAvailable but
--keep-mb (default 1536) once, in 64 MB pieces, and frees it. With both,
the same program ran every round at 65-74 µs a write. Needs root.
"""
import mmap
import sys
import time

PIECE = 64 << 20
REPORTING = "/sys/module/page_reporting/parameters/page_reporting_order"
NO_REPORTING = "11"  # past the buddy allocator's largest order (10)


def stop_reporting():
    """Stops free page reporting; returns the old order, or None."""
    try:
        with open(REPORTING) as f:
            old = f.read().strip()
        with open(REPORTING, "w") as f:
            f.write(NO_REPORTING)
        return old
    except FileNotFoundError:
        return None


def available_bytes():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no MemAvailable in /proc/meminfo")


def main(argv):
    keep_mb = 1536
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if argv[:1] == ["--restore"] and len(argv) == 2:
        key, _, order = argv[1].partition("=")
        if key == "page_reporting_order" and order.isdigit():
            with open(REPORTING, "w") as f:
                f.write(order)
        return 0
    if argv[:1] == ["--keep-mb"] and len(argv) == 2 and argv[1].isdigit():
        keep_mb = int(argv[1])
    elif argv:
        print("warm-memory: usage: warm-memory.py [--keep-mb MB] | --restore SETTING (--help)", file=sys.stderr)
        return 2
    old = stop_reporting()
    if old is not None:
        print(f"page_reporting_order={old}")
    total = available_bytes() - keep_mb * (1 << 20)
    if total < PIECE:
        print(f"warm-memory: less than {keep_mb} MB available beyond what is kept: nothing touched", file=sys.stderr)
        return 0
    start, pieces, ones = time.time(), [], b"\x01" * PIECE
    try:
        for _ in range(total // PIECE):
            m = mmap.mmap(-1, PIECE)
            m.write(ones)
            pieces.append(m)
    finally:
        for m in pieces:
            m.close()
    print(f"warm-memory: touched {len(pieces) * PIECE >> 20} MB in {time.time() - start:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
