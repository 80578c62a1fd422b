#!/usr/bin/env python3
"""An unmodified PyTorch training script under umadv (issue 12): what
`umadv profile` costs it, and how `umadv run` at a budget compares with
the same model through examples/torch_train.py's explicit allocator route
at the same budget (target: within 5%).

For the GPU machine. examples/plain_train.py (no umadv code; --model
resnet50 trains torchvision's ResNet-50) runs four ways, one process
each:
  native   plain_train.py alone;
  profile  umadv profile -q -o DIR/profile.umt -- python3 plain_train.py;
  run      umadv run -q --budget B --policy plan -- python3 plain_train.py;
  route    examples/torch_train.py --umadv --policies plan, UMADV_BUDGET=B
           (its own synthetic data: only its time is compared).
The budget B: --budget SIZE, or a percentage of the footprint, the most
bytes alive at one step of the profile's trace. Reported: each run's
ms/iteration in the steady state (the median of the iterations from
--steady-from on; plain_train.py prints each iteration's time on
standard error), x native; what profiling adds, in native iterations
(the profile run's total less the native run's, both whole runs); run
against route, the 5% target; and whether run's losses are native's,
bit for bit (the same script, data and seed).

  bench/unmodified.py [--umadv PATH] [--lib PATH] [--model resnet50]
                      [--batch 64] [--iters 14] [--budget 50%|SIZE]
                      [--steady-from 5] [--out DIR] [--timeout S]

Writes DIR/unmodified.json (every number and command line) and a log per
run; prints the table last. Exits 1 when a run fails or run's losses
differ from native's.
"""
import argparse
import json
import os
import re
import statistics
import sys

from benchlib import command_line, read_trace, run_command

HERE = os.path.dirname(os.path.abspath(__file__))
PLAIN = os.path.join(HERE, "..", "examples", "plain_train.py")
ROUTE = os.path.join(HERE, "..", "examples", "torch_train.py")
RUN_TARGET = 1.05
UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--umadv", default="tools/umadv/umadv")
    p.add_argument("--lib", default=os.environ.get("UMADV_LIBRARY", ".libs/libumadv.so"))
    p.add_argument("--model", default="resnet50")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--iters", type=int, default=14)
    p.add_argument("--budget", default="50%", help="SIZE (2G) or a percentage of the footprint")
    p.add_argument("--steady-from", type=int, default=5,
                   help="first steady iteration (the profile, timing pass and plan come first)")
    p.add_argument("--out", default=os.environ.get("OUT", "bench-out"))
    p.add_argument("--timeout", type=int, default=600, help="seconds per run")
    p.add_argument("--plain", default=PLAIN, help=argparse.SUPPRESS)  # tests: stand-ins
    p.add_argument("--route", default=ROUTE, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.iters < args.steady_from + 2:
        p.error("--iters: at least --steady-from + 2, for a steady state")
    m = re.fullmatch(r"(\d+(?:\.\d+)?)%|(\d+)([KMGT]?)", args.budget)
    if not m or (m.group(1) and not 0 < float(m.group(1)) <= 100):
        p.error("--budget: a size (2G) or a percentage above 0 and at most 100 (50%%)")
    args.share = float(m.group(1)) / 100 if m.group(1) else None
    args.budget_bytes = None if m.group(1) else int(m.group(2)) * UNITS[m.group(3)]
    return args


def plain_argv(args):
    # --tf32: the arithmetic of torch_train.py (PyTorch's defaults), so
    # that run and route time the same kernels.
    return [sys.executable, args.plain, "--model", args.model, "--batch", str(args.batch),
            "--iters", str(args.iters), "--tf32"]


def parse_plain(out, err):
    """Losses (hex, by iteration) from standard output, ms from standard
    error."""
    losses = re.findall(r"^iter \d+ loss \S+ (\S+)$", out, re.M)
    ms = [float(x) for x in re.findall(r"^iter \d+ ms (\S+)$", err, re.M)]
    return losses, ms


def run(args, name, argv, env=None):
    """One run: its record, with 'error' when it failed."""
    rc, out, err, _ = run_command(argv, os.path.join(args.out, name + ".log"), env,
                                  args.timeout)
    losses, ms = parse_plain(out, err)
    rec = {"name": name, "command": command_line(argv, env), "rc": rc, "losses": losses,
           "ms": ms}
    if rc != 0 or len(ms) != args.iters:
        rec["error"] = "exit %s, %d of %d iterations: see %s.log" % (rc, len(ms), args.iters,
                                                                    name)
    else:
        rec["ms_per_iter"] = statistics.median(ms[args.steady_from:])
    return rec


def footprint(trace):
    """The most bytes alive at one step of the trace's first iteration."""
    ids = [sid for sid, _ in trace["steps"]]
    live = []
    for sid in ids:
        live.append(sum(size for size, born, dies in trace["allocs"].values()
                        if (born is None or born <= sid) and (dies is None or dies >= sid)))
    return max(live) if live else 0


def route_run(args, budget):
    path = os.path.join(args.out, "route.json")
    argv = [sys.executable, args.route, "--lib", args.lib, "--model", args.model, "--batch",
            str(args.batch), "--iters", str(args.iters), "--umadv", "--policies", "plan",
            "--json", path]
    rc, _, _, _ = run_command(argv, os.path.join(args.out, "route.log"),
                              {"UMADV_BUDGET": str(budget)}, args.timeout)
    rec = {"name": "route", "command": command_line(argv, {"UMADV_BUDGET": str(budget)}),
           "rc": rc}
    try:
        with open(path) as f:
            plan = [r for r in json.load(f)["runs"] if r.get("policy") == "plan"]
        rec["ms_per_iter"] = plan[0]["ms_per_iter"]
    except (OSError, ValueError, KeyError, IndexError):
        rec["error"] = "exit %s, no plan run in %s: see route.log" % (rc, path)
    return rec


def measure(args):
    runs = {"native": run(args, "native", plain_argv(args))}
    trace = os.path.join(args.out, "profile.umt")
    runs["profile"] = run(args, "profile", [args.umadv, "profile", "-q", "--force", "-o", trace,
                                            "--"] + plain_argv(args))
    budget = args.budget_bytes
    if budget is None and "error" not in runs["profile"]:
        budget = int(footprint(read_trace(trace)) * args.share)
    if budget:
        runs["run"] = run(args, "run", [args.umadv, "run", "-q", "--budget", str(budget),
                                        "--policy", "plan", "--"] + plain_argv(args))
        runs["route"] = route_run(args, budget)
    return runs, budget


def summary(args, runs, budget):
    native, prof = runs["native"], runs["profile"]
    doc = {"model": args.model, "batch": args.batch, "iters": args.iters, "budget": budget,
           "runs": runs}
    if "ms_per_iter" in native and "ms_per_iter" in prof:
        doc["profile_x_native"] = prof["ms_per_iter"] / native["ms_per_iter"]
        doc["profile_adds_iterations"] = (sum(prof["ms"]) - sum(native["ms"])) / \
            native["ms_per_iter"]
    run_, route = runs.get("run", {}), runs.get("route", {})
    if "ms_per_iter" in run_ and "ms_per_iter" in native:
        doc["run_x_native"] = run_["ms_per_iter"] / native["ms_per_iter"]
        doc["losses_identical"] = run_["losses"] == native["losses"]
    if "ms_per_iter" in run_ and "ms_per_iter" in route:
        doc["run_x_route"] = run_["ms_per_iter"] / route["ms_per_iter"]
        doc["run_target_met"] = doc["run_x_route"] <= RUN_TARGET
    return doc


def cell(value, form):
    return "-" if value is None else form % value


def print_table(doc):
    print("%-8s %10s %9s  %s" % ("run", "ms/iter", "x native", "command"))
    native = doc["runs"]["native"].get("ms_per_iter")
    for name, r in doc["runs"].items():
        ms = r.get("ms_per_iter")
        print("%-8s %10s %9s  %s" % (name, cell(ms, "%.1f"),
                                     cell(ms / native if ms and native else None, "%.3f"),
                                     r.get("error") or r["command"]))
    print("budget %s; profiling adds %s native iterations; run x route %s (target %.2f: %s); "
          "run's losses native's: %s" % (
              cell(doc["budget"], "%d bytes"), cell(doc.get("profile_adds_iterations"), "%.1f"),
              cell(doc.get("run_x_route"), "%.3f"), RUN_TARGET,
              {True: "met", False: "missed"}.get(doc.get("run_target_met"), "-"),
              {True: "yes", False: "NO"}.get(doc.get("losses_identical"), "-")))


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    runs, budget = measure(args)
    doc = summary(args, runs, budget)
    doc["command"] = command_line([sys.executable] + sys.argv)
    with open(os.path.join(args.out, "unmodified.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print_table(doc)
    failed = [r["name"] for r in runs.values() if "error" in r]
    if failed or doc.get("losses_identical") is False:
        sys.exit("bench: %s" % ("failed: " + ", ".join(failed) if failed else
                                "run's losses differ from native's"))


if __name__ == "__main__":
    main()
