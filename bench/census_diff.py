#!/usr/bin/env python3
"""Two iterations' call census side by side (UMADV_CALL_CENSUS, umadv(7)),
function by function: where one spends its CUDA calls' time that the
other does not. Made for a plan and an oracle iteration of one process
(examples/torch_train.py --policies plan,oracle numbers the second
policy's iterations on from the first's), so that the census's own cost
and the process's speed are the same on both sides.

  bench/census_diff.py LOG A B [--json OUT]

LOG is umadv's log (standard error, or UMADV_LOG_FILE); A and B are the
iterations its "call census, iteration N:" lines name. Per function: calls
and ms in A and in B, and A's ms over B's; sorted by that difference,
largest first; then the totals. A function a line does not name (at info
level a line names eight; under UMADV_LOG=debug, all) shows as "-" there,
and its difference is not counted. Exits 1 when LOG has no census line
for A or B, naming which.
"""
import argparse
import json
import re
import sys

LINE = re.compile(r"call census, iteration (\d+): the application's threads made (\d+) CUDA "
                  r"calls, ([\d.]+) ms in all .* to (\d+) functions; by time: (.*)$")
ROW = re.compile(r"^(.+) (\d+), ([\d.]+) ms \([\d.]+ us each\)$")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("log")
    p.add_argument("a", type=int, help="an iteration (say, plan's)")
    p.add_argument("b", type=int, help="the iteration to set it against (say, oracle's)")
    p.add_argument("--json", help="write the rows and totals here too")
    return p.parse_args()


def census_lines(path):
    """Every census line of the log, by iteration (the last one wins)."""
    lines = {}
    with open(path, errors="replace") as f:
        for text in f:
            m = LINE.search(text.rstrip("\n"))
            if not m:
                continue
            rows = {}
            for part in m.group(5).split("; "):
                r = ROW.match(part)
                if r:
                    rows[r.group(1)] = (int(r.group(2)), float(r.group(3)))
            lines[int(m.group(1))] = {"calls": int(m.group(2)), "ms": float(m.group(3)),
                                      "functions": int(m.group(4)), "rows": rows}
    return lines


def side_by_side(a, b):
    """The rows: name, A's calls and ms, B's, and A's ms over B's (None
    where either line does not name the function)."""
    rows = []
    for name in set(a["rows"]) | set(b["rows"]):
        ca, ma = a["rows"].get(name, (None, None))
        cb, mb = b["rows"].get(name, (None, None))
        diff = ma - mb if ma is not None and mb is not None else None
        rows.append({"function": name, "a_calls": ca, "a_ms": ma, "b_calls": cb, "b_ms": mb,
                     "diff_ms": diff})
    rows.sort(key=lambda r: (r["diff_ms"] is None, -(r["diff_ms"] or 0),
                             -max(r["a_ms"] or 0, r["b_ms"] or 0)))
    return rows


def cell(value, fmt):
    return "-" if value is None else fmt % value


def main():
    args = parse_args()
    try:
        lines = census_lines(args.log)
    except OSError as e:
        sys.exit("census_diff: %s: %s" % (args.log, e.strerror))
    missing = [str(i) for i in (args.a, args.b) if i not in lines]
    if missing:
        sys.exit("census_diff: %s has no call census line for iteration %s (it has %s)" %
                 (args.log, " nor ".join(missing),
                  ", ".join(str(i) for i in sorted(lines)) or "none"))
    a, b = lines[args.a], lines[args.b]
    rows = side_by_side(a, b)
    print("%-40s %10s %10s %10s %10s %10s" % ("function", "calls A", "ms A", "calls B", "ms B",
                                              "A - B ms"))
    for r in rows:
        print("%-40s %10s %10s %10s %10s %10s" % (
            r["function"][:40], cell(r["a_calls"], "%d"), cell(r["a_ms"], "%.3f"),
            cell(r["b_calls"], "%d"), cell(r["b_ms"], "%.3f"), cell(r["diff_ms"], "%+.3f")))
    print("%-40s %10d %10.3f %10d %10.3f %+10.3f" % ("all (%d and %d functions)" % (
        a["functions"], b["functions"]), a["calls"], a["ms"], b["calls"], b["ms"],
        a["ms"] - b["ms"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"a": args.a, "b": args.b, "rows": rows,
                       "totals": {"a_calls": a["calls"], "a_ms": a["ms"], "b_calls": b["calls"],
                                  "b_ms": b["ms"]}}, f, indent=1)


if __name__ == "__main__":
    main()
