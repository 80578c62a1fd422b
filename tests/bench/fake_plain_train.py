#!/usr/bin/env python3
"""A stand-in for examples/plain_train.py in the test of bench/unmodified.py:
losses on standard output and each iteration's time on standard error, as
the real one prints them, from made-up numbers that depend on how umadv
runs it (its environment):

  native (nothing set)               100 ms an iteration
  umadv profile (UMADV_PROFILE_OUTPUT) 100 ms, but 1000 for iteration 1;
                                     writes a trace of a 3 GiB footprint there
  umadv run (UMADV_POLICY=plan)      306 ms, 500 for iterations 0-3; exits 1
                                     unless UMADV_BUDGET is $FAKE_WANT_BUDGET

FAKE_DIFFER=1 changes the losses under umadv run."""
import argparse
import os
import sys

TRACE = """umadv-trace 1
trace section_size=1073741824 allocs=2 steps=2 accesses=3 source="fake"
alloc id=0 base=0x0 size=2147483648 kind=weight tag="W"
alloc id=1 base=0x0 size=1073741824 kind=activation alloc_step=0 free_step=0 tag="A"
step id=0 iter=0 kind=kernel dur_ns=1000000 name="forward"
  a alloc=0 first=0 count=1 mode=r faults=0
  a alloc=1 first=0 count=1 mode=w faults=0
step id=1 iter=0 kind=kernel dur_ns=1000000 name="backward"
  a alloc=0 first=1 count=1 mode=r faults=0
end crc32=00000000
"""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model")
    p.add_argument("--batch", type=int)
    p.add_argument("--iters", type=int)
    p.add_argument("--tf32", action="store_true")
    a = p.parse_args()
    profile, policy = os.environ.get("UMADV_PROFILE_OUTPUT"), os.environ.get("UMADV_POLICY")
    if policy == "plan" and os.environ.get("UMADV_BUDGET") != os.environ.get("FAKE_WANT_BUDGET"):
        sys.exit("fake_plain_train: UMADV_BUDGET=%s" % os.environ.get("UMADV_BUDGET"))
    if profile:
        with open(profile, "w") as f:
            f.write(TRACE)
    for it in range(a.iters):
        loss = 2.0 + it + (0.5 if policy and os.environ.get("FAKE_DIFFER") else 0.0)
        print("iter %d loss %.9f %s" % (it, loss, loss.hex()))
        ms = 100.0
        if profile and it == 1:
            ms = 1000.0
        elif policy == "plan":
            ms = 500.0 if it < 4 else 306.0
        print("iter %d ms %.3f" % (it, ms), file=sys.stderr)


if __name__ == "__main__":
    main()
