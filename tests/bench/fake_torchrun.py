#!/usr/bin/env python3
"""A stand-in for torchrun in the tests of bench/ddp.py: --standalone,
--nproc-per-node N, then the script and its arguments; starts N copies of
the script with RANK, LOCAL_RANK and WORLD_SIZE set, as torchrun does,
and exits with the first failure's status."""
import os
import subprocess
import sys


def main():
    argv = sys.argv[1:]
    if argv and argv[0] == "--standalone":
        argv = argv[1:]
    if len(argv) < 3 or argv[0] != "--nproc-per-node":
        sys.exit("fake_torchrun.py: usage: [--standalone] --nproc-per-node N SCRIPT ARGS")
    n, cmd = int(argv[1]), [sys.executable] + argv[2:]
    procs = []
    for rank in range(n):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(n))
        procs.append(subprocess.Popen(cmd, env=env))
    codes = [p.wait() for p in procs]
    sys.exit(next((c for c in codes if c != 0), 0))


if __name__ == "__main__":
    main()
