#!/usr/bin/env python3
"""A stand-in for examples/torch_train.py in the tests of
bench/torch_policies.py and bench/sim_vs_exec.py: it writes the --json document torch_train.py
writes, from made-up numbers, so that the script's arithmetic can be
checked without PyTorch or a GPU, and a trace with a link record for
--trace. Under a budget, VGG-16's demand run computes other losses (as a
run that broke would)."""
import argparse
import json
import os

GIB = 1 << 30
MS = {"oracle": 40.0, "demand": 600.0, "prefetch-all": 400.0, "plan": 300.0}


def run(policy, model, budget):
    losses = ["0x1.8p+2", "0x1.4p+2"]
    if budget and model == "vgg16" and policy == "demand":
        losses = ["0x1.8p+2", "0x1.5p+2"]
    return {"policy": policy, "ms_per_iter": MS[policy], "steady_from": 2, "losses": losses,
            "managed_peak": 4 * GIB, "resident_peak": budget or 4 * GIB,
            "faults_counted": 0, "fetched_bytes_per_iter": 2.5 * GIB if policy == "plan" else 0,
            "evicted_bytes_per_iter": 2.5 * GIB if policy == "plan" else 0,
            "waits_per_iter": 0, "wait_ns_per_iter": 0, "drift_ops_per_iter": 0}


def main():
    p = argparse.ArgumentParser()
    for flag in ("--lib", "--model", "--json", "--policies", "--trace"):
        p.add_argument(flag)
    p.add_argument("--batch", type=int)
    p.add_argument("--iters", type=int)
    p.add_argument("--umadv", action="store_true")
    p.add_argument("--both", action="store_true")
    a = p.parse_args()
    budget = int(os.environ.get("UMADV_BUDGET", "0"))
    if a.trace:
        with open(a.trace, "w") as f:
            f.write("umadv-trace 1\nlink fetch_bw=5e10 fetch_latency=1e-4 evict_bw=1e10 "
                    "evict_latency=5e-5\n")
    runs = [run(policy, a.model, budget) for policy in a.policies.split(",")]
    native = None
    if a.both:
        native = {"policy": "native", "ms_per_iter": 30.0, "losses": ["0x1.8p+2", "0x1.4p+2"]}
        for r in runs:
            r["x_native"] = r["ms_per_iter"] / native["ms_per_iter"]
            r["identical"] = r["losses"] == native["losses"]
    with open(a.json, "w") as f:
        json.dump({"model": a.model, "native": native, "runs": runs}, f)


if __name__ == "__main__":
    main()
