#!/usr/bin/env python3
"""The long run of issue 9, on the GPU machine: the MLP example and
PyTorch ResNet-50, each trained --iters iterations under every policy in
one process, with the budget changing at random every --budget-change
iterations (umadv_set_budget; the same draws for every policy, between
25% and 100% of the footprint by default). Every policy's final
parameters must be bitwise those of the oracle run, every block's
resident peak within its budget, and no managed bytes may be left once
the model is freed. Prints a table and writes longrun.json to --out.

  python3 bench/longrun.py --build _build --iters 300 --budget-change 20 --out lr

MLP: examples/mlp_train --policies ... --budget-change N (its checksum
hashes every weight and bias; the losses are compared too). ResNet-50:
examples/torch_train.py --umadv --policies ... --budget-change N (sha256
of every parameter and buffer). The oracle run comes first and is the
reference. Workloads are skipped with --skip mlp or --skip torch.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import time

POLICIES = "oracle,demand,prefetch-all,plan"


def run_logged(argv, log, env=None, timeout=None):
    """Run @argv with its output in @log (the command first, as "$ ...").
    Returns (exit status, output, seconds); status None when it timed out."""
    t0 = time.time()
    with open(log, "w") as f:
        f.write("$ %s\n" % " ".join(shlex.quote(a) for a in argv))
        f.flush()
        try:
            rc = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, env=env,
                                timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            rc = None
    with open(log) as f:
        return rc, f.read(), time.time() - t0


# ---- the MLP --------------------------------------------------------------

def mlp_parse(text):
    """mlp_train's output: per run (policy), its losses, checksum, budgets,
    times; and what was left at exit."""
    runs, cur, left = [], None, {}
    for line in text.splitlines():
        w = line.split()
        if not w:
            continue
        if w[0] == "run" and len(w) == 2:
            cur = {"policy": w[1], "losses": [], "budgets": [], "refused": 0, "blocks": [],
                   "blocks_over": 0}
            runs.append(cur)
        elif w[0] == "managed_left":
            left["managed_bytes"], left["blocks"] = int(w[1]), int(w[4])
        elif w[0] == "gpu_used_after_destroy":
            left["gpu_used_after_destroy"] = int(w[1])
        elif cur is None:
            continue
        elif w[0] == "iter" and len(w) >= 4 and w[2] == "loss":
            cur["losses"].append(w[3])
        elif w[0] == "checksum":
            cur["checksum"] = w[1]
        elif w[0] == "budget_set":
            cur["budgets"].append(int(w[2]))
        elif w[0] == "budget_refused":
            cur["refused"] += 1
        elif w[0] == "budget_block":
            cur["blocks"].append({"block": int(w[1]), "budget": int(w[3]),
                                  "resident_peak": int(w[5]), "state": w[6]})
            cur["blocks_over"] += w[6] == "OVER"
        elif w[0] == "ms_mean":
            cur["ms_mean"] = float(w[1])
        elif w[0] == "run_skipped":
            cur["skipped"] = " ".join(w[1:])
    return runs, left


def mlp_rows(runs, left):
    """Table rows: each run against the first (oracle)."""
    ref = runs[0] if runs else {}
    rows = []
    for r in runs:
        row = {"workload": "mlp", "policy": r["policy"], "iterations": len(r["losses"]),
               "budgets": r["budgets"], "refused": r["refused"],
               "blocks_over": r["blocks_over"], "blocks": r["blocks"],
               "ms_mean": r.get("ms_mean"),
               "bitwise_equal": "checksum" in r and r.get("checksum") == ref.get("checksum")
               and r["losses"] == ref.get("losses"),
               "checksum": r.get("checksum"), "skipped": r.get("skipped")}
        rows.append(row)
    if rows:
        rows[-1]["managed_left"] = left.get("managed_bytes")
        rows[-1]["gpu_used_after_destroy"] = left.get("gpu_used_after_destroy")
    return rows


def run_mlp(args):
    exe = args.mlp or os.path.join(args.build, "examples", "mlp_train")
    argv = [exe] + shlex.split(args.mlp_args) + [
        "--iters", str(args.iters), "--budget-change", str(args.budget_change),
        "--budget-seed", str(args.seed), "--budget-range", args.budget_range,
        "--policies", args.policies]
    rc, text, secs = run_logged(argv, os.path.join(args.out, "mlp.log"), timeout=args.timeout)
    runs, left = mlp_parse(text)
    rows = mlp_rows(runs, left)
    status = "ok" if rc == 0 else "timed out" if rc is None else "exit %d" % rc
    return rows, {"command": argv, "status": status, "seconds": secs}


# ---- PyTorch ---------------------------------------------------------------

def torch_rows(doc):
    """Table rows from torch_train.py's --json document."""
    rows = []
    for r in doc.get("runs", []):
        rows.append({"workload": doc.get("model", "torch"), "policy": r["policy"],
                     "iterations": r.get("iterations", 0), "budgets": r.get("budgets", []),
                     "refused": r.get("refused", 0), "blocks_over": r.get("blocks_over", 0),
                     "blocks": r.get("blocks", []), "ms_mean": r.get("ms_per_iter"),
                     "bitwise_equal": bool(r.get("params_equal")) and bool(r.get("losses_equal")),
                     "params_differ": r.get("params_differ"), "skipped": r.get("skipped")})
    left = doc.get("managed_left") or {}
    if rows:
        rows[-1]["managed_left"] = left.get("managed_bytes")
    return rows


def run_torch(args):
    script = args.torch_script or os.path.join(args.srcdir, "examples", "torch_train.py")
    lib = args.lib or os.path.join(args.build, ".libs", "libumadv.so")
    out = os.path.join(args.out, "torch.json")
    argv = [sys.executable, script, "--lib", lib, "--umadv"] + shlex.split(args.torch_args) + [
        "--iters", str(args.iters), "--budget-change", str(args.budget_change),
        "--budget-seed", str(args.seed), "--budget-range", args.budget_range,
        "--policies", args.policies, "--json", out]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    rc, _, secs = run_logged(argv, os.path.join(args.out, "torch.log"), env=env,
                             timeout=args.timeout)
    rows = []
    if os.path.exists(out):
        with open(out) as f:
            rows = torch_rows(json.load(f))
    status = "ok" if rc == 0 else "timed out" if rc is None else "exit %d" % rc
    return rows, {"command": argv, "status": status, "seconds": secs}


# ---- the table -------------------------------------------------------------

def budgets_cell(r):
    """Distinct budgets set, in GiB, and how many were refused."""
    b = r["budgets"]
    if not b:
        return "none"
    cell = "%d (%.2f-%.2f GiB)" % (len(b), min(b) / 2**30, max(b) / 2**30)
    return cell + (", %d refused" % r["refused"] if r["refused"] else "")


def print_table(rows, runs):
    print("%-9s %-13s %6s %-30s %10s %8s %6s %14s" % (
        "workload", "policy", "iters", "budgets set", "ms/iter", "bitwise", "over",
        "managed left"))
    for r in rows:
        if r.get("skipped"):
            print("%-9s %-13s skipped: %s" % (r["workload"], r["policy"], r["skipped"]))
            continue
        left = r.get("managed_left")
        print("%-9s %-13s %6d %-30s %10s %8s %6d %14s" % (
            r["workload"], r["policy"], r["iterations"], budgets_cell(r),
            "-" if r["ms_mean"] is None else "%.1f" % r["ms_mean"],
            "yes" if r["bitwise_equal"] else "NO", r["blocks_over"],
            "" if left is None else "%d B" % left))
    for name, info in runs.items():
        print("%s: %s in %.0f s" % (name, info["status"], info["seconds"]))


def verdict(rows, runs, want_iters):
    """What the issue asks: each run done, all iterations, every policy
    bitwise equal to oracle, nothing left."""
    lefts = [r["managed_left"] for r in rows if "managed_left" in r]
    return bool(all(i["status"] == "ok" for i in runs.values()) and rows and
                all(not r.get("skipped") and r["iterations"] == want_iters and r["bitwise_equal"]
                    for r in rows) and
                all(x == 0 for x in lefts) and len(lefts) == len(runs))


def over_budget(rows):
    """Runs with a block whose accounted resident peak passed its budget."""
    return ["%s %s (%d blocks)" % (r["workload"], r["policy"], r["blocks_over"])
            for r in rows if r["blocks_over"]]


def parse_args():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=".", help="the build directory (examples/mlp_train, "
                   ".libs/libumadv.so)")
    p.add_argument("--srcdir", default=os.path.dirname(here), help="the source tree")
    p.add_argument("--mlp", help="mlp_train (default: BUILD/examples/mlp_train)")
    p.add_argument("--torch-script", help="torch_train.py (default: SRCDIR/examples/)")
    p.add_argument("--lib", help="libumadv.so (default: BUILD/.libs/libumadv.so)")
    p.add_argument("--iters", type=int, default=300)
    p.add_argument("--budget-change", type=int, default=20)
    p.add_argument("--budget-range", default="0.25,1")
    p.add_argument("--seed", type=int, default=1, help="seed of the budget draws")
    p.add_argument("--policies", default=POLICIES, help="the first is the reference")
    p.add_argument("--mlp-args", default="--batch 4096 --hidden 4096 --layers 8",
                   help="mlp_train's shape")
    p.add_argument("--torch-args", default="--model resnet50 --batch 64",
                   help="torch_train.py's model and batch")
    p.add_argument("--skip", action="append", choices=("mlp", "torch"), default=[])
    p.add_argument("--timeout", type=float, help="seconds each workload may take")
    p.add_argument("--out", required=True, help="folder for the logs and longrun.json")
    args = p.parse_args()
    if not args.policies.startswith("oracle"):
        p.error("--policies: oracle first (it is the reference)")
    return args


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows, runs = [], {}
    for name, fn in (("mlp", run_mlp), ("torch", run_torch)):
        if name not in args.skip:
            r, info = fn(args)
            rows += r
            runs[name] = info
    print_table(rows, runs)
    ok, over = verdict(rows, runs, args.iters), over_budget(rows)
    with open(os.path.join(args.out, "longrun.json"), "w") as f:
        json.dump({"iters": args.iters, "budget_change": args.budget_change,
                   "budget_range": args.budget_range, "seed": args.seed, "runs": runs,
                   "rows": rows, "ok": ok, "over_budget": over}, f, indent=1)
    print("long run: %s" % ("every run complete, every policy bitwise equal to oracle, "
                            "nothing left" if ok else "FAILED (see the table)"))
    print("budgets: %s" % ("every block's resident peak within its budget" if not over else
                           "OVER in " + ", ".join(over)))
    return 0 if ok and not over else 1


if __name__ == "__main__":
    sys.exit(main())
