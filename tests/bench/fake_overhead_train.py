#!/usr/bin/env python3
"""A stand-in for examples/torch_train.py --both --policies oracle in the
test of bench/overhead.py: it writes the --json document torch_train.py
writes, with made-up iteration times, so that the script's arithmetic can
be checked without PyTorch or a GPU. Native iterations take 10 ms (20 ms
the first two); umadv's oracle run takes 30, 80 and 60 ms for its first,
profiled and timing iterations, 12 ms for the next three, then the
model's steady time (10.3 ms; 12 ms for "slow"); umadv's own calls
before that 40 ms ending the profile, 5 planning, 1 starting the replay.
Host work takes 1 ms less than a native iteration, 0.3 ms less than an
oracle one; oracle makes 540 allocation calls an iteration, taking
0.4 ms (times the repeat's number).
"broken" fails; "killed" dies of SIGKILL, as the kernel's out-of-memory
killer kills, writing nothing; "differs" computes other losses and exits
1 after writing its --json, as torch_train.py does. A run whose --json ends in -2.json
(bench/overhead.py --repeats' second) takes 11 ms in oracle's steady
state; one ending in -3.json 12 ms both natively and in oracle's. With
--umadv instead of --both (bench/overhead.py --variants): umadv alone,
its steady time by what it runs (variant_ms), 2 ms more in a -3.json;
with --native --native-alloc (the floor variant): native alone, 10.6 ms."""
import argparse
import json
import os
import re
import signal
import sys

LOSSES = ["0x1.8p+2", "0x1.4p+2"]


def main():
    p = argparse.ArgumentParser()
    for flag in ("--lib", "--model", "--json", "--policies", "--alloc", "--native-alloc"):
        p.add_argument(flag)
    p.add_argument("--batch", type=int)
    p.add_argument("--iters", type=int)
    for flag in ("--both", "--umadv", "--native", "--no-profile"):
        p.add_argument(flag, action="store_true")
    a = p.parse_args()
    if a.model == "broken":
        sys.exit("torch_train: no such model")
    if a.model == "killed":
        os.kill(os.getpid(), signal.SIGKILL)
    repeat = re.search(r"-([0-9]+)\.json$", a.json)
    repeat = int(repeat.group(1)) if repeat else 1
    steady = {1: 12.0 if a.model == "slow" else 10.3, 2: 11.0}.get(repeat, 12.0)
    native_ms = 12.0 if repeat == 3 else 10.0
    native = {"policy": "native",
              "times": [20.0, 20.0] + [native_ms] * (a.iters - 2),
              "cpu_times": [18.0, 18.0] + [native_ms - 1.0] * (a.iters - 2),
              "losses": LOSSES}
    times = [30.0, 80.0, 60.0, 12.0, 12.0, 12.0] + [steady] * (a.iters - 6)
    run = {"policy": "oracle", "steady_from": 6, "times": times,
           "cpu_times": [t - 0.3 for t in times],
           "losses": ["0x1.8p+2", "0x1.5p+2"] if a.model == "differs" else LOSSES,
           "phases_ns": {"profile_end_ns": 40e6, "plan_ns": 5e6, "replay_start_ns": 1e6},
           "alloc_calls_per_iter": 540.0, "alloc_ns_per_iter": 0.4e6 * repeat}
    if a.umadv:  # a variant: umadv alone, its steady time by what it runs
        steady = variant_ms(a) + (2.0 if repeat == 3 else 0.0)
        first = 2 if a.no_profile else 6
        run = {"policy": "oracle", "steady_from": first, "losses": LOSSES,
               "times": [30.0] * first + [steady] * (a.iters - first)}
        native = None
    if a.native:  # the floor variant: native alone, through a pluggable allocator
        native = {"policy": "native", "steady_from": 2,
                  "times": [30.0] * 2 + [10.6] * (a.iters - 2)}
        run = None
    with open(a.json, "w") as f:
        json.dump({"model": a.model, "native": native, "runs": [run] if run else []}, f)
    sys.exit(1 if run and run["losses"] != LOSSES else 0)


def variant_ms(a):
    """--umadv's steady ms: its allocator alone 10.8 (without CUPTI 10.2),
    a pool 10.1, a pool under oracle 10.5, plan at its defaults 10.4."""
    if a.alloc == "pool":
        return 10.1 if a.no_profile else 10.5
    if a.policies == "plan":
        return 10.4
    return 10.2 if os.environ.get("UMADV_PROFILER") == "0" else 10.8


if __name__ == "__main__":
    main()
