#!/usr/bin/env python3
"""A stand-in for `umadv plan TRACE --budget BYTES --iteration 0 --json` in
the tests of bench/sim_vs_exec.py: it prints the umadv-plan JSON document
(man/umadv-plan.1, JSON OUTPUT; tools/umadv/cmd_plan_print.c), with every
key the real one has, from numbers made up so that the script's
comparison can be checked against tests/bench/fake_mlp_train.py's:

  policy        ms    fetched            evicted   what it tests there
  oracle        100   0                  0         agrees
  demand        400   0                  3 GiB     bytes off (it evicts 0)
  prefetch-all  160   0                  0         time off (200 ms, x 1.25)
  plan          120   2 GiB + 10 MiB     1 GiB     agrees (x 1.042, 0.5% bytes)

A budget below 1 GiB is refused as the real command refuses one below
the largest step (exit 1, the message on standard error); so is a TRACE
that is not a umadv trace (exit 1). --budget 100% is the 4 GiB
footprint; --policy LIST simulates those only. FAKE_PLAN_BREAK=json
prints no JSON."""
import json
import os
import sys

GIB = 1 << 30
MIB = 1 << 20
RESULTS = {"oracle": (100.0, 0, 0, 0), "demand": (400.0, 0, 3 * GIB, 3000),
           "prefetch-all": (160.0, 0, 0, 0), "plan": (120.0, 2 * GIB + 10 * MIB, GIB, 2)}


def die(message):
    sys.stderr.write("umadv: %s\n" % message)
    sys.exit(1)


def policy(name, budget):
    ms, fetched, evicted, faults = RESULTS[name]
    return {"policy": name, "ms_per_iter": ms, "x_oracle": ms / 100.0,
            "x_bound": None if name == "oracle" else ms / 100.0,
            "stall_ms": ms - 100.0, "faults": faults, "fault_bytes": faults * 2 * MIB,
            "remote_bytes": 0, "fetched_bytes": fetched, "evicted_bytes": evicted,
            "dropped_bytes": 0, "peak_bytes": budget if name != "oracle" else 4 * GIB,
            "budget": None if name == "oracle" else budget}


def document(trace, budget_text, budget, policies):
    schedule = dict.fromkeys(("fetch_bytes", "fetch_ops", "evict_bytes", "evict_ops",
                              "drop_bytes", "drop_ops", "fresh_bytes", "setup_ops",
                              "host_bytes", "remote_bytes", "remote_ms", "advise_ops",
                              "peak_planned", "max_step_bytes", "passes"), 0)
    schedule.update(converged=True, lower_bound_ms=100.0, planning_ms=1.5)
    return {"format": "umadv-plan", "version": 1,
            "trace": {"path": trace, "source": "fake; step durations from a timing pass",
                      "device": {"name": "fake", "memory": 0, "compute_capability": "9.0"},
                      "section_size": 2 * MIB, "iterations": 1, "iteration": 0, "steps": 50,
                      "allocations": 1, "sections": 1, "footprint": 4 * GIB,
                      "compute_ms": 100.0},
            "budgets": [{"spec": budget_text, "budget": budget, "schedule": schedule,
                         "policies": [policy(p, budget) for p in policies]}]}


def main():
    argv = sys.argv[1:]
    if argv[:1] != ["plan"] or "--json" not in argv or "--budget" not in argv:
        die("fake_umadv.py: only 'plan TRACE --budget BYTES --json'")
    trace = argv[1]
    budget_text = argv[argv.index("--budget") + 1]
    budget = 4 * GIB if budget_text == "100%" else int(budget_text)
    only = argv[argv.index("--policy") + 1].split(",") if "--policy" in argv else RESULTS
    with open(trace) as f:
        if not f.readline().startswith("umadv-trace"):
            die("%s:1: not a umadv trace" % trace)
    if budget < GIB:
        die("budget %.2f MiB is too small: the largest step needs 1.00 GiB; try --budget "
            "1G or more" % (budget / MIB))
    if os.environ.get("FAKE_PLAN_BREAK") == "json":
        print("{\"format\": \"umadv-plan\"")
        return
    json.dump(document(trace, budget_text, budget, only), sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
