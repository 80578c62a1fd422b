#!/usr/bin/env python3
"""Run examples/mlp_train under every umadv policy and several budgets, side
by side, and print one table of ratios.

For the GPU machine. A short oracle run (no budget) comes first: it gives
the footprint (umadv's managed peak), the link model the profiler measured,
and the trace. Every budget is a share of that footprint and runs in one
process: oracle, demand, prefetch-all and plan one after another
(mlp_train --policies, umadv_set_policy), each from the same initial
weights, so they share the allocations, the profile and the GPU state, and
the only difference is the policy. Oracle ignores the budget: it is the
reference each budget's rows are compared with.

  bench/policies.py [--exe PATH] [--batch N] [--hidden N] [--layers N]
                    [--iters N] [--budgets 25,50,75] [--out DIR]

Two bounds per budget. "x bound": max(oracle, the plan's own bytes each
way over the link probe's UVM fetch and evict rates), the column of the
first runs. "x phys": the physical bound of benchlib.Bounds on the trace,
max(oracle, the fewest bytes the budget forces each way over the probe's
staged (pinned) rates), and "x cut" the larger of it and the cut bound;
both "-" when the trace has no steps. Bytes moved count UVM's migrations
and the staged channel's copies together.

Writes DIR/policies.json and one log per run; prints the table last.
"""
import argparse
import json
import os
import re
import subprocess
import sys

from benchlib import Bounds, bound_ms, link_model

GIB = float(1 << 30)
POLICIES = ("oracle", "demand", "prefetch-all", "plan")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--exe", default="examples/mlp_train")
    p.add_argument("--batch", type=int, default=32768)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--layers", type=int, default=16)
    p.add_argument("--iters", type=int, default=6)
    p.add_argument("--budgets", default="25,50,75",
                   help="percentages of the oracle footprint")
    p.add_argument("--out", default=os.environ.get("OUT", "bench-out"))
    p.add_argument("--timeout", type=int, default=240, help="seconds per run")
    return p.parse_args()


def parse_runs(text):
    """The example's key/value lines -> {policy: dict}, one per 'run' line."""
    runs, run = {}, None
    for line in text.splitlines():
        m = re.match(r"run (\S+)$", line)
        if m:
            run = runs[m.group(1)] = {"loss": {}}
            continue
        if run is None:
            continue
        m = re.match(r"run_skipped (.*)$", line)
        if m:
            run["too_small"] = m.group(1)
            continue
        m = re.match(r"iter (\d+) loss (\S+)$", line)
        if m:
            run["loss"][int(m.group(1))] = m.group(2)
            continue
        m = re.match(r"(checksum|ms_per_iter|steady_\w+|resident_peak|gpu_peak_used|"
                     r"managed_peak) (\S+)", line)
        if m:
            run[m.group(1)] = m.group(2)
    return runs


def run_example(args, name, policies, budget, iters, trace=None):
    """One process, one run per policy; returns {policy: dict}."""
    # Count the faults of every iteration (umadv samples them otherwise).
    env = dict(os.environ, UMADV_BUDGET=str(budget), UMADV_FAULT_PERIOD="1")
    cmd = [args.exe, "--batch", str(args.batch), "--hidden", str(args.hidden),
           "--layers", str(args.layers), "--iters", str(iters),
           "--policies", ",".join(policies)]
    if trace:
        cmd += ["--save-trace", trace]
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=args.timeout)
    with open(os.path.join(args.out, name + ".log"), "w") as log:
        log.write("$ UMADV_BUDGET=%s UMADV_FAULT_PERIOD=1 %s\n" % (budget, " ".join(cmd)))
        log.write(proc.stdout)
    if proc.returncode != 0:
        sys.exit("bench: %s failed (exit %d); see %s.log:\n%s"
                 % (name, proc.returncode, name, proc.stdout[-2000:]))
    runs = parse_runs(proc.stdout)
    if sorted(runs) != sorted(policies):
        sys.exit("bench: %s ran %s, not %s; see %s.log" % (name, sorted(runs), policies, name))
    m = re.search(r"^umadv: error: (step .* more than the budget.*)$", proc.stdout, re.M)
    for run in runs.values():
        if m and "too_small" in run:
            run["too_small"] = m.group(1)  # the step that did not fit
    return runs


def moved(run):
    """(to the GPU, to the host) bytes per steady iteration: UVM's
    migrations and the staged channel's copies."""
    return (int(run.get("steady_fetched_per_iter", 0)) +
            int(run.get("steady_restored_per_iter", 0)),
            int(run.get("steady_evicted_per_iter", 0)) +
            int(run.get("steady_staged_per_iter", 0)))


def ratio(ms, bound):
    return ms / bound if bound else None


def row(budget_pct, budget, policy, run, oracle, bounds):
    """@bounds: {"bound_ms", "phys_ms", "cut_ms"}, each None if not known."""
    if "ms_per_iter" not in run:
        return {"budget_pct": budget_pct, "budget": budget, "policy": policy,
                "too_small": run.get("too_small", "no result")}
    ms = float(run["ms_per_iter"])
    same = run["loss"] == oracle["loss"] and run["checksum"] == oracle["checksum"]
    fetched, evicted = moved(run)
    return {
        "budget_pct": budget_pct, "budget": budget, "policy": policy,
        "ms_per_iter": ms, "x_oracle": ms / float(oracle["ms_per_iter"]),
        "x_bound": ratio(ms, bounds["bound_ms"]), "bound_ms": bounds["bound_ms"],
        "x_phys": ratio(ms, bounds["phys_ms"]), "phys_ms": bounds["phys_ms"],
        "x_cut": ratio(ms, bounds["cut_ms"]), "cut_ms": bounds["cut_ms"],
        "faults_per_iter": float(run.get("steady_faults_per_iter", "nan")),
        "fetched_per_iter": fetched,
        "evicted_per_iter": evicted,
        "staged_per_iter": int(run.get("steady_staged_per_iter", 0)),
        "resident_peak": int(run.get("resident_peak", 0)),
        "gpu_peak_used": int(run.get("gpu_peak_used", 0)),
        # umadv's accounted residency is what the budget caps; the driver's
        # used memory stays at its high-water mark (see umadv(7)).
        "resident_over_budget": (int(run.get("resident_peak", 0)) / budget
                                 if policy != "oracle" else None),
        "bitwise_identical": same,
    }


def cell(value):
    return "-" if value is None else "%.2f" % value


def print_table(rows):
    head = ("budget", "policy", "ms/iter", "x oracle", "x bound", "x phys", "x cut", "faults/it",
            "in GiB/it", "out GiB/it", "resident pk", "pk/budget", "gpu peak", "identical")
    print("%-14s %-13s %9s %8s %8s %8s %8s %10s %10s %10s %11s %9s %9s %9s" % head)
    for r in rows:
        budget = "%d%% %.2fG" % (r["budget_pct"], r["budget"] / GIB)
        if "too_small" in r:
            print("%-14s %-13s refused: %s" % (budget, r["policy"], r["too_small"]))
            continue
        print("%-14s %-13s %9.1f %8.2f %8s %8s %8s %10.1f %10.2f %10.2f %11.2f %9s %9.2f %9s" % (
            budget, r["policy"], r["ms_per_iter"], r["x_oracle"],
            cell(r["x_bound"]), cell(r["x_phys"]), cell(r["x_cut"]), r["faults_per_iter"],
            r["fetched_per_iter"] / GIB, r["evicted_per_iter"] / GIB,
            r["resident_peak"] / GIB,
            "-" if r["resident_over_budget"] is None else "%.3f" % r["resident_over_budget"],
            r["gpu_peak_used"] / GIB,
            "yes" if r["bitwise_identical"] else "NO"))


def budget_bounds(trace, oracle, plan, budget, link):
    """The bounds of one budget (see the module's text), oracle's time as
    the compute."""
    compute = float(oracle["ms_per_iter"])
    out = {"bound_ms": None, "phys_ms": None, "cut_ms": None}
    if "ms_per_iter" in plan:
        # with the plan's own volumes, the smallest of the three policies'
        out["bound_ms"] = bound_ms(compute, *moved(plan), link)
    bounds = Bounds(trace, compute)
    if bounds.trace["steps"]:
        at = bounds.at(budget)
        out["phys_ms"], out["cut_ms"] = at["bound_ms"], at["cut_ms"]
    return out


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    trace = os.path.join(args.out, "mlp.umt")
    # The profile, the timing pass and one replay: enough for the footprint
    # and a trace with measured durations.
    first = run_example(args, "footprint", ["oracle"], 0, 4, trace)["oracle"]
    footprint = int(first["managed_peak"])
    link = fetch_bw, evict_bw = link_model(trace)
    rows = []
    for pct in (int(p) for p in args.budgets.split(",")):
        budget = footprint * pct // 100 >> 20 << 20
        runs = run_example(args, "budget-%d" % pct, POLICIES, budget, args.iters)
        oracle, plan = runs["oracle"], runs["plan"]
        bounds = budget_bounds(trace, oracle, plan, budget, link)
        none = dict.fromkeys(bounds)
        rows += [row(pct, budget, p, runs[p], oracle, none if p == "oracle" else bounds)
                 for p in POLICIES]
    result = {"config": vars(args), "footprint": footprint, "fetch_bw": fetch_bw,
              "evict_bw": evict_bw, "rows": rows}
    with open(os.path.join(args.out, "policies.json"), "w") as f:
        json.dump(result, f, indent=1)
    print("mlp_train batch %d hidden %d layers %d, %d iterations; footprint %.2f GiB; "
          "link fetch %.1f GB/s evict %.1f GB/s; one process per budget" % (
              args.batch, args.hidden, args.layers, args.iters, footprint / GIB,
              fetch_bw / 1e9, evict_bw / 1e9))
    print_table(rows)


if __name__ == "__main__":
    main()
