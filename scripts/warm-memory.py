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
parameter, or where another run has stopped it already (that run
restores it), prints nothing. It then touches the free memory (MemFree,
read again before each 64 MB piece: no page cache is evicted, nothing
swapped out) but --keep-mb (default 1536) once, and frees it. With both,
the same program ran every round at 65-74 µs a write. Needs root.
"""
import mmap
import sys
import time

PIECE = 64 << 20
REPORTING = "/sys/module/page_reporting/parameters/page_reporting_order"
NO_REPORTING = "11"  # past the buddy allocator's largest order (10)


def stop_reporting():
    """Stops free page reporting; returns the old order, or None if there
    is none to restore (no such parameter, one it may not change, or one
    another run has already stopped)."""
    try:
        with open(REPORTING) as f:
            old = f.read().strip()
        if old == NO_REPORTING:
            return None  # another run stopped it, and restores it
        with open(REPORTING, "w") as f:
            f.write(NO_REPORTING)
        return old
    except FileNotFoundError:
        return None
    except OSError as e:
        print(f"warm-memory: free page reporting left as it is: {e}", file=sys.stderr)
        return None


def free_bytes():
    """MemFree: what can be touched without evicting the page cache or
    swapping anything out."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemFree:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no MemFree in /proc/meminfo")


def main(argv):
    keep_mb = 1536
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if argv[:1] == ["--restore"] and len(argv) == 2:
        key, _, order = argv[1].partition("=")
        if key == "page_reporting_order" and order.isdigit() and order != NO_REPORTING:
            try:
                with open(REPORTING, "w") as f:
                    f.write(order)
            except OSError as e:
                print(f"warm-memory: could not restore {argv[1]}: {e}", file=sys.stderr)
                return 1
        return 0
    if argv[:1] == ["--keep-mb"] and len(argv) == 2 and argv[1].isdigit():
        keep_mb = int(argv[1])
    elif argv:
        print("warm-memory: usage: warm-memory.py [--keep-mb MB] | --restore SETTING (--help)", file=sys.stderr)
        return 2
    old = stop_reporting()
    if old is not None:
        # At once: a caller that is killed during the touching below must
        # still have the setting to restore.
        print(f"page_reporting_order={old}", flush=True)
    start, pieces, ones = time.time(), [], b"\x01" * PIECE
    try:
        # Free memory only, read again before each piece: nothing else's
        # pages are pushed out, and a process growing meanwhile keeps the
        # margin.
        while free_bytes() - PIECE > keep_mb * (1 << 20):
            m = mmap.mmap(-1, PIECE)
            m.write(ones)
            pieces.append(m)
    except (OSError, MemoryError) as e:
        print(f"warm-memory: stopped touching: {e}", file=sys.stderr)
    finally:
        for m in pieces:
            m.close()
    print(f"warm-memory: touched {len(pieces) * PIECE >> 20} MB in {time.time() - start:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
