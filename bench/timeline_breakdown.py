#!/usr/bin/env python3
"""Where each replayed iteration's milliseconds went, from the measured
timeline UMADV_TIMELINE writes (umadv(7), "Seeing where time goes"): per
iteration, its span, the application's host time inside steps and its
waits by cause, each lane's calls (count, time, bytes, GB/s) and its
stalls, and optionally the iteration in buckets of --bucket ms (each
lane's and the application's share of every bucket: where the lanes run
together and where one waits for the other).

  bench/timeline_breakdown.py TIMELINE.json [--iterations 3,4] [--last N]
                              [--bucket MS] [--fit] [--gaps] [--json OUT]

--fit adds, per lane call that moves bytes, the least-squares line
duration = fixed cost + bytes / rate over the chosen iterations' calls,
for all of them and apart for those that ran alone (the other lane busy
under 1% of the call) and beside the other lane (over 50%): a fixed cost
far above the link probe's says the calls are too small; a rate that
halves beside the other lane says the two directions share one path.
--gaps adds, per iteration, the application's time in its steps and
between them (the gaps: its own work between two launch calls), and both
split by the lane call under way (one covering over half of the step or
gap, else none): whether the application's steps or its own work slow
while a lane calls (a densenet121 at batch 32 under half its footprint
spent 87 ms an iteration between its steps; a native iteration's whole
host work is 45; bench/RESULTS.md, 2026-11-30).
Prints the tables; --json writes the same numbers. Exits 1 on a file
that is not a umadv replay timeline.
"""
import argparse
import collections
import json
import statistics
import sys

TRACKS = {1: "application: steps", 2: "application: waits", 3: "fetch lane", 4: "eviction lane"}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("timeline")
    p.add_argument("--iterations", help="comma-separated iteration numbers (default: --last)")
    p.add_argument("--last", type=int, default=2, help="the last N iterations (default 2)")
    p.add_argument("--bucket", type=float, help="also show the iteration in buckets of MS")
    p.add_argument("--fit", action="store_true",
                   help="fit each lane call's fixed cost and rate, alone and beside the other lane")
    p.add_argument("--gaps", action="store_true",
                   help="the application's time in and between its steps, by the lane call "
                        "under way")
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


LANES = (3, 4)  # the fetch and eviction lanes' tracks


def overlap(e, others):
    """The share of @e's duration that spans of @others cover (a track's
    spans do not overlap each other)."""
    a, b = e["ts"], e["ts"] + e["dur"]
    covered = sum(max(0.0, min(b, o["ts"] + o["dur"]) - max(a, o["ts"])) for o in others)
    return covered / e["dur"] if e["dur"] > 0 else 0.0


def line(points):
    """Least squares of ms against MiB over @points: (calls, fixed ms,
    GB/s), None where it cannot be fitted (fewer than 2 sizes)."""
    n = len(points)
    if n < 2:
        return None
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx <= 0:
        return None
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx
    gbps = 2 ** 20 / (slope * 1e6) if slope > 0 else None
    return n, my - slope * mx, gbps


def fits(events):
    """Per lane call name that moves bytes: {"all", "alone", "beside"}."""
    result = {}
    for tid in LANES:
        others = [e for e in events if e["tid"] == LANES[1 - LANES.index(tid)]]
        calls = collections.defaultdict(lambda: {"all": [], "alone": [], "beside": []})
        for e in events:
            if e["tid"] != tid or not e["args"].get("bytes"):
                continue
            point = (e["args"]["bytes"] / 2 ** 20, e["dur"] / 1e3)
            share = overlap(e, others)
            groups = calls[(TRACKS[tid], e["name"])]
            groups["all"].append(point)
            if share < 0.01:
                groups["alone"].append(point)
            elif share > 0.5:
                groups["beside"].append(point)
        for key, groups in sorted(calls.items()):
            result["%s: %s" % key] = {k: line(v) for k, v in groups.items()}
    return result


def print_fits(fitted):
    for name, groups in fitted.items():
        words = []
        for group in ("all", "alone", "beside"):
            f = groups[group]
            if f is None:
                continue
            rate = "%.1f GB/s" % f[2] if f[2] else "no rate"
            words.append("%s %d calls: %.3f ms + bytes / %s" % (group, f[0], f[1], rate))
        print("  fit %-40s %s" % (name, "; ".join(words) if words else "too few sizes"))


def lane_call_under(e, lane_calls):
    """The name of the lane call covering over half of @e, "none" if none
    does (a lane's calls do not overlap each other)."""
    for c in lane_calls:
        if overlap(e, [c]) > 0.5:
            return "%s: %s" % (TRACKS[c["tid"]], c["name"])
    return "none"


def gaps(events):
    """{"steps_ms", "gaps_ms", "gaps", "gap_median_us", "by": {call: {"steps": [n, ms,
    median us], "gaps": [...]}}} of one iteration: the application's time
    in its steps and between them, by the lane call under way."""
    steps = sorted((e for e in events if e["tid"] == 1), key=lambda e: e["ts"])
    between = [{"ts": a["ts"] + a["dur"], "dur": b["ts"] - a["ts"] - a["dur"]}
               for a, b in zip(steps, steps[1:]) if b["ts"] > a["ts"] + a["dur"]]
    lane_calls = [e for e in events if e["tid"] in LANES and "bytes" in e["args"]]
    groups = collections.defaultdict(lambda: {"steps": [], "gaps": []})
    for kind, spans in (("steps", steps), ("gaps", between)):
        for e in spans:
            groups[lane_call_under(e, lane_calls)][kind].append(e["dur"])

    def summary(durs):
        return [len(durs), sum(durs) / 1e3, statistics.median(durs) if durs else 0.0]

    return {"steps_ms": sum(e["dur"] for e in steps) / 1e3,
            "gaps_ms": sum(g["dur"] for g in between) / 1e3, "gaps": len(between),
            "gap_median_us": statistics.median([g["dur"] for g in between]) if between else 0.0,
            "by": {k: {kind: summary(v[kind]) for kind in v} for k, v in sorted(groups.items())}}


def print_gaps(g):
    print("  the application: %d steps, %.3f ms in them; %d gaps between them, %.3f ms "
          "(median %.1f us)" % (sum(v["steps"][0] for v in g["by"].values()), g["steps_ms"],
                                g["gaps"], g["gaps_ms"], g["gap_median_us"]))
    print("  %-42s %22s | %22s" % ("by the lane call under way", "steps: n, ms, median us",
                                   "gaps: n, ms, median us"))
    for call, v in g["by"].items():
        print("  %-42s %5d %8.3f %7.1f | %5d %8.3f %7.1f" % tuple([call] + v["steps"] + v["gaps"]))


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
        if args.gaps:
            result[it]["gaps"] = gaps(by[it])
            print_gaps(result[it]["gaps"])
    if args.fit:
        fitted = fits([e for it in wanted for e in by[it]])
        print("iterations %s, lane calls fitted:" % ",".join(map(str, wanted)))
        print_fits(fitted)
        result["fit"] = fitted
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
