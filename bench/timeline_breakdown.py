#!/usr/bin/env python3
"""Where each replayed iteration's milliseconds went, from the measured
timeline UMADV_TIMELINE writes (umadv(7), "Seeing where time goes"): per
iteration, its span, the application's host time inside steps and its
waits by cause, each lane's calls (count, time, bytes, GB/s) and its
stalls, and optionally the iteration in buckets of --bucket ms (each
lane's and the application's share of every bucket: where the lanes run
together and where one waits for the other).

  bench/timeline_breakdown.py TIMELINE.json [--iterations 3,4] [--last N]
                              [--bucket MS] [--json OUT]

Prints the tables; --json writes the same numbers. Exits 1 on a file
that is not a umadv replay timeline.
"""
import argparse
import collections
import json
import sys

TRACKS = {1: "application: steps", 2: "application: waits", 3: "fetch lane", 4: "eviction lane"}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("timeline")
    p.add_argument("--iterations", help="comma-separated iteration numbers (default: --last)")
    p.add_argument("--last", type=int, default=2, help="the last N iterations (default 2)")
    p.add_argument("--bucket", type=float, help="also show the iteration in buckets of MS")
    p.add_argument("--json", help="write the numbers here")
    return p.parse_args()


def load(path):
    """The complete events of a umadv replay timeline, or exit 1."""
    try:
        with open(path) as f:
            doc = json.load(f)
        events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
        if not all("iteration" in e["args"] and e["tid"] in TRACKS for e in events):
            raise ValueError("events without a replay's iteration or track")
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit("timeline_breakdown: %s: not a umadv replay timeline (%s)" % (path, e))
    return events


def breakdown(events):
    """{"span_ms", "rows": [(track, name, count, ms, bytes)]} of one iteration."""
    t0 = min(e["ts"] for e in events)
    t1 = max(e["ts"] + e["dur"] for e in events)
    rows = collections.defaultdict(lambda: [0, 0.0, 0])
    for e in events:
        r = rows[(e["tid"], e["name"])]
        r[0] += 1
        r[1] += e["dur"] / 1e3
        r[2] += e["args"].get("bytes", 0)
    return {"span_ms": (t1 - t0) / 1e3,
            "rows": [(TRACKS[k[0]], k[1], v[0], v[1], v[2]) for k, v in sorted(rows.items())]}


def buckets(events, width_ms):
    """Per bucket of @width_ms from the iteration's start: the share of it
    each track was busy (overlapping spans of one track counted once is
    not needed: a track's spans do not overlap)."""
    t0 = min(e["ts"] for e in events)
    t1 = max(e["ts"] + e["dur"] for e in events)
    width = width_ms * 1e3
    n = int((t1 - t0) // width) + 1
    busy = {tid: [0.0] * n for tid in TRACKS}
    for e in events:
        start, end = e["ts"] - t0, e["ts"] - t0 + e["dur"]
        b = int(start // width)
        while start < end and b < n:
            stop = min(end, (b + 1) * width)
            busy[e["tid"]][b] += stop - start
            start, b = stop, b + 1
    return [[b * width_ms] + [busy[tid][b] / width for tid in TRACKS] for b in range(n)]


def print_iteration(it, bd, rows_b, width_ms):
    print("iteration %d: %.1f ms" % (it, bd["span_ms"]))
    for track, name, count, ms, nbytes in bd["rows"]:
        rate = "%.1f GB/s" % (nbytes / ms / 1e6) if nbytes and ms else ""
        print("  %-20s %-42s %6d %9.2f ms %9.1f MiB %s" % (
            track, name, count, ms, nbytes / 2 ** 20, rate))
    if rows_b:
        print("  %7s %8s %8s %8s %8s" % ("ms", "steps", "waits", "fetch", "evict"))
        for row in rows_b:
            print("  %7.0f %7.0f%% %7.0f%% %7.0f%% %7.0f%%" % tuple([row[0]] + [
                100 * x for x in row[1:]]))


def main():
    args = parse_args()
    events = load(args.timeline)
    by = collections.defaultdict(list)
    for e in events:
        by[e["args"]["iteration"]].append(e)
    if args.iterations:
        wanted = [int(x) for x in args.iterations.split(",")]
        missing = [i for i in wanted if i not in by]
        if missing:
            sys.exit("timeline_breakdown: no iteration %s in %s (it has %s)" % (
                ",".join(map(str, missing)), args.timeline, ",".join(map(str, sorted(by)))))
    else:
        wanted = sorted(by)[-args.last:]
    result = {}
    for it in wanted:
        bd = breakdown(by[it])
        rows_b = buckets(by[it], args.bucket) if args.bucket else None
        print_iteration(it, bd, rows_b, args.bucket)
        result[it] = dict(bd, buckets=rows_b)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
