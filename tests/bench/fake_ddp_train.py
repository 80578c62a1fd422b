#!/usr/bin/env python3
"""A stand-in for examples/ddp_train.py in the tests of bench/ddp.py: it
writes the --json document a rank writes, from made-up numbers, so that
the script's arithmetic can be checked without PyTorch or a GPU.

Footprint (UMADV_POLICY=oracle): a managed peak of 4 GiB, rank 1's
4.5 GiB. Native: 100 ms alone, 125 ms a rank on 2 GPUs; umadv plan 150
and 200 (alone: 150 at the whole footprint, 240 at half of it). Each
rank's losses are its own; $FAKE_DIFFER=N makes umadv's rank N compute
others. With --trace, fake_torch_train.py's trace (the bound at a 2
GiB budget: max(native, 1 GiB in at 50 GB/s, 1 GiB out at 10 GB/s) =
107.4 ms). UMADV_BUDGET must be a per-rank list with one entry per rank
under torchrun (WORLD_SIZE), a single size otherwise: the stand-in
takes LOCAL_RANK's entry, as libumadv does, and fails (exit 2, naming
the rank, as ddp_train.py does) on anything else; so does rank
$FAKE_FAIL_RANK, as a rank whose umadv context cannot be made."""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_torch_train import TRACE  # noqa: E402

GIB = 1 << 30


# umadv plan's 2-GPU rank 0 in bench/ddp.py --repeats' first, second and
# third repeat (their documents' names end in -rank{rank}, -r2-rank{rank}...)
REPEAT_MS = {1: 200.0, 2: 250.0, 3: 180.0}


def repeat_of(json_path):
    found = re.search(r"-r([0-9]+)-rank", json_path)
    return int(found.group(1)) if found else 1


def budget_of(rank, world, distributed):
    value = os.environ.get("UMADV_BUDGET", "")
    entries = value.split(",") if value else []
    if distributed and entries and len(entries) != world:
        sys.exit("fake_ddp_train.py[rank %d]: UMADV_BUDGET=%s: not one entry per rank"
                 % (rank, value))
    if not distributed and len(entries) > 1:
        sys.exit("fake_ddp_train.py[rank 0]: UMADV_BUDGET=%s: a list outside torchrun" % value)
    entry = entries[int(os.environ.get("LOCAL_RANK", "0"))] if entries else ""
    return int(entry[:-1]) << 20 if entry.endswith("M") else 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lib")
    p.add_argument("--native", action="store_true")
    p.add_argument("--model")
    p.add_argument("--batch", type=int)
    p.add_argument("--iters", type=int)
    p.add_argument("--json")
    p.add_argument("--trace")
    a = p.parse_args()
    if a.trace:  # fake_torch_train.py's: 1 GiB each way at a 2 GiB budget
        with open(a.trace.replace("{rank}", os.environ.get("RANK", "0")), "w") as f:
            f.write(TRACE)
    distributed = "WORLD_SIZE" in os.environ
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    if not a.native and os.environ.get("FAKE_FAIL_RANK") == str(rank):
        sys.stderr.write("fake_ddp_train.py[rank %d]: no umadv context on GPU %d\n"
                         % (rank, rank))
        sys.exit(2)
    policy = os.environ.get("UMADV_POLICY", "plan")
    budget = budget_of(rank, world, distributed)
    losses = [(6.0 + rank) / (k + 1) for k in range(a.iters)]
    if a.native:
        ms = 100.0 if world == 1 else 125.0
    elif policy == "oracle":
        ms = 110.0
    elif distributed:  # the job waits for its slowest rank
        ms = 150.0 if world == 1 else REPEAT_MS[repeat_of(a.json)] + rank
    else:
        ms = 240.0 if budget < 3 * GIB else 150.0
    if not a.native and os.environ.get("FAKE_DIFFER") == str(rank) and policy == "plan":
        losses[-1] += 1.0
    doc = {"rank": rank, "local_rank": rank, "world_size": world, "ms_per_iter": ms,
           "losses": [v.hex() for v in losses], "budget": os.environ.get("UMADV_BUDGET", "")}
    if not a.native:
        doc["managed_peak"] = 4 * GIB + (GIB // 2 if rank == 1 else 0)
        if distributed and policy == "plan":  # evictions that waited for a bucket's hold
            doc.update(held_evictions=3 + rank, hold_wait_ms=1.5 * (rank + 1),
                       profiles=1 + rank)  # rank 1 profiled again
    with open(a.json.replace("{rank}", str(rank)), "w") as f:
        json.dump(doc, f)


if __name__ == "__main__":
    main()
