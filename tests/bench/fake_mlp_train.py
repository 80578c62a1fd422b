#!/usr/bin/env python3
"""A stand-in for examples/mlp_train in the tests of bench/policies.py and
bench/sim_vs_exec.py: it prints what mlp_train prints for each policy of
--policies, from numbers made up so that the scripts' arithmetic can be
checked, and writes a trace with a link record for --save-trace (a copy
of $FAKE_TRACE if set, a real trace that `umadv plan` can simulate).
Budget below 1 GiB: prefetch-all is refused (run_skipped, and umadv's
error on standard error), as umadv refuses a policy whose step does not
fit."""
import argparse
import os
import shutil
import sys

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
    if a.save_trace and os.environ.get("FAKE_TRACE"):
        shutil.copyfile(os.environ["FAKE_TRACE"], a.save_trace)
    elif a.save_trace:
        with open(a.save_trace, "w") as f:
            f.write("umadv-trace 1\nlink fetch_bw=5e10 fetch_latency=1e-4 evict_bw=1e10 "
                    "evict_latency=5e-5\n")
    for policy in a.policies.split(","):
        print("run %s" % policy)
        if policy == "prefetch-all" and 0 < budget < GIB:
            print("umadv: error: step 3 (fc1.backward) touches 1.00 GiB at once, more than "
                  "the budget of %.2f MiB: raise the budget to at least that"
                  % (budget / 1048576.0), file=sys.stderr)
            print("run_skipped budget too small")
            continue
        for it in range(a.iters):
            print("iter %d loss %.9f" % (it, 2.0 / (it + 1)))
        print("checksum 0x%016x" % (7 if policy != "demand" else 8))
        print("ms_per_iter %.3f (median of 3 steady-state iterations)" % MS[policy])
        print("managed_peak %d" % (4 * GIB))
        print("steady_fetched_per_iter %d" % (2 * GIB if policy == "plan" else 0))
        print("steady_evicted_per_iter %d" % (GIB if policy == "plan" else 0))
        print("steady_staged_per_iter %d" % (GIB // 2 if policy == "plan" else 0))
        print("steady_restored_per_iter %d" % (GIB // 2 if policy == "plan" else 0))
        print("steady_faults_per_iter %.1f" % (1000.0 if policy == "demand" else 0.0))
        print("resident_peak %d" % (budget or 4 * GIB))


if __name__ == "__main__":
    main()
