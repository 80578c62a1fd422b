#!/usr/bin/env python3
"""A stand-in for examples/vgg/vgg_train in the test of bench/vgg.py: it
prints what vgg_train prints, from numbers made up so that the script's
arithmetic can be checked. The footprint is batch x 64 MiB (the oracle's
managed peak), the largest step batch x 32 MiB whole, divided by the
split; --split auto takes the fewest parts whose largest step takes half
of UMADV_BUDGET. Iterations up to --profile-iter + 1 take 1000 ms (the
profiled one 3000 with --declarations partial), then
oracle 100, demand 400, prefetch-all 200, plan 125, but for one 900 ms
iteration of each (the median ignores it). Plan moves 2 GiB in (1.5 GiB
fetched, 0.5 restored from staging) and 1 GiB out (0.5 evicted, 0.5
staged) per iteration; demand faults 1000 times an iteration, 5000 in the
timing pass, each iteration's printed on the next one's line, as vgg_train
prints them (umadv counts them at the next iteration's begin). The digest
depends on the split alone, unless FAKE_DIFFER names the policy. Unsplit, under plan, a
budget below the largest step is refused as umadv_plan refuses it.
--trace writes a profile whose fewest bytes per budget are known (see
TRACE), whatever the batch."""
import argparse
import os
import sys
import time

from fake_trace import two_step_trace

MIB = 1 << 20
MS = {"oracle": 100.0, "demand": 400.0, "prefetch-all": 200.0, "plan": 125.0}
# The profile --trace writes (fake_trace.py) at 128 MiB sections: fewest
# bytes per iteration each way none from 320 MiB up, 128 MiB at 256 MiB,
# 256 MiB at 192 MiB.
TRACE = two_step_trace(128 * MIB)


def auto_split(batch, budget):
    if budget == 0:
        return 1
    for k in range(1, batch + 1):
        if batch * 32 * MIB // k <= budget // 2:
            return k
    return batch


def faults(policy, it, a):
    """The fault groups of iteration @it (none before the first)."""
    if policy != "demand" or it < 0:
        return 0
    return 5000 if it == a.profile_iter + 1 else 1000


def main():
    p = argparse.ArgumentParser()
    for flag in ("--batch", "--iters", "--profile-iter", "--image-size"):
        p.add_argument(flag, type=int, default=1)
    p.add_argument("--split", default="1")
    p.add_argument("--deterministic", action="store_true")
    p.add_argument("--footprint", action="store_true")
    p.add_argument("--workspace-limit", default="512M")
    p.add_argument("--trace")
    p.add_argument("--declarations", choices=("complete", "partial"), default="complete")
    a = p.parse_args()
    if a.trace:
        with open(a.trace, "w") as f:
            f.write(TRACE)
    budget = int(os.environ.get("UMADV_BUDGET", "0"))
    policy = os.environ.get("UMADV_POLICY", "oracle")
    split = auto_split(a.batch, budget) if a.split == "auto" else int(a.split)
    print("split %d (parts of %d and %d samples)" % (split, a.batch // split, a.batch // split))
    if a.footprint:
        return
    step = a.batch * 32 * MIB // split
    if policy == "plan" and 0 < budget < step:
        print("vgg_train: umadv_plan: budget too small for a step: training goes on without "
              "a plan", file=sys.stderr)
    for it in range(a.iters):
        ms = 1000.0 if it <= a.profile_iter + 1 else MS[policy]
        ms = 900.0 if it == a.iters - 2 and it > a.profile_iter + 1 else ms
        ms = 3000.0 if it == a.profile_iter and a.declarations == "partial" else ms
        half = (1 << 29) if policy == "plan" else 0
        print("iter %d loss %.9f ms %.3f fetched %d evicted %d staged %d restored %d faults %d"
              % (it, 7.0 / (it + 1), ms, 3 * half, half, half, half, faults(policy, it - 1, a)))
    if os.environ.get("FAKE_HANG") == "%s:%d" % (policy, budget):  # a run the caller kills
        time.sleep(30)
    differ = os.environ.get("FAKE_DIFFER") == policy
    print("digest 0x%016x" % (split * 16 + differ))
    print("summary policy %s budget %s faults 0 fetched_bytes 0 evicted_bytes 0 managed_peak %d "
          "resident_peak %d" % (policy, budget or "none", a.batch * 64 * MIB,
                                budget or a.batch * 64 * MIB))


if __name__ == "__main__":
    main()
