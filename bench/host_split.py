#!/usr/bin/env python3
"""Where a training process's host time goes, by thread and library, in
ms of CPU an iteration, from perf's samples: runs side by side (native
PyTorch, oracle, plan), to find what a replay adds to the application's
threads (bench/RESULTS.md, 2026-11-30, twenty-ninth session).

  bench/host_split.py NAME=PERF_DATA:RUN_JSON [NAME=...] [--perf PERF]
                      [--from PCT] [--min MS] [--json OUT]

Each run is one process of examples/torch_train.py (--native, or --umadv
with one policy; not --both, whose native run is another process),
sampled by perf's cpu-clock, whose period is CPU time:

  perf record -e cpu-clock -F 2000 -D 12000 -o PERF_DATA -- python3 \\
      examples/torch_train.py --model M --batch N --iters 300 --umadv \\
      --policies plan --json RUN_JSON

Only the samples of the last 100 - PCT percent of the recording count
(--from, 60 by default: the steady state of a long run); they are split
by thread and library (perf report --sort pid,dso) and divided by the
iterations in that window: its span over the median iteration of the
same last part of RUN_JSON's times. Threads: "main" (the process's
first, Python's: the forward pass), "autograd" (PyTorch's pt_autograd_*
device threads: the backward pass) and "other" (umadv's lanes, CUDA's
and the rest). Libraries are grouped by name (libcuda.so.580 is
"libcuda", the kernel's samples "kernel"). Rows under --min ms (0.3) in
every run are left out of the table, not of the totals or the JSON.
Exits 1 on a run whose data or JSON cannot be read.
"""
import argparse
import collections
import json
import re
import statistics
import subprocess
import sys

ROLES = ("main", "autograd", "other")
GROUPS = [("libumadv", "libumadv"), ("libcupti", "libcupti"), ("libcudart", "libcudart"),
          ("libcuda.", "libcuda"), ("[kernel", "kernel"), ("[nvidia", "nvidia driver"),
          ("[vdso", "vdso"), ("libc.so", "libc"), ("libstdc++", "libstdc++"),
          ("libtorch_cpu", "libtorch_cpu"), ("libtorch_cuda", "libtorch_cuda"),
          ("libtorch_python", "libtorch_python"), ("libc10_cuda", "libc10_cuda"),
          ("libc10", "libc10"), ("libcudnn", "cudnn"), ("libcublas", "cublas"),
          ("python", "python"), ("libpython", "python"), ("ld-linux", "ld-linux"),
          ("libgomp", "libgomp")]
# "  51.81%   8276   25919500000   11379:python3   libtorch_cpu.so"
REPORT_ROW = re.compile(r"^\s*[\d.]+%\s+(\d+)\s+(\d+)\s+(\d+):(.*?)\s{2,}(\S.*?)\s*$")


class Failure(Exception):
    pass


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", metavar="NAME=PERF_DATA:RUN_JSON")
    p.add_argument("--perf", default="perf", help="the perf command (default: perf)")
    p.add_argument("--from", dest="start", type=float, default=60.0,
                   help="the share of the recording passed over first, in percent (60)")
    p.add_argument("--min", type=float, default=0.3, help="the table's least row, ms (0.3)")
    p.add_argument("--json", help="write the numbers to this file")
    args = p.parse_args()
    if not 0 <= args.start < 100:
        p.error("--from: a percentage from 0 to under 100")
    return args


def run_spec(spec):
    name, sep, rest = spec.partition("=")
    data, sep2, doc = rest.rpartition(":")
    if not (sep and sep2 and name and data and doc):
        raise Failure("%s: not NAME=PERF_DATA:RUN_JSON" % spec)
    return name, data, doc


def perf(args, *words):
    """perf's standard output for @words, or Failure with its error."""
    try:
        out = subprocess.run(args.perf.split() + list(words), capture_output=True, text=True)
    except OSError as e:
        raise Failure("%s: %s" % (args.perf, e))
    if out.returncode != 0:
        raise Failure("%s %s: %s" % (args.perf, words[0], out.stderr.strip()[-300:]))
    return out.stdout


def window_ms(args, data):
    """The span of the samples that count, in ms."""
    times = [float(t.strip().rstrip(":")) for t in
             perf(args, "script", "-i", data, "--time", "%g%%-100%%" % args.start,
                  "-F", "time").split() if t.strip()]
    if len(times) < 2:
        raise Failure("%s: fewer than two samples after %g%%" % (data, args.start))
    return (times[-1] - times[0]) * 1e3


def iteration_ms(args, doc):
    """The median iteration of the same last part of the run's times."""
    try:
        with open(doc) as f:
            d = json.load(f)
        run = d["runs"][0] if d.get("runs") else d["native"]
        times = run["times"]
    except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
        raise Failure("%s: not a torch_train.py --json document (%s)" % (doc, e))
    tail = times[int(len(times) * args.start / 100):]
    if not tail:
        raise Failure("%s: no iterations" % doc)
    return statistics.median(tail)


def group(dso):
    for prefix, name in GROUPS:
        if dso.startswith(prefix):
            return name
    return "rest"


def thread_ms(args, data):
    """{(tid, comm, library group): CPU ms} over the samples that count."""
    out = perf(args, "report", "-i", data, "--time", "%g%%-100%%" % args.start,
               "--sort", "pid,dso", "-n", "--show-total-period", "--stdio")
    ms = collections.Counter()
    for line in out.splitlines():
        m = REPORT_ROW.match(line)
        if m:
            ms[(int(m.group(3)), m.group(4).strip(), group(m.group(5)))] += int(m.group(2)) / 1e6
    if not ms:
        raise Failure("%s: no samples in perf's report" % data)
    return ms


def role(tid, comm, first):
    if comm.startswith("pt_autograd"):
        return "autograd"
    return "main" if tid == first else "other"


def split(args, name, data, doc):
    """{"iteration_ms", "iterations", "ms": {role: {group: ms an iteration}}}."""
    iteration = iteration_ms(args, doc)
    iters = window_ms(args, data) / iteration
    per_thread = thread_ms(args, data)
    first = min(tid for tid, _, _ in per_thread)
    ms = {r: collections.Counter() for r in ROLES}
    for (tid, comm, g), v in per_thread.items():
        ms[role(tid, comm, first)][g] += v / iters
    return {"name": name, "iteration_ms": iteration, "iterations": iters,
            "ms": {r: dict(v) for r, v in ms.items()}}


def print_table(rows, least):
    width = max(12, max(len(r["name"]) for r in rows) + 1)
    print("%-24s" % "ms of CPU an iteration" + "".join("%*s" % (width, r["name"]) for r in rows))
    print("%-24s" % "iteration, ms" + "".join("%*.1f" % (width, r["iteration_ms"]) for r in rows))
    for role_name in ROLES:
        names = sorted({g for r in rows for g in r["ms"][role_name]},
                       key=lambda g: -max(r["ms"][role_name].get(g, 0) for r in rows))
        for g in names:
            values = [r["ms"][role_name].get(g, 0.0) for r in rows]
            if max(values) >= least:
                print("%-24s" % ("%s: %s" % (role_name, g)) +
                      "".join("%*.2f" % (width, v) for v in values))
        print("%-24s" % ("%s, all" % role_name) +
              "".join("%*.2f" % (width, sum(r["ms"][role_name].values())) for r in rows))


def main():
    args = parse_args()
    try:
        rows = [split(args, *run_spec(spec)) for spec in args.runs]
    except Failure as e:
        sys.exit("host_split.py: %s" % e)
    print_table(rows, args.min)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"from_percent": args.start, "runs": rows}, f, indent=1)


if __name__ == "__main__":
    main()
