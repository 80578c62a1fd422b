#!/usr/bin/env python3
"""What umadv costs when it moves nothing: `oracle` (no budget, nothing
evicted) against native PyTorch, and what the profiling phase costs, on
every model given (issue 11: oracle at most 1.05x native on every
torchvision classification model and a transformer; the profiling phase
at most 10 plain iterations).

For the GPU machine. Per model, one examples/torch_train.py --both run:
native in a child, then umadv's allocator with the oracle policy, each
from the same initial weights. Reported per model:
  - native and oracle ms/iteration in the steady state, and their ratio;
  - the profiling phase: the iterations of the umadv run before its
    steady state (the profiled one, the timing pass, the first ones on
    the plan), less as many native iterations, in native iterations: what
    profiling costs a user; iteration 0, the warm-up both sides have, is
    left out of both: it swings by a hundred ms from one process to the
    next, more than the phase;
  - whether the losses are bitwise identical;
  - what umadv's own calls took in the profiling phase: the profile's end
    (its kernels waited for, CUPTI's records flushed, the trace built),
    the plan and the replay's start (umadv_stats_t), and the rest;
  - the host's share of the steady iterations: their CPU time before
    the wait for the GPU, native and oracle, and the calls of umadv's
    allocator under oracle and their time (umadv_stats_t).
With --variants, after each --both run one process per variant named,
umadv without a part of oracle (VARIANTS: calls, its allocator alone;
calls-nocupti, without CUPTI too; floor, no umadv: PyTorch's per-tensor
pluggable route over bench/floor_alloc.c, an allocator that does next to
nothing, the floor under calls; pool, PyTorch's caching allocator over
umadv's blocks; pool-oracle, that replayed under oracle; plan, umadv at
its defaults, the plan policy under no budget), each against the --both
run's native time: which part of umadv costs what.
With --repeats R, R such runs per model, one after another: a model
whose iterations are bound by the host's launch path (batch 32 on an
H100) runs 10-20% faster or slower from one process to the next
(bench/RESULTS.md, 2026-11-27), more than the 5% the target allows, so
each run's ratio pairs oracle with the native child just before it, and
the row gives the median of the R ratios (and their range), the medians
of the times and of the profiling phase; identical when every run's are.

  bench/overhead.py [--lib PATH] [--models resnet18,...] [--batch N]
                    [--iters N] [--repeats R] [--variants calls,...]
                    [--out DIR] [--timeout S]

Writes DIR/overhead.json (every number and command line) and a log per
model; prints the table last. A run that fails (a model this torchvision
lacks, an error) is a row saying so, with the last line of its standard
error; the exit status is then 1.
"""
import argparse
import json
import os
import statistics
import sys

from benchlib import last_error, run_command, status_text

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "examples", "torch_train.py")
# torchvision's classification models at 224x224 (inception_v3 needs 299)
# and a transformer from torch.nn (torch_train.py --model transformer)
MODELS = ("resnet18,resnet50,resnet101,vgg16,densenet121,mobilenet_v2,mobilenet_v3_large,"
          "efficientnet_b0,regnet_y_800mf,convnext_tiny,shufflenet_v2_x1_0,squeezenet1_1,"
          "mnasnet1_0,googlenet,vit_b_16,swin_t,transformer")
ORACLE_TARGET = 1.05
EXIT_LOSSES_DIFFER = 1  # torch_train.py: the runs trained, their losses unlike native's
PROFILE_TARGET = 10.0
# umadv_stats_t's times of the profiling phase's own calls, less "_ns"
PHASES = ("profile_end", "plan", "replay_start")
# --variants: umadv without parts of oracle, to say which part costs; each
# one process after the --both run, against that run's native time.
FLOOR_LIB = "FLOOR_LIB"  # floor_lib(): where make check built bench/floor_alloc.c
VARIANTS = {
    # umadv's allocator, one block per tensor, CUPTI subscribed, no profile
    "calls": (["--umadv", "--no-profile"], {}),
    # the same without CUPTI
    "calls-nocupti": (["--umadv", "--no-profile"], {"UMADV_PROFILER": "0"}),
    # no umadv: PyTorch's per-tensor pluggable route over an allocator that
    # does next to nothing (bench/floor_alloc.c), the floor under "calls"
    "floor": (["--native", "--native-alloc", FLOOR_LIB], {}),
    # PyTorch's caching allocator over umadv's blocks (a MemPool), no profile
    "pool": (["--umadv", "--no-profile", "--alloc", "pool"], {}),
    # the same profiled and replayed under oracle
    "pool-oracle": (["--umadv", "--policies", "oracle", "--alloc", "pool"], {}),
    # umadv at its defaults: plan, the budget the free GPU memory (a model
    # that fits: a plan that moves nothing, replayed as oracle is)
    "plan": (["--umadv", "--policies", "plan"], {}),
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", default=os.environ.get("UMADV_LIBRARY", ".libs/libumadv.so"))
    p.add_argument("--models", default=MODELS)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--iters", type=int, default=12,
                   help="iterations per run (the profile, timing pass and plan come first)")
    p.add_argument("--repeats", type=int, default=1,
                   help="--both runs per model (medians over them)")
    p.add_argument("--variants", default="",
                   help="comma-separated, of: %s" % ", ".join(VARIANTS))
    p.add_argument("--out", default=os.environ.get("OUT", "bench-out"))
    p.add_argument("--timeout", type=int, default=300, help="seconds per run")
    p.add_argument("--script", default=SCRIPT, help=argparse.SUPPRESS)  # tests: a stand-in
    args = p.parse_args()
    args.variants = [v for v in args.variants.split(",") if v]
    unknown = [v for v in args.variants if v not in VARIANTS]
    if unknown:
        p.error("--variants: %s: not one of %s" % (",".join(unknown), ", ".join(VARIANTS)))
    return args


def run_model(args, model, name, mode=("--both", "--policies", "oracle"), env_set=None):
    """One run (@mode: torch_train.py's options, --both under oracle by
    default), its files DIR/@name.json and .log; its JSON document, or
    None with the reason."""
    out = os.path.join(args.out, name + ".json")
    argv = [sys.executable, args.script, "--lib", args.lib, "--model", model, "--batch",
            str(args.batch), "--iters", str(args.iters)] + list(mode) + ["--json", out]
    env = dict({"UMADV_BUDGET": None, "UMADV_POLICY": None}, **(env_set or {}))
    log = os.path.join(args.out, name + ".log")
    status, _, err, line = run_command(argv, log, env, args.timeout)
    doc = None
    if status in (0, EXIT_LOSSES_DIFFER) and os.path.exists(out):
        with open(out) as f:
            doc = json.load(f)
    # exit 1 with every run's figures: the losses differ, which the row says
    if doc is None or (status != 0 and not complete(doc)):
        said = last_error(err)
        return None, line, "failed: %s%s (see %s)" % (status_text(status),
                                                      ": " + said if said else "", log)
    return doc, line, None


def complete(doc):
    """Does torch_train.py's --json @doc hold native's times and each run's?"""
    runs = doc.get("runs") or []
    return bool((doc.get("native") or {}).get("times")) and bool(runs) and \
        all(r.get("times") for r in runs)


def steady_ms(times, first):
    tail = times[first:] or times[-1:]
    return sum(tail) / len(tail)


def figures(doc):
    """The row of one model from torch_train.py's --json document."""
    native, run = doc["native"], doc["runs"][0]
    first = run["steady_from"]
    native_ms = steady_ms(native["times"], 2)
    oracle_ms = steady_ms(run["times"], first)
    # the umadv run's iterations before its steady state against as many
    # native ones: what profiling adds, in native iterations. Iteration 0
    # (cuDNN's autotuning, the first allocations) is left out of both: it
    # made one build's phase -41 and 26 native iterations in two runs
    # (bench/RESULTS.md, 2026-11-29)
    extra = sum(run["times"][1:first]) - sum(native["times"][1:first])
    # umadv's own calls in those iterations (torch_train.py's phases_ns)
    phases = {k: run.get("phases_ns", {}).get(k + "_ns", 0) / 1e6 for k in PHASES}
    return {"native_ms": native_ms, "oracle_ms": oracle_ms, "x_native": oracle_ms / native_ms,
            "profile_iters": extra / native_ms, "profile_ms": extra, "phases_ms": phases,
            "identical": run["losses"] == native["losses"],
            # the host's share: CPU time of the iterations' host work, and
            # umadv's allocation calls in oracle's (umadv_stats_t)
            "native_cpu_ms": steady_ms(native["cpu_times"], 2),
            "oracle_cpu_ms": steady_ms(run["cpu_times"], first),
            "alloc_calls": run["alloc_calls_per_iter"],
            "alloc_ms": run["alloc_ns_per_iter"] / 1e6}


def median_row(runs):
    """The row of R runs' figures: medians, the ratios' range."""
    row = {key: statistics.median(r[key] for r in runs)
           for key in ("native_ms", "oracle_ms", "x_native", "profile_iters", "profile_ms",
                       "native_cpu_ms", "oracle_cpu_ms", "alloc_calls", "alloc_ms")}
    row.update(identical=all(r["identical"] for r in runs), repeats=len(runs),
               x_native_range=[min(r["x_native"] for r in runs),
                               max(r["x_native"] for r in runs)])
    row["variants"] = {v: {key: statistics.median(r["variants"][v][key] for r in runs)
                           for key in ("ms", "x_native")} for v in runs[0]["variants"]}
    row["phases_ms"] = {k: statistics.median(r["phases_ms"][k] for r in runs) for k in PHASES}
    return row


def floor_lib(args):
    """bench/floor_alloc.c's library in the build tree whose --lib is
    BUILD/.libs/libumadv.so (in the source tree or not)."""
    build = os.path.dirname(os.path.dirname(os.path.abspath(args.lib)))
    return os.path.join(build, "bench", ".libs", "libfloor_alloc.so")


def variant_figures(args, model, suffix, native_ms):
    """Each --variants run of one repeat: {name: {"ms", "x_native"}}, or
    the first failure's reason."""
    out = {}
    for v in args.variants:
        mode, env_set = VARIANTS[v]
        mode = [floor_lib(args) if m == FLOOR_LIB else m for m in mode]
        doc, _, error = run_model(args, model, "%s-%s%s" % (model, v, suffix), mode, env_set)
        if error is not None:
            return None, "%s: %s" % (v, error)
        run = doc["runs"][0] if doc.get("runs") else doc["native"]  # floor: native
        ms = steady_ms(run["times"], run["steady_from"])
        out[v] = {"ms": ms, "x_native": ms / native_ms}
    return out, None


def measure(args, model):
    """@model's row: its --repeats runs (the first DIR/MODEL.json, the
    next MODEL-2.json...), or the first failure."""
    runs, commands = [], []
    for k in range(1, args.repeats + 1):
        suffix = "" if k == 1 else "-%d" % k
        doc, cmd, error = run_model(args, model, model + suffix)
        commands.append(cmd)
        if error is None:
            runs.append(figures(doc))
            runs[-1]["variants"], error = variant_figures(args, model, suffix,
                                                          runs[-1]["native_ms"])
        if error is not None:
            return {"model": model, "commands": commands, "error": error}
    row = {"model": model, "commands": commands, "runs": runs}
    row.update(median_row(runs))
    return row


def print_host(rows):
    print("\n  %-20s %10s %10s %10s %10s %12s %10s" % (
        "model", "native ms", "host ms", "oracle ms", "host ms", "umadv calls", "their ms"))
    for r in rows:
        if "error" not in r:
            print("  %-20s %10.1f %10.1f %10.1f %10.1f %12.0f %10.2f" % (
                r["model"], r["native_ms"], r["native_cpu_ms"], r["oracle_ms"],
                r["oracle_cpu_ms"], r["alloc_calls"], r["alloc_ms"]))
    print("  host ms: the CPU time, all threads, of an iteration's host work before it waits "
          "for the GPU; near ms/iteration, the host bounds the run. umadv calls: umadv_malloc, "
          "umadv_free and umadv_set_stageable per iteration under oracle, and the time they "
          "took (umadv_stats_t's alloc_calls, alloc_ns)")


def print_table(rows):
    print("\n  %-20s %10s %10s %9s %13s %12s %10s  %s" % (
        "model", "native ms", "oracle ms", "x native", "(range)", "profiling(1)", "identical",
        "targets"))
    for r in rows:
        if "error" in r:
            print("  %-20s %s" % (r["model"], r["error"]))
            continue
        missed = [name for name, bad in (
            ("oracle", r["x_native"] > ORACLE_TARGET),
            ("profiling", r["profile_iters"] > PROFILE_TARGET)) if bad]
        print("  %-20s %10.1f %10.1f %9.3f %13s %12.1f %10s  %s" % (
            r["model"], r["native_ms"], r["oracle_ms"], r["x_native"],
            "%.3f-%.3f" % tuple(r["x_native_range"]) if r["repeats"] > 1 else "-",
            r["profile_iters"],
            "yes" if r["identical"] else "NO", "missed: " + ", ".join(missed) if missed else "met"))
    print("  (1) what the profiling phase adds past the warm-up (iteration 0), in native "
          "iterations; targets: oracle at most "
          "%.2fx native, profiling at most %.0f iterations; with --repeats, medians over the "
          "runs and the range of their ratios" % (ORACLE_TARGET, PROFILE_TARGET))
    print("\n  %-20s %12s %12s %12s %12s %12s" % ("model", "profiling ms", "profile end",
                                                  "plan", "replay start", "the rest"))
    for r in rows:
        if "error" not in r:
            ph = r["phases_ms"]
            print("  %-20s %12.1f %12.1f %12.1f %12.1f %12.1f" % (
                r["model"], r["profile_ms"], ph["profile_end"], ph["plan"], ph["replay_start"],
                r["profile_ms"] - sum(ph.values())))
    print("  the profiling phase's ms over native's (1), and what umadv's own calls took in "
          "it (umadv_stats_t's profile_end_ns, plan_ns, replay_start_ns)")
    print_host(rows)
    names = [v for v in VARIANTS if any(v in r.get("variants", {}) for r in rows)]
    if names:
        print("\n  %-20s %10s %10s %s" % ("model", "native ms", "oracle ms",
                                          " ".join("%20s" % v for v in names)))
        for r in rows:
            if "error" not in r:
                print("  %-20s %10.1f %10.1f %s" % (
                    r["model"], r["native_ms"], r["oracle_ms"],
                    " ".join("%11.1f (%.3fx)" % (r["variants"][v]["ms"],
                                                r["variants"][v]["x_native"]) for v in names)))
        print("  variants: ms/iteration and x native (%s)" % "; ".join(
            "%s: torch_train.py %s%s" % (v, " ".join(VARIANTS[v][0]), "".join(
                " %s=%s" % kv for kv in VARIANTS[v][1].items())) for v in names))


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows, failed = [], 0
    for model in [m for m in args.models.split(",") if m]:
        row = measure(args, model)
        failed += "error" in row
        rows.append(row)
        print("bench: %s done" % model, flush=True)
    with open(os.path.join(args.out, "overhead.json"), "w") as f:
        json.dump({"batch": args.batch, "iters": args.iters, "repeats": args.repeats,
                   "rows": rows}, f, indent=1)
    print_table(rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
