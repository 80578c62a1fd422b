#!/usr/bin/env python3
"""Give every step of a umadv trace the same host time, and seal it again.

    bench/set_host_times.py IN.umt OUT.umt NS

Writes OUT.umt: IN.umt with host_ns=NS on every step line (umadv-trace(5);
a step's existing host_ns is replaced, NS 0 removes it) and the end line's
CRC-32 computed anew. For trying the simulator's host model (umadv-plan(1))
on traces recorded before host times were, as bench/RESULTS.md does: NS is
then a guess (the native iteration over the steps), not a measurement.
Refuses to overwrite IN.umt or an existing OUT.umt.
"""
import os
import re
import sys
import zlib

STEP = re.compile(r"^(step id=\d+ iter=\d+ kind=\w+ dur_ns=\d+)(?: host_ns=\d+)?", re.M)


def main():
    if len(sys.argv) != 4 or not sys.argv[3].isdigit():
        sys.exit("usage: set_host_times.py IN.umt OUT.umt NS")
    src, dst, ns = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if os.path.exists(dst):
        sys.exit("set_host_times.py: %s exists: not overwritten" % dst)
    data = open(src, "rb").read()
    end = data.rfind(b"\nend crc32=")
    if end < 0:
        sys.exit("set_host_times.py: %s: no end line (not a umadv trace?)" % src)
    body = data[:end + 1].decode()
    extra = " host_ns=%d" % ns if ns > 0 else ""
    body, n = STEP.subn(lambda m: m.group(1) + extra, body)
    sealed = body.encode()
    with open(dst, "xb") as f:
        f.write(sealed + b"end crc32=%08x\n" % zlib.crc32(sealed))
    print("%s: %d steps, host_ns %d" % (dst, n, ns))


if __name__ == "__main__":
    main()
