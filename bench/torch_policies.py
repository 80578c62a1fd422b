#!/usr/bin/env python3
"""PyTorch VGG-16 and ResNet-50 under every umadv policy and budget, side by
side, with kernel-launch steps (no step marked by the program).

For the GPU machine. Per model, a short run on umadv's allocator (oracle)
gives the footprint (umadv's managed peak); then every budget runs in one
process: native PyTorch in a child for reference, and oracle, demand,
prefetch-all and plan one after another (examples/torch_train.py
--policies), each from the same initial weights. Prints one table.

  bench/torch_policies.py [--lib PATH] [--models resnet50,vgg16] [--batch N]
                          [--iters N] [--budgets 50] [--out DIR]

Writes DIR/torch_policies.json and one log per process.
"""
import argparse
import json
import os
import subprocess
import sys

from benchlib import bound_ms, link_model, moved_bytes

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "examples", "torch_train.py")
POLICIES = "oracle,demand,prefetch-all,plan"
GIB = float(1 << 30)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", default=os.environ.get("UMADV_LIBRARY", ".libs/libumadv.so"))
    p.add_argument("--models", default="resnet50,vgg16")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--iters", type=int, default=8,
                   help="iterations per policy (the first run has the profile too)")
    p.add_argument("--budgets", default="50", help="percentages of the footprint")
    p.add_argument("--out", default=os.environ.get("OUT", "bench-out"))
    p.add_argument("--timeout", type=int, default=400, help="seconds per process")
    p.add_argument("--script", default=SCRIPT, help=argparse.SUPPRESS)  # tests: a stand-in
    return p.parse_args()


def torch_train(args, name, model, extra, budget=None):
    out = os.path.join(args.out, name + ".json")
    cmd = [sys.executable, args.script, "--lib", args.lib, "--model", model, "--batch",
           str(args.batch), "--json", out] + extra
    env = dict(os.environ)
    env.pop("UMADV_BUDGET", None)
    if budget:
        env["UMADV_BUDGET"] = str(budget)
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=args.timeout)
    with open(os.path.join(args.out, name + ".log"), "w") as log:
        log.write("$ UMADV_BUDGET=%s %s\n%s" % (budget or "", " ".join(cmd), proc.stdout))
    if not os.path.exists(out):
        sys.exit("bench: %s failed (exit %d):\n%s" % (name, proc.returncode,
                                                      proc.stdout[-3000:]))
    with open(out) as f:
        return json.load(f)


def footprint(args, model):
    """umadv's managed peak, and the trace (with the link probe's numbers)."""
    trace = os.path.join(args.out, model + ".umt")
    r = torch_train(args, model + "-footprint", model,
                    ["--umadv", "--iters", "4", "--policies", "oracle", "--trace", trace])
    return r["runs"][0]["managed_peak"], trace


def print_table(rows):
    print("%-9s %-13s %-13s %9s %9s %9s %8s %10s %10s %7s %9s %10s %9s" % (
        "model", "budget", "policy", "ms/iter", "x native", "x oracle", "x bound", "faults(1)",
        "fetch G/it", "evict G/it", "wait ms", "res pk/bud", "identical"))
    for r in rows:
        label = "%d%% %.2fG" % (r["pct"], r["budget"] / GIB)
        if "skipped" in r:
            print("%-9s %-13s %-13s skipped: %s" % (r["model"], label, r["policy"],
                                                   r["skipped"]))
            continue
        ratio = "-" if r["policy"] == "oracle" else "%.3f" % (r["resident_peak"] / r["budget"])
        print("%-9s %-13s %-13s %9.1f %9.2f %9.2f %8s %10s %10.2f %10.2f %9.1f %10s %9s" % (
            r["model"], label, r["policy"], r["ms_per_iter"], r["x_native"], r["x_oracle"],
            "-" if r.get("x_bound") is None else "%.2f" % r["x_bound"],
            "-" if r.get("faults_counted") is None else r["faults_counted"],
            moved_bytes(r, "fetched", "restored") / GIB, moved_bytes(r, "evicted", "staged") / GIB,
            r["wait_ns_per_iter"] / 1e6, ratio, "yes" if r["identical"] else "NO"))
    print("(1) GPU fault groups of the last counted replayed iteration before the timed ones")
    print("fetch, evict: GiB per iteration each way, UVM migrations and pinned staging together")
    print("bound: max(oracle, plan's fetched bytes / fetch bw, plan's evicted bytes / evict bw),"
          " the link probe's bandwidths")


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows, native = [], {}
    for model in args.models.split(","):
        peak, trace = footprint(args, model)
        fetch_bw, evict_bw = link_model(trace)
        for pct in (int(p) for p in args.budgets.split(",")):
            budget = peak * pct // 100 >> 20 << 20
            r = torch_train(args, "%s-%d" % (model, pct), model,
                            ["--both", "--iters", str(args.iters), "--policies", POLICIES],
                            budget)
            native[model] = r["native"]["ms_per_iter"]
            by = {x["policy"]: x for x in r["runs"]}
            oracle, plan = by["oracle"], by["plan"]
            bound = None
            if "ms_per_iter" in plan:
                bound = bound_ms(oracle["ms_per_iter"], plan["fetched_bytes_per_iter"],
                                 plan["evicted_bytes_per_iter"], (fetch_bw, evict_bw))
            for run in r["runs"]:
                run.update(model=model, pct=pct, budget=budget, footprint=peak,
                           bound_ms=bound, fetch_bw=fetch_bw, evict_bw=evict_bw)
                if "ms_per_iter" in run:
                    run["x_oracle"] = run["ms_per_iter"] / oracle["ms_per_iter"]
                    if bound and run["policy"] != "oracle":
                        run["x_bound"] = run["ms_per_iter"] / bound
                rows.append(run)
    with open(os.path.join(args.out, "torch_policies.json"), "w") as f:
        json.dump({"config": vars(args), "native_ms": native, "rows": rows}, f, indent=1)
    print("torch_train.py batch %d, %d iterations per policy; native ms/iter: %s" % (
        args.batch, args.iters, ", ".join("%s %.1f" % kv for kv in native.items())))
    print_table(rows)


if __name__ == "__main__":
    main()
