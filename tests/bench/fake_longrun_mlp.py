#!/usr/bin/env python3
"""A stand-in for examples/mlp_train in the tests of bench/longrun.py: it
prints what mlp_train prints for --policies with --budget-change, from
made-up numbers. FAKE_BREAK=checksum makes demand's weights differ,
FAKE_BREAK=over puts a block of plan over its budget, FAKE_BREAK=left
leaves managed bytes at exit."""
import argparse
import os

p = argparse.ArgumentParser()
for flag in ("--batch", "--hidden", "--layers", "--budget-seed", "--budget-range"):
    p.add_argument(flag)
p.add_argument("--iters", type=int)
p.add_argument("--budget-change", type=int)
p.add_argument("--policies")
a = p.parse_args()
brk = os.environ.get("FAKE_BREAK", "")
blocks = (a.iters + a.budget_change - 1) // a.budget_change
budgets = [(1 << 30) + (k % 3) * (256 << 20) for k in range(blocks)]
for policy in a.policies.split(","):
    print("run %s" % policy)
    for it in range(a.iters):
        if it % a.budget_change == 0:
            k = it // a.budget_change
            if k == 2:  # a draw under the largest step: refused, the budget stays
                print("budget_refused 2 %d (budget stays %d)" % (1 << 20, budgets[1]))
            else:
                print("budget_set %d %d at iter %d" % (k, budgets[k], it))
        print("iter %d loss %.9f" % (it, 2.302585093 - 0.001 * it))
    for k in range(blocks):
        budget = budgets[1] if k == 2 else budgets[k]
        over = brk == "over" and policy == "plan" and k == 1
        state = "oracle" if policy == "oracle" else "OVER" if over else "within"
        print("budget_block %d budget %d resident_peak %d %s" % (
            k, budget, budget + (4096 if over else -4096), state))
    bad = brk == "checksum" and policy == "demand"
    print("checksum 0x%016x" % (0x1234 if bad else 0xabcd))
    print("ms_mean %.3f (mean of the same)" % {"oracle": 50.0, "demand": 400.0,
                                               "prefetch-all": 200.0, "plan": 100.0}[policy])
print("managed_left %d bytes in %d blocks (after freeing the model)" % (
    (8 << 20, 3) if brk == "left" else (0, 0)))
print("gpu_used_after_destroy 8388608 bytes above the start")
