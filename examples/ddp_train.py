#!/usr/bin/env python3
"""Train with PyTorch's DistributedDataParallel over NCCL, each rank's
tensors in its own umadv context (umadv(7), DISTRIBUTED TRAINING).

One process per GPU, as torchrun starts them (RANK, LOCAL_RANK,
WORLD_SIZE); each binds to GPU LOCAL_RANK, and so does its umadv context
(UMADV_DEVICE defaults to LOCAL_RANK; UMADV_BUDGET may be one size per
rank: 8G,4G). umadv works inside DDP, it does not replace it: NCCL's own
buffers and its communication stay NCCL's. Started without torchrun (no
WORLD_SIZE) it trains alone, without DDP: bench/ddp.py --share runs two
of these on one GPU, each under half the budget.

umadv comes in by one of two routes, as for examples/torch_train.py:
  --lib PATH: libumadv.so becomes PyTorch's allocator here
      (CUDAPluggableAllocator over umadv_torch_malloc/umadv_torch_free)
      and this script marks the iterations: iteration --profile-iter is
      profiled and planned under UMADV_POLICY and UMADV_BUDGET;
  under `umadv run` (umadv-run(1)): its Python start-up hook made
      umadv's allocator PyTorch's and marks an iteration at every
      optimizer step; give no --lib.
--native: PyTorch's own allocator (the reference).

A rank whose umadv context cannot be made (a bad knob, no device) exits
2 before it joins the process group, with umadv's error naming the rank
and why: torchrun then ends the job, and no rank waits for it in a
collective.

DDP's gradient buckets are read by NCCL's kernels, on NCCL's stream,
while backward goes on, unseen by umadv's plan: each bucket's block is
marked not stageable before its collective and held on the GPU until the
collective ends (src/inject/python/umadv_ddp.py, umadv(7) DISTRIBUTED
TRAINING). With --lib this script registers the guard as its DDP
communication hook (DDP's own allreduce arithmetic, after the mark);
under umadv run, the start-up hook does it for every DDP of the program.
--no-bucket-guard leaves buckets stageable and unheld with --lib (to
measure the guard).

Synthetic data (each rank its own batch, from --seed and the rank),
fixed seeds, no downloads; cuDNN deterministic. Each rank prints its
losses bitwise (float.hex) and, with --json, writes PATH with {rank}
replaced by its rank: its times, losses, the median time of the
iterations from --profile-iter + 5 on (after the profile, the timing
pass and the two replays whose faults umadv counts) and umadv's peaks.

  torchrun --standalone --nproc-per-node 2 examples/ddp_train.py \\
      --lib _build/.libs/libumadv.so --model gpt2 --batch 8 --iters 12
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_train  # noqa: E402  (the models, the ctypes binding, the marks)
# the bucket guard: under umadv run its start-up hook's folder is on the
# path already; from the source tree, beside it
sys.path.append(os.path.join(HERE, "..", "src", "inject", "python"))
import umadv_ddp  # noqa: E402


class Rank:
    """Where this process stands in the job (torchrun's environment)."""

    def __init__(self):
        env = os.environ
        self.distributed = "WORLD_SIZE" in env
        self.rank = int(env.get("RANK", "0"))
        self.local = int(env.get("LOCAL_RANK", "0"))
        self.world = int(env.get("WORLD_SIZE", "1"))

    def say(self, message):
        print("ddp_train.py[rank %d]: %s" % (self.rank, message), flush=True)

    def fail(self, message, code=2):
        sys.stderr.write("ddp_train.py[rank %d]: %s\n" % (self.rank, message))
        sys.exit(code)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    route = p.add_mutually_exclusive_group()
    route.add_argument("--lib", help="libumadv.so: umadv becomes PyTorch's allocator here")
    route.add_argument("--native", action="store_true", help="PyTorch's own allocator")
    p.add_argument("--model", default="gpt2",
                   help="gpt2, transformer (torch.nn) or a torchvision classifier")
    p.add_argument("--batch", type=int, default=8, help="per rank")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--iters", type=int, default=12)
    p.add_argument("--profile-iter", type=int,
                   help="--lib: the iteration profiled; the plan replays from the next "
                   "(default: 2 under DDP, whose second iteration rebuilds its buckets; "
                   "else 1)")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-bucket-guard", action="store_true",
                   help="leave DDP's gradient buckets stageable")
    p.add_argument("--json", help="write this rank's results to PATH ({rank}: the rank)")
    p.add_argument("--trace", help="--lib: save this rank's trace to PATH ({rank}: the rank) "
                   "after the timing pass")
    args = p.parse_args()
    if args.trace:
        args.trace = args.trace.replace("{rank}", os.environ.get("RANK", "0"))
    if args.profile_iter is None:  # DDP's first two iterations are its warm-up
        args.profile_iter = 2 if "WORLD_SIZE" in os.environ else 1
    return args


def umadv_library(args):
    """The libumadv this process allocates through, or None (native)."""
    if args.native:
        return None
    if args.lib:
        return torch_train.find_library(args.lib)
    inject = os.environ.get("UMADV_INJECT_LIBRARY")
    if not inject:
        return None
    lib = ctypes.CDLL(inject)
    lib.umadv_inject_libumadv_path.restype = ctypes.c_char_p
    path = lib.umadv_inject_libumadv_path()
    return path.decode() if path else None


def umadv_context(rank, path):
    """The rank's umadv context, made now: a rank that cannot make it
    exits before the process group, so that no other waits for it."""
    um = torch_train.Umadv(path)
    try:
        um.context()
    except RuntimeError as e:
        rank.fail("no umadv context on GPU %d (%s; umadv's error above says why): this "
                  "rank stops before joining the job" % (rank.local, e))
    return um


def data(torch, args, rank):
    """This rank's batch: its own, so that DDP has gradients to average."""
    gen = torch.Generator().manual_seed(args.seed + 1 + 1000 * rank.rank)
    if args.model == "gpt2":
        tokens = torch.randint(0, torch_train.GPT2_VOCAB, (args.batch, args.seq_len + 1),
                               generator=gen)
        return tokens[:, :-1].cuda(), tokens[:, 1:].reshape(-1).cuda()
    x = torch.randn(args.batch, 3, args.image_size, args.image_size, generator=gen).cuda()
    return x, torch.randint(0, 1000, (args.batch,), generator=gen).cuda()


def build(torch, args, rank, um):
    torchvision = None
    if args.model not in ("gpt2", "transformer"):
        import torchvision
    torch.manual_seed(args.seed)  # the same weights on every rank (DDP broadcasts rank 0's)
    model = torch_train.build_model(torch, torchvision, args).cuda()
    if rank.distributed:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank.local])
        if args.lib and not args.no_bucket_guard:  # under umadv run, its hook guards
            model.register_comm_hook(None, umadv_ddp.BucketGuard(torch, um).allreduce)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    return model, opt


def train(torch, args, rank, um, marks):
    model, opt = build(torch, args, rank, um)
    x, y = data(torch, args, rank)
    times, losses = [], []
    for it in range(args.iters):
        t0 = time.perf_counter()
        if marks:
            torch_train.mark(um, it, args, profile=True)
        loss = torch_train.step(torch, model, opt, x, y)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
        losses.append(loss.item())
        rank.say("iter %2d %8.1f ms loss %.7f %s" % (it, times[-1], losses[-1],
                                                     losses[-1].hex()))
    return times, losses


def result(args, rank, um, times, losses, route):
    # after the profile, the timing pass and the two replays whose faults
    # umadv counts (examples/torch_train.py's steady state); native alike
    timed = times[args.profile_iter + 5:] or times[-1:]
    doc = {"rank": rank.rank, "local_rank": rank.local, "world_size": rank.world,
           "distributed": rank.distributed, "route": route, "model": args.model,
           "batch": args.batch, "iters": args.iters, "times_ms": times,
           "ms_per_iter": statistics.median(timed), "losses": [v.hex() for v in losses],
           "budget": os.environ.get("UMADV_BUDGET", "")}
    if um is not None:
        s = um.stats()
        doc.update(torch_train.counters(um), managed_peak=s.managed_peak,
                   resident_peak=s.resident_peak, gpu_peak_used=s.gpu_peak_used,
                   held_evictions=s.held_evictions, hold_wait_ms=s.hold_wait_ns * 1e-6,
                   profiles=s.profiles)
    if umadv_ddp.guards:  # ours (--lib) or umadv run's start-up hook's
        doc.update(buckets_guarded=sum(len(g.marked) for g in umadv_ddp.guards),
                   buckets_unguarded=sum(g.missed for g in umadv_ddp.guards),
                   bucket_holds=sum(g.held for g in umadv_ddp.guards))
    return doc


def main():
    args = parse_args()
    rank = Rank()
    import torch
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    path = umadv_library(args)
    if args.lib:  # before any CUDA allocation: PyTorch refuses to swap a live allocator
        torch_train.use_umadv_allocator(torch, args)
    torch.cuda.set_device(rank.local)
    um = umadv_context(rank, path) if path else None
    route = "native" if um is None else ("lib" if args.lib else "umadv-run")
    if rank.distributed:
        torch.distributed.init_process_group("nccl")
    # A failure raises out of here and ends the process without a word to
    # the group: torchrun then stops the other ranks, wherever they wait.
    times, losses = train(torch, args, rank, um, marks=route == "lib")
    if rank.distributed:
        torch.distributed.destroy_process_group()
    doc = result(args, rank, um, times, losses, route)
    if doc.get("buckets_unguarded"):
        rank.say("%d bucket calls found no umadv block to guard" % doc["buckets_unguarded"])
    rank.say("%s: %.1f ms/iter (median of the steady iterations), world %d" % (
        route, doc["ms_per_iter"], rank.world))
    if um is not None:
        rank.say(torch_train.umadv_report(torch, um))
    if args.json:
        with open(args.json.replace("{rank}", str(rank.rank)), "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
