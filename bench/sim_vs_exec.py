#!/usr/bin/env python3
"""Does the simulator predict the executor? Per policy and budget, the
time and bytes `umadv plan --json` simulates for a trace, against those
the executor measures replaying that same trace (issue 10).

For the GPU machine. The workload is examples/mlp_train (as in
bench/policies.py), or with --torch MODEL examples/torch_train.py
(a torchvision model, or transformer).

Which trace. A first process profiles the workload with no budget (a
short oracle run) and saves its trace; its managed peak is the
footprint the budgets are shares of, as in policies.py. Then each
budget runs in one process with every policy one after another
(--policies oracle,demand,prefetch-all,plan under UMADV_BUDGET). That
process's first run, oracle, profiles with no budget and times the
iteration after the profile (umadv's timing pass); the program saves
the trace once that is done (mlp_train --save-trace, torch_train.py
--trace); the runs after it switch policy with umadv_set_policy(),
which plans again from that same trace under the budget. So each
budget's process writes the very trace its executor replays, and that
file is the one simulated:

  umadv plan TRACE --budget BYTES --iteration 0 --json

(iteration 0 is the one the library plans; the budget in bytes is the
process's). The footprint run's trace gives the budgets only. Nothing
else may set the two apart: UMADV_REPROFILE_FAULTS=0 keeps the executor
from profiling again (which would replace its trace mid-process), and
the planner's knobs are the CLI's defaults on both sides
(UMADV_LOOKAHEAD, UMADV_READ_MOSTLY and UMADV_HOST_PLACEMENT unset)
unless --lookahead or --host-placement sets them on both.

What is compared, per steady-state iteration. Time: mlp_train's median
(torch_train.py's mean) of its steady-state iterations against the
simulated one. Bytes prefetched to the GPU and evicted to the host:
umadv_get_stats' fetched_bytes and evicted_bytes over the steady-state
iterations against the simulation's fetched_bytes and evicted_bytes
(populating fresh memory is neither). A row is flagged TIME when
measured/simulated is off by more than 15%, BYTES when either count
differs by more than 1%, REFUSED when one side refused the budget and
the other did not. Faults are shown, not compared: the simulator counts
the sections steps fault in (and their bytes), the executor GPU fault
groups, and umadv counts no faulted bytes. mlp_train counts every
iteration's faults (UMADV_FAULT_PERIOD=1, as policies.py; a few
microseconds per kernel launch); torch_train.py shows those of the last
counted iteration before the steady state (counting there costs a
PyTorch iteration a quarter of its time).

  bench/sim_vs_exec.py [--exe PATH] [--batch N] [--hidden N] [--layers N]
                       [--torch MODEL] [--lib PATH] [--iters N]
                       [--budgets 25,50,75] [--umadv PATH] [--lookahead N]
                       [--host-placement] [--out DIR]

Writes DIR/sim_vs_exec.json (every number, every command line), the
traces, a log per process and the simulator's JSON per budget; prints
the table last. Exits 1 when a run or a simulation fails, never for a
mismatch: this is a measurement.
"""
import argparse
import json
import os
import re
import sys

from benchlib import link_model, run_command
from policies import parse_runs

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_SCRIPT = os.path.join(HERE, "..", "examples", "torch_train.py")
GIB = float(1 << 30)
POLICIES = ("oracle", "demand", "prefetch-all", "plan")  # oracle first: it profiles
TIME_TOLERANCE = 0.15
BYTES_TOLERANCE = 0.01
PLANNER_KNOBS = ("UMADV_LOOKAHEAD", "UMADV_READ_MOSTLY", "UMADV_HOST_PLACEMENT")
FOOTPRINT_ITERS = 4  # the profile, the timing pass and a replay
# `umadv plan` refusing a budget below the largest step (cmd_plan.c)
SIM_TOO_SMALL = re.compile(r"^umadv: (budget .* is too small: .*)$", re.M)
# umadv refusing a policy in the executor (the planner's log line)
EXEC_TOO_SMALL = re.compile(r"^umadv: error: (step .* more than the budget.*)$", re.M)


class Failure(Exception):
    """A run or a simulation that gave no result: exit 1."""


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--exe", default="examples/mlp_train")
    p.add_argument("--batch", type=int, help="default: 32768 (mlp_train), 64 (--torch)")
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--layers", type=int, default=16)
    p.add_argument("--torch", metavar="MODEL",
                   help="examples/torch_train.py with this model instead of mlp_train")
    p.add_argument("--lib", default=os.environ.get("UMADV_LIBRARY", ".libs/libumadv.so"),
                   help="libumadv.so, for --torch")
    p.add_argument("--iters", type=int,
                   help="iterations per policy (default: 6 mlp_train, 8 --torch)")
    p.add_argument("--budgets", default="25,50,75", help="percentages of the footprint")
    p.add_argument("--umadv", default="tools/umadv/umadv", help="the umadv command")
    p.add_argument("--lookahead", type=int, help="UMADV_LOOKAHEAD and plan --lookahead")
    p.add_argument("--host-placement", action="store_true",
                   help="UMADV_HOST_PLACEMENT=1 and plan --host-placement")
    p.add_argument("--out", default=os.environ.get("OUT", "bench-out"))
    p.add_argument("--timeout", type=int, default=600, help="seconds per process")
    p.add_argument("--script", default=TORCH_SCRIPT, help=argparse.SUPPRESS)  # tests
    args = p.parse_args()
    check_args(p, args)
    return args


def check_args(p, args):
    """Defaults by workload; iterations enough for a steady state."""
    if args.batch is None:
        args.batch = 64 if args.torch else 32768
    # Run 0 (oracle) measures from after the profile, the timing pass and
    # the first replays: iteration 3 in mlp_train, 6 in torch_train.py.
    least = 7 if args.torch else 4
    if args.iters is None:
        args.iters = 8 if args.torch else 6
    if args.iters < least:
        p.error("--iters: at least %d, for steady-state iterations after the profile" % least)
    try:
        args.budgets = [int(x) for x in args.budgets.split(",")]
    except ValueError:
        p.error("--budgets: comma-separated whole percentages")
    if not all(0 < pct <= 100 for pct in args.budgets):
        p.error("--budgets: percentages above 0 and at most 100")


def fail(message):
    raise Failure(message)


# ---- the executor ------------------------------------------------------

def executor_env(args, budget):
    """The variables a workload process runs with: its budget, no second
    profile, the planner's knobs as the simulation has them."""
    env = {name: None for name in PLANNER_KNOBS + ("UMADV_POLICY",)}
    env["UMADV_BUDGET"] = str(budget) if budget else None
    env["UMADV_REPROFILE_FAULTS"] = "0"
    if not args.torch:
        env["UMADV_FAULT_PERIOD"] = "1"
    if args.lookahead is not None:
        env["UMADV_LOOKAHEAD"] = str(args.lookahead)
    if args.host_placement:
        env["UMADV_HOST_PLACEMENT"] = "1"
    return env


def mlp_argv(args, policies, iters, trace):
    return [args.exe, "--batch", str(args.batch), "--hidden", str(args.hidden),
            "--layers", str(args.layers), "--iters", str(iters),
            "--policies", ",".join(policies), "--save-trace", trace]


def torch_argv(args, policies, iters, trace, result):
    return [sys.executable, args.script, "--lib", args.lib, "--model", args.torch,
            "--batch", str(args.batch), "--umadv", "--iters", str(iters),
            "--policies", ",".join(policies), "--trace", trace, "--json", result]


def optional(value, convert):
    """@value converted, or None where the program did not give it (JSON
    has no NaN)."""
    return None if value is None else convert(value)


def mlp_figures(run, why):
    """One run of mlp_train's output (policies.parse_runs) -> figures."""
    if "too_small" in run:
        return {"refused": why or run["too_small"]}
    return {"ms_per_iter": float(run["ms_per_iter"]),
            "fetched_bytes": int(run["steady_fetched_per_iter"]),
            "evicted_bytes": int(run["steady_evicted_per_iter"]),
            "faults": float(run["steady_faults_per_iter"]),
            "wait_ms": optional(run.get("steady_wait_ms_per_iter"), float),
            "steady_iters": optional(run.get("steady_iters"), int),
            "resident_peak": int(run["resident_peak"]),
            "managed_peak": int(run["managed_peak"])}


def torch_figures(run):
    """One run of torch_train.py's --json -> figures."""
    if "skipped" in run:
        return {"refused": run["skipped"]}
    return {"ms_per_iter": float(run["ms_per_iter"]),
            "fetched_bytes": float(run["fetched_bytes_per_iter"]),
            "evicted_bytes": float(run["evicted_bytes_per_iter"]),
            "faults": run.get("faults_counted"),
            "wait_ms": optional(run.get("wait_ns_per_iter"), lambda ns: ns / 1e6),
            "drift_ops": run.get("drift_ops_per_iter"),
            "steady_from": run.get("steady_from"),
            "resident_peak": int(run["resident_peak"]),
            "managed_peak": int(run["managed_peak"])}


def measured_runs(args, stdout, stderr, result):
    """{policy: figures} of one workload process."""
    if args.torch:
        with open(result) as f:
            return {r["policy"]: torch_figures(r) for r in json.load(f)["runs"]}
    why = EXEC_TOO_SMALL.search(stderr)
    return {policy: mlp_figures(run, why and why.group(1))
            for policy, run in parse_runs(stdout).items()}


def run_executor(args, name, policies, budget, iters):
    """One workload process with every policy of @policies; returns
    ({policy: figures}, the trace it saved, its command line)."""
    trace = os.path.join(args.out, name + ".umt")
    result = os.path.join(args.out, name + ".json")
    for stale in (trace, result):
        if os.path.exists(stale):
            os.remove(stale)  # a file left by an earlier run is no result
    argv = (torch_argv(args, policies, iters, trace, result) if args.torch else
            mlp_argv(args, policies, iters, trace))
    log = os.path.join(args.out, name + ".log")
    rc, stdout, stderr, line = run_command(argv, log, executor_env(args, budget), args.timeout)
    if rc != 0:
        fail("%s failed (exit %s); see %s:\n%s" % (name, rc, log, (stdout + stderr)[-2000:]))
    try:
        runs = measured_runs(args, stdout, stderr, result)
    except (OSError, KeyError, ValueError, TypeError) as e:
        fail("%s: no figures in its output (%s: %s); see %s" % (name, type(e).__name__, e, log))
    if sorted(runs) != sorted(policies):
        fail("%s ran %s, not %s; see %s" % (name, sorted(runs), list(policies), log))
    if not os.path.exists(trace):
        fail("%s saved no trace at %s; see %s" % (name, trace, log))
    return runs, trace, line


# ---- the simulator -----------------------------------------------------

def planner_flags(args):
    flags = []
    if args.lookahead is not None:
        flags += ["--lookahead", str(args.lookahead)]
    if args.host_placement:
        flags.append("--host-placement")
    return flags


def run_plan(args, name, trace, budget, more=()):
    """`umadv plan TRACE --budget BUDGET --iteration 0 --json` and @more:
    (its exit status, output, standard error, command line, log)."""
    argv = ([args.umadv, "plan", trace, "--budget", budget, "--iteration", "0", "--json"]
            + planner_flags(args) + list(more))
    log = os.path.join(args.out, name + ".log")
    return run_command(argv, log, None, args.timeout) + (log,)


def plan_results(args, name, trace, budget, more=()):
    """{policy: its JSON result}, the JSON's trace and schedule, and the
    command line of one `umadv plan`; None for the first two when it
    refused the budget as below the largest step (then the message)."""
    rc, stdout, stderr, line, log = run_plan(args, name, trace, budget, more)
    too_small = SIM_TOO_SMALL.search(stderr)
    if rc == 1 and too_small:
        return None, too_small.group(1), line
    if rc != 0:
        fail("%s failed (exit %s); see %s:\n%s" % (line, rc, log, stderr[-2000:]))
    try:
        doc = json.loads(stdout)
        block = doc["budgets"][0]
        sims = {r["policy"]: r for r in block["policies"]}
        plan = {"trace": doc["trace"], "schedule": block["schedule"]}
    except (ValueError, KeyError, IndexError, TypeError) as e:
        fail("%s: no umadv-plan JSON (%s: %s); see %s" % (line, type(e).__name__, e, log))
    with open(os.path.join(args.out, name + ".json"), "w") as f:
        f.write(stdout)
    return sims, plan, line


def simulate(args, name, trace, budget):
    """The simulation of @trace under @budget bytes: ({policy: result},
    its trace and schedule, [command lines]). A budget below the largest
    step gives the budgeted policies {"refused": why}, and oracle, which
    has no budget, is simulated alone under 100% of the footprint."""
    sims, plan, line = plan_results(args, name + ".plan", trace, str(budget))
    if sims is not None:
        return sims, plan, [line]
    refused = {p: {"refused": plan} for p in POLICIES}
    oracle, plan, oracle_line = plan_results(args, name + ".plan-oracle", trace, "100%",
                                             ["--policy", "oracle"])
    if oracle is None:
        fail("%s refused 100%% of the footprint: %s" % (oracle_line, plan))
    refused["oracle"] = oracle["oracle"]
    return refused, {"trace": plan["trace"], "schedule": None}, [line, oracle_line]


# ---- comparison --------------------------------------------------------

def rel_diff(a, b):
    """|a - b| over the larger: 0 for equal counts, 1 when one is 0."""
    return 0.0 if a == b else abs(a - b) / max(abs(a), abs(b))


def flags_of(row):
    """What is off in @row: TIME, BYTES, or REFUSED by one side only."""
    if "refused_by" in row:
        return [] if row["refused_by"] == "both" else ["REFUSED"]
    flags = []
    if row["x_sim"] is None or abs(row["x_sim"] - 1) > TIME_TOLERANCE:
        flags.append("TIME")
    if max(row["fetched_diff"], row["evicted_diff"]) > BYTES_TOLERANCE:
        flags.append("BYTES")
    return flags


def compare(pct, budget, policy, sim, measured):
    row = {"budget_pct": pct, "budget": budget, "policy": policy, "sim": sim,
           "measured": measured}
    refused = [side for side, x in (("simulator", sim), ("executor", measured))
               if "refused" in x]
    if refused:
        row["refused_by"] = "both" if len(refused) == 2 else refused[0]
    else:
        sim_ms = sim["ms_per_iter"]
        row["x_sim"] = measured["ms_per_iter"] / sim_ms if sim_ms > 0 else None
        row["fetched_diff"] = rel_diff(measured["fetched_bytes"], sim["fetched_bytes"])
        row["evicted_diff"] = rel_diff(measured["evicted_bytes"], sim["evicted_bytes"])
    row["flags"] = flags_of(row)
    return row


def measure_budget(args, prefix, pct, footprint):
    """One budget: the workload's process, then the simulation of the
    trace it saved. Returns (what the budget ran with, its rows)."""
    budget = footprint * pct // 100 >> 20 << 20
    name = "%s-%d" % (prefix, pct)
    measured, trace, exec_line = run_executor(args, name, POLICIES, budget, args.iters)
    sims, plan, sim_lines = simulate(args, name, trace, budget)
    rows = [compare(pct, budget, p, sims.get(p, {"refused": "not simulated"}), measured[p])
            for p in POLICIES]
    fetch_bw, evict_bw = link_model(trace)  # the link the simulation uses
    info = {"budget_pct": pct, "budget": budget, "trace": trace, "fetch_bw": fetch_bw,
            "evict_bw": evict_bw, "executor_command": exec_line,
            "simulator_commands": sim_lines, "trace_info": plan["trace"],
            "schedule": plan["schedule"]}
    return info, rows


# ---- output ------------------------------------------------------------

def gib(x):
    return "%.3f" % (x / GIB)


def faults_text(sim, measured):
    sim_text = "%d (%sG)" % (sim["faults"], gib(sim["fault_bytes"]))
    m = measured.get("faults")
    return sim_text, "-" if m is None else "%.1f" % m


def print_row(r):
    label = "%d%% %.2fG" % (r["budget_pct"], r["budget"] / GIB)
    sim, m = r["sim"], r["measured"]
    if "refused_by" in r:
        whys = ["%s: %s" % (side, x["refused"]) for side, x in (("simulator", sim),
                                                               ("executor", m))
                if "refused" in x]
        print("%-13s %-13s refused by %s%s" % (label, r["policy"], "; ".join(whys),
                                             "  REFUSED" if r["flags"] else ""))
        return
    x = "-" if r["x_sim"] is None else "%.3f" % r["x_sim"]
    print("%-13s %-13s %9.1f %9.1f %7s %9s %9s %9s %9s %17s %10s  %s" % (
        (label, r["policy"], sim["ms_per_iter"], m["ms_per_iter"], x,
         gib(sim["fetched_bytes"]), gib(m["fetched_bytes"]),
         gib(sim["evicted_bytes"]), gib(m["evicted_bytes"])) +
        faults_text(sim, m) + (" ".join(r["flags"]) or "ok",)))


def print_table(rows):
    print("%-13s %-13s %9s %9s %7s %9s %9s %9s %9s %17s %10s  %s" % (
        "budget", "policy", "sim ms", "meas ms", "x sim", "sim fetch", "meas fetch",
        "sim evict", "meas evict", "sim faults (1)", "faults (2)", "off"))
    for r in rows:
        print_row(r)
    good = sum(1 for r in rows if not r["flags"])
    print("x sim: measured ms / simulated ms; fetch, evict: GiB per iteration; off: TIME "
          "beyond %d%%, BYTES beyond %d%% either way, REFUSED by one side only" % (
              TIME_TOLERANCE * 100, BYTES_TOLERANCE * 100))
    print("(1) sections the simulated steps faulted in (their GiB); (2) the executor's GPU "
          "fault groups per iteration: shown, not compared")
    print("%d of %d rows agree" % (good, len(rows)))


def print_header(args, footprint, budgets):
    workload = ("torch_train.py %s batch %d" % (args.torch, args.batch) if args.torch else
                "mlp_train batch %d hidden %d layers %d" % (args.batch, args.hidden,
                                                            args.layers))
    print("%s, %d iterations per policy; footprint %.2f GiB" % (workload, args.iters,
                                                                footprint / GIB))
    for b in budgets:
        info = b["trace_info"]
        note = ("" if "timing pass" in (info.get("source") or "") else
                "; WARNING: no timing pass in its source, durations as profiled")
        print("budget %d%%: trace %s, compute %.1f ms, link fetch %.1f GB/s evict %.1f GB/s%s"
              % (b["budget_pct"], b["trace"], info["compute_ms"], b["fetch_bw"] / 1e9,
                 b["evict_bw"] / 1e9, note))


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    prefix = args.torch or "mlp"
    try:
        first, trace, line = run_executor(args, prefix + "-footprint", ["oracle"], 0,
                                          FOOTPRINT_ITERS)
        footprint = first["oracle"]["managed_peak"]
        budgets, rows = [], []
        for pct in args.budgets:
            info, r = measure_budget(args, prefix, pct, footprint)
            budgets.append(info)
            rows += r
    except Failure as e:
        sys.exit("bench: %s" % e)
    result = {"config": vars(args), "footprint": footprint, "footprint_trace": trace,
              "footprint_command": line,
              "tolerance": {"time": TIME_TOLERANCE, "bytes": BYTES_TOLERANCE},
              "budgets": budgets, "rows": rows}
    with open(os.path.join(args.out, "sim_vs_exec.json"), "w") as f:
        json.dump(result, f, indent=1)
    print_header(args, footprint, budgets)
    print_table(rows)


if __name__ == "__main__":
    main()
