#!/usr/bin/env python3
"""A stand-in for examples/torch_train.py in the tests of bench/longrun.py:
it writes the --json document of a --budget-change run from made-up
numbers. FAKE_BREAK=params makes prefetch-all's parameters differ."""
import argparse
import json
import os

p = argparse.ArgumentParser()
for flag in ("--lib", "--model", "--json", "--policies", "--budget-seed", "--budget-range"):
    p.add_argument(flag)
p.add_argument("--batch", type=int)
p.add_argument("--iters", type=int)
p.add_argument("--budget-change", type=int)
p.add_argument("--umadv", action="store_true")
a = p.parse_args()
bad = os.environ.get("FAKE_BREAK") == "params"
runs = []
for policy in a.policies.split(","):
    differ = ["fc.weight"] if bad and policy == "prefetch-all" else []
    runs.append({"policy": policy, "iterations": a.iters, "ms_per_iter": 40.0,
                 "budgets": [3 << 30, 4 << 30], "refused": 0, "blocks_over": 0,
                 "blocks": [], "params_equal": not differ, "params_differ": differ,
                 "losses_equal": True})
with open(a.json, "w") as f:
    json.dump({"model": a.model, "managed_left": {"managed_bytes": 0, "blocks": 0},
               "runs": runs}, f)
