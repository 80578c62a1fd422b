#!/usr/bin/env python3
"""A stand-in for examples/mlp_train in the tests of bench/policies.py: it
prints what mlp_train prints for each policy of --policies, from numbers
made up so that the script's arithmetic can be checked, and writes a trace
with a link record for --save-trace. Budget below 1 GiB: prefetch-all is
refused (run_skipped), as umadv refuses a policy whose step does not fit."""
import argparse
import os

GIB = 1 << 30
MS = {"oracle": 100.0, "demand": 400.0, "prefetch-all": 200.0, "plan": 125.0}


def main():
    p = argparse.ArgumentParser()
    for flag in ("--batch", "--hidden", "--layers", "--iters"):
        p.add_argument(flag, type=int)
    p.add_argument("--policies")
    p.add_argument("--save-trace")
    a = p.parse_args()
    budget = int(os.environ.get("UMADV_BUDGET", "0"))
    if a.save_trace:
        with open(a.save_trace, "w") as f:
            f.write("umadv-trace 1\nlink fetch_bw=5e10 fetch_latency=1e-4 evict_bw=1e10 "
                    "evict_latency=5e-5\n")
    for policy in a.policies.split(","):
        print("run %s" % policy)
        if policy == "prefetch-all" and 0 < budget < GIB:
            print("run_skipped budget too small")
            continue
        for it in range(a.iters):
            print("iter %d loss %.9f" % (it, 2.0 / (it + 1)))
        print("checksum 0x%016x" % (7 if policy != "demand" else 8))
        print("ms_per_iter %.3f (median of 3 steady-state iterations)" % MS[policy])
        print("managed_peak %d" % (4 * GIB))
        print("steady_fetched_per_iter %d" % (2 * GIB if policy == "plan" else 0))
        print("steady_evicted_per_iter %d" % (GIB if policy == "plan" else 0))
        print("steady_faults_per_iter %.1f" % (1000.0 if policy == "demand" else 0.0))
        print("resident_peak %d" % (budget or 4 * GIB))


if __name__ == "__main__":
    main()
