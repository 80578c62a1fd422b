#!/usr/bin/env python3
"""A stand-in for examples/torch_train.py in the tests of
bench/torch_policies.py and bench/sim_vs_exec.py: it writes the --json document torch_train.py
writes, from made-up numbers, so that the script's arithmetic can be
checked without PyTorch or a GPU, and a trace with a link record for
--trace. Under a budget, VGG-16's demand run computes other losses (as a
run that broke would).

bench/peers.py's modes too: --native (30 ms, 4 GiB peak), --peer
save_on_cpu (300 ms, 1.5 GiB peak, 2 GiB each way) and --peer
checkpoint (40 ms, 2 GiB; VGG-16's losses differ; not applicable, exit
4, to any model but resnet50 and vgg16); the trace --trace writes is
one whose fewest bytes per budget are known by hand (see TRACE). With
$FAKE_CAP ("native=100,umadv=1000,..."), a batch above a method's
number runs out of memory (exit 3), as the real one does past a cap;
with $FAKE_KILL (the same form), one dies of SIGKILL, writing nothing,
as under the kernel's out-of-memory killer. bench/peers.py --rounds: a
process of round K (its --json named *-rK-*) runs $FAKE_ROUNDS's K-th
factor ("1,2,1.5") times slower, a plan run also $FAKE_ROUND_PLAN's
K-th (a machine that drifts between rounds, plan hit harder once)."""
import argparse
import json
import os
import re
import signal
import sys

from fake_trace import two_step_trace

GIB = 1 << 30
MS = {"oracle": 40.0, "demand": 600.0, "prefetch-all": 400.0, "plan": 300.0}
LOSSES = ["0x1.8p+2", "0x1.4p+2"]
# The profile --trace writes (fake_trace.py) at 1 GiB sections: fewest
# bytes per iteration each way none from 2.5 GiB up, 1 GiB at 2 GiB, 2
# GiB at 1.5 GiB; below 1.5 GiB a step alone does not fit.
TRACE = two_step_trace(GIB)
PEER = {"save_on_cpu": {"ms_per_iter": 300.0, "peak_allocated": 3 * GIB // 2,
                        "to_host_bytes_per_iter": 2.0 * GIB,
                        "from_host_bytes_per_iter": 2.0 * GIB},
        "checkpoint": {"ms_per_iter": 40.0, "peak_allocated": 2 * GIB, "segments": 4},
        None: {"ms_per_iter": 30.0, "peak_allocated": 4 * GIB}}


def over_cap(method, batch, var="FAKE_CAP"):
    """Whether $FAKE_CAP (or @var) puts @batch past @method's largest."""
    caps = dict(kv.split("=") for kv in os.environ.get(var, "").split(",") if kv)
    return method in caps and batch > int(caps[method])


def round_factor(a, method):
    """How much slower this process runs: its round's factors."""
    m = re.search(r"-r(\d+)-", os.path.basename(a.json or ""))
    k = int(m.group(1)) - 1 if m else 0
    factor = 1.0
    for var, only in (("FAKE_ROUNDS", None), ("FAKE_ROUND_PLAN", "plan")):
        factors = [float(x) for x in os.environ.get(var, "").split(",") if x]
        if k < len(factors) and only in (None, method):
            factor *= factors[k]
    return factor


def native_run(a):
    """--native, --peer: the native document (exits as torch_train.py does)."""
    if over_cap(a.peer or "native", a.batch):
        finish(a, {"out_of_memory": "CUDA out of memory (fake)"}, 3)
    if a.peer == "checkpoint" and a.model not in ("resnet50", "vgg16"):
        finish(a, {"not_applicable": "--peer checkpoint: not a chain (fake)"}, 4)
    losses = LOSSES
    if a.peer == "checkpoint" and a.model == "vgg16":
        losses = ["0x1.8p+2", "0x1.3p+2"]
    return dict(PEER[a.peer], policy="native", losses=losses, peer=a.peer,
                peak_reserved=PEER[a.peer]["peak_allocated"] + GIB,
                ms_per_iter=PEER[a.peer]["ms_per_iter"] * round_factor(a, a.peer))


def finish(a, what, status):
    with open(a.json, "w") as f:
        json.dump(dict({"model": a.model, "batch": a.batch}, **what), f)
    sys.exit(status)


def run(policy, model, budget):
    losses = ["0x1.8p+2", "0x1.4p+2"]
    if budget and model == "vgg16" and policy == "demand":
        losses = ["0x1.8p+2", "0x1.5p+2"]
    return {"policy": policy, "ms_per_iter": MS[policy], "steady_from": 2, "losses": losses,
            "managed_peak": 4 * GIB, "resident_peak": budget or 4 * GIB,
            "faults_counted": 0, "fetched_bytes_per_iter": 2.5 * GIB if policy == "plan" else 0,
            "evicted_bytes_per_iter": 2.5 * GIB if policy == "plan" else 0,
            # prefetch-all's data moves through pinned staging
            "staged_bytes_per_iter": GIB if policy == "prefetch-all" else 0,
            "restored_bytes_per_iter": 0.75 * GIB if policy == "prefetch-all" else 0,
            "waits_per_iter": 0, "wait_ns_per_iter": 0, "drift_ops_per_iter": 0}


def main():
    p = argparse.ArgumentParser()
    for flag in ("--lib", "--model", "--json", "--policies", "--trace", "--peer"):
        p.add_argument(flag)
    p.add_argument("--batch", type=int)
    p.add_argument("--iters", type=int)
    p.add_argument("--seq-len", type=int)
    p.add_argument("--cap-gib", type=float)
    p.add_argument("--umadv", action="store_true")
    p.add_argument("--both", action="store_true")
    p.add_argument("--native", action="store_true")
    p.add_argument("--loader", action="store_true")
    a = p.parse_args()
    budget = int(os.environ.get("UMADV_BUDGET", "0"))
    if a.trace:
        with open(a.trace, "w") as f:
            f.write(TRACE)
    if a.native or a.peer:
        with open(a.json, "w") as f:
            json.dump({"model": a.model, "peer": a.peer, "native": native_run(a), "runs": []}, f)
        return
    if a.umadv and over_cap("umadv", a.batch, "FAKE_KILL"):
        os.kill(os.getpid(), signal.SIGKILL)
    if a.umadv and over_cap("umadv", a.batch):
        finish(a, {"out_of_memory": "umadv_torch_malloc: out of memory (fake)"}, 3)
    runs = [run(policy, a.model, budget) for policy in a.policies.split(",")]
    for r in runs:
        r["ms_per_iter"] *= round_factor(a, r["policy"])
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
