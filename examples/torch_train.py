#!/usr/bin/env python3
"""Train torchvision VGG-16 or ResNet-50 with its tensors in umadv managed memory.

The model, its gradients, the optimizer state and the activations live in
umadv's managed memory through its PyTorch allocator entry points
(CUDAPluggableAllocator on libumadv.so: umadv_torch_malloc/umadv_torch_free):
  --alloc tensor (default): the pluggable allocator is the process's CUDA
      allocator, so every tensor is one umadv allocation and the trace has
      per-tensor accesses and lifetimes (transients, fresh populates).
      PyTorch's caching allocator is bypassed: umadv's pool caches. Must be
      set before any CUDA allocation, so --both runs native in a child.
  --alloc pool: a torch.cuda.MemPool over the pluggable allocator; the
      caching allocator sub-allocates tensors and umadv sees its segments
      only (a kernel that touches one tensor touches its whole segment).
      (PYTORCH_NO_CUDA_MEMORY_CACHING=1 does not help: uncached allocations
      bypass the MemPool and go to cudaMalloc.)

Iterations are marked through ctypes on the process's umadv context
(umadv_torch_context); iteration --profile-iter is profiled (CUPTI: every
kernel launch becomes a step) and planned under UMADV_POLICY/UMADV_BUDGET;
the iteration after it is umadv's timing pass (step durations measured
without faults, then planned again), and the trace is saved with --trace
once that is done. --native runs the same training on PyTorch's own
allocator; --both runs native and umadv and compares the losses bit for
bit.

Synthetic data, fixed seeds, weights=None: no downloads. fp32 (PyTorch's
default math modes: cuDNN may use TF32), SGD with momentum, cuDNN
deterministic and benchmark off so that both runs compute the same bits.

  python3 examples/torch_train.py --lib _build/.libs/libumadv.so \\
      --model vgg16 --batch 64 --iters 8 --both --trace vgg16.umt
"""
import argparse
import ctypes
import gc
import json
import os
import subprocess
import sys
import tempfile
import time


class Stats(ctypes.Structure):
    """umadv_stats_t (include/umadv.h); size says how much of it we know."""
    _fields_ = [("size", ctypes.c_size_t)] + [(name, ctypes.c_uint64) for name in (
        "iterations", "steps", "managed_bytes", "managed_peak", "allocations",
        "fetched_bytes", "evicted_bytes", "gpu_faults", "gpu_peak_used", "fetch_ops",
        "evict_ops", "waits", "wait_ns", "drift_ops", "resident_peak")]


class Umadv:
    """The few calls of libumadv the training loop needs, through ctypes."""

    def __init__(self, path):
        self.path = path
        self.lib = ctypes.CDLL(path)
        lib = self.lib
        lib.umadv_status_string.restype = ctypes.c_char_p
        lib.umadv_status_string.argtypes = [ctypes.c_int]
        lib.umadv_torch_context.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        for name in ("umadv_iteration_begin", "umadv_profile_next_iteration", "umadv_plan"):
            getattr(lib, name).argtypes = [ctypes.c_void_p]
        lib.umadv_trace_save.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.umadv_get_stats.argtypes = [ctypes.c_void_p, ctypes.POINTER(Stats)]
        self.ctx = None

    def check(self, what, status):
        if status != 0:
            raise RuntimeError("%s: %s" % (what, lib_str(self.lib.umadv_status_string(status))))

    def context(self):
        if self.ctx is None:
            ctx = ctypes.c_void_p()
            self.check("umadv_torch_context", self.lib.umadv_torch_context(ctypes.byref(ctx)))
            self.ctx = ctx
        return self.ctx

    def call(self, name, *args):
        self.check(name, getattr(self.lib, name)(self.context(), *args))

    def stats(self):
        s = Stats()
        s.size = ctypes.sizeof(Stats)
        self.check("umadv_get_stats", self.lib.umadv_get_stats(self.context(), ctypes.byref(s)))
        return s


def lib_str(b):
    return b.decode() if b else "?"


def find_library(given):
    here = os.path.dirname(os.path.abspath(__file__))
    for path in ([given] if given else []) + [os.environ.get("UMADV_LIBRARY", ""),
                                              os.path.join(here, "..", ".libs", "libumadv.so")]:
        if path and os.path.exists(path):
            return os.path.abspath(path)
    sys.exit("torch_train.py: libumadv.so not found: pass --lib PATH (e.g. BUILD/.libs/libumadv.so)")


def gib(n):
    return "%.2f GiB" % (n / 2**30)


def build(torch, torchvision, args):
    """Model, optimizer, one synthetic batch: identical for every run."""
    torch.manual_seed(args.seed)
    ctor = {"vgg16": torchvision.models.vgg16, "resnet50": torchvision.models.resnet50}
    model = ctor[args.model](weights=None).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    gen = torch.Generator().manual_seed(args.seed + 1)
    x = torch.randn(args.batch, 3, args.image_size, args.image_size, generator=gen).cuda()
    y = torch.randint(0, 1000, (args.batch,), generator=gen).cuda()
    return model, opt, x, y


def step(torch, model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def mark(um, it, args):
    """umadv's side of iteration @it: plan once the profiled one is done;
    save the trace once the timing pass after it has given the durations."""
    profile = not args.no_profile
    if profile and it == args.profile_iter + 1:
        um.call("umadv_plan")
    if profile and it == args.profile_iter:
        um.call("umadv_profile_next_iteration")
    um.call("umadv_iteration_begin")
    if profile and it == args.profile_iter + 2 and args.trace:
        um.call("umadv_trace_save", args.trace.encode())


def memory_report(torch):
    """PyTorch's own counters; a pluggable allocator has none."""
    try:
        return "peak allocated %s, reserved %s" % (
            gib(torch.cuda.max_memory_allocated()), gib(torch.cuda.max_memory_reserved()))
    except RuntimeError:
        return "peak allocated and reserved: not known (pluggable allocator)"


def reserved(torch):
    try:
        return torch.cuda.memory_reserved()
    except RuntimeError:
        return None


def train(torch, torchvision, args, um):
    """Run the iterations; returns (ms per iteration, losses, report lines)."""
    try:
        torch.cuda.reset_peak_memory_stats()
    except RuntimeError:
        pass  # pluggable allocator
    model, opt, x, y = build(torch, torchvision, args)
    times, losses = [], []
    for it in range(args.iters):
        t0 = time.perf_counter()
        if um is not None:
            mark(um, it, args)
        loss = step(torch, model, opt, x, y)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
        losses.append(loss.item())
        print("  %-6s iter %2d  %8.1f ms  loss %.7f  %s" % (
            "umadv" if um else "native", it, times[-1], losses[-1], losses[-1].hex()),
            flush=True)
    report = [memory_report(torch)]
    if um is not None:
        s = um.stats()
        res = reserved(torch)
        if res is None:  # every tensor is a umadv block: nothing can be outside
            outside = "PyTorch memory outside umadv 0 bytes (one umadv block per tensor)"
        else:
            outside = "PyTorch memory outside umadv %d bytes" % (res - s.managed_bytes)
        report.append("umadv: managed now %s (peak %s) in %d blocks; %s; gpu peak used %s; "
                      "faults %d; fetched %s, evicted %s; steps %d"
                      % (gib(s.managed_bytes), gib(s.managed_peak), s.allocations, outside,
                         gib(s.gpu_peak_used), s.gpu_faults, gib(s.fetched_bytes),
                         gib(s.evicted_bytes), s.steps))
    del model, opt, x, y
    return times, losses, report


def steady_from(args):
    """The first iteration of the steady state: after the warm-up ones, or
    the profiled one, the timing pass, and the first on the plan made from
    it."""
    return 2 if args.no_profile else args.profile_iter + 3


def steady(times, args):
    tail = times[steady_from(args):] or times[-1:]
    return sum(tail) / len(tail)


def pluggable(torch, args):
    return torch.cuda.memory.CUDAPluggableAllocator(
        args.lib, "umadv_torch_malloc", "umadv_torch_free")


def use_umadv_allocator(torch, args):
    """--alloc tensor: umadv is the process's CUDA allocator (before any
    CUDA allocation: PyTorch refuses to swap an initialized allocator)."""
    args.lib = find_library(args.lib)
    # Arenas that hold a whole iteration: an arena emptied by backward and
    # returned would be mapped again, and populated again, every iteration.
    os.environ.setdefault("UMADV_ARENA_SIZE", "16G")
    torch.cuda.memory.change_current_allocator(pluggable(torch, args))


def run_umadv(torch, torchvision, args):
    um = Umadv(args.lib)
    if args.alloc == "tensor":
        return train(torch, torchvision, args, um), None
    pool = torch.cuda.MemPool(pluggable(torch, args).allocator())
    # The pool routes allocations of this thread only: backward must run
    # here, not on autograd's device threads, or gradients escape umadv.
    with torch.autograd.set_multithreading_enabled(False), torch.cuda.use_mem_pool(pool):
        result = train(torch, torchvision, args, um)
    return result, pool


def run_native_child(args):
    """The native run of --both --alloc tensor, in a process of its own."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        argv = [sys.executable, os.path.abspath(__file__), "--native", "--result-json",
                out.name] + [a for a in sys.argv[1:] if a != "--both"]
        if subprocess.run(argv).returncode != 0:
            sys.exit("torch_train.py: the native run failed")
        with open(out.name) as f:
            r = json.load(f)
    return r["times"], [float.fromhex(h) for h in r["losses"]], r["report"]


def compare(native, umadv, args):
    (nt, nl, _), (ut, ul, _) = native, umadv
    print("\n  iter  native ms   umadv ms   native loss        umadv loss")
    for i in range(len(nt)):
        print("  %4d  %9.1f  %9.1f   %-17s  %-17s%s" % (
            i, nt[i], ut[i], nl[i].hex(), ul[i].hex(), "" if nl[i] == ul[i] else "  DIFFER"))
    same = all(a.hex() == b.hex() for a, b in zip(nl, ul))
    print("\nsteady state (iterations >= %d): native %.1f ms/iter, umadv %.1f ms/iter (%.3fx)"
          % (steady_from(args), steady(nt, args), steady(ut, args),
             steady(ut, args) / steady(nt, args)))
    print("losses bitwise identical: %s" % ("yes" if same else "NO"))
    return same


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", choices=("vgg16", "resnet50"), default="vgg16")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--iters", type=int, default=8)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--profile-iter", type=int, default=1,
                   help="iteration profiled; planned and replayed from the next")
    p.add_argument("--no-profile", action="store_true",
                   help="mark iterations only: no profile, no plan (to measure overheads)")
    p.add_argument("--alloc", choices=("tensor", "pool"), default="tensor",
                   help="tensor: every tensor a umadv block (default); pool: a MemPool "
                   "whose segments are umadv blocks")
    p.add_argument("--result-json", help=argparse.SUPPRESS)
    p.add_argument("--trace", help="write the profiled iteration here (umadv-trace(5))")
    p.add_argument("--lib", help="libumadv.so (default: $UMADV_LIBRARY)")
    p.add_argument("--policy", default="oracle", help="UMADV_POLICY unless already set")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--umadv", dest="mode", action="store_const", const="umadv")
    mode.add_argument("--native", dest="mode", action="store_const", const="native")
    mode.add_argument("--both", dest="mode", action="store_const", const="both")
    p.set_defaults(mode="both")
    args = p.parse_args()
    if not args.no_profile and args.iters < args.profile_iter + 3:
        p.error("--iters must exceed --profile-iter + 2 (the profile, the timing pass, "
                "then the plan)")
    return args


def main():
    args = parse_args()
    import torch
    import torchvision

    if not torch.cuda.is_available():
        sys.exit("torch_train.py: no CUDA device")
    if args.mode in ("umadv", "both") and args.alloc == "tensor":
        use_umadv_allocator(torch, args)  # before CUDA is initialized
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    free, total = torch.cuda.mem_get_info()
    # Never more managed memory than the card has free (shared GPUs).
    os.environ.setdefault("UMADV_MAX_MANAGED", str(int(free * 0.8)))
    os.environ.setdefault("UMADV_POLICY", args.policy)
    print("%s, %s, torch %s, %s batch %d, %d iterations, free %s of %s, UMADV_POLICY=%s" % (
        torch.cuda.get_device_name(), "cudnn %s" % torch.backends.cudnn.version(),
        torch.__version__, args.model, args.batch, args.iters, gib(free), gib(total),
        os.environ["UMADV_POLICY"]), flush=True)
    native = umadv = None
    if args.mode == "both" and args.alloc == "tensor":
        native = run_native_child(args)
        print("native: %s" % "; ".join(native[2]), flush=True)
    elif args.mode in ("native", "both"):
        native = train(torch, torchvision, args, None)
        print("native: %s" % "; ".join(native[2]), flush=True)
        gc.collect()
        torch.cuda.empty_cache()
    if args.result_json:
        with open(args.result_json, "w") as f:
            json.dump({"times": native[0], "losses": [x.hex() for x in native[1]],
                       "report": native[2]}, f)
    if args.mode in ("umadv", "both"):
        args.lib = find_library(args.lib)
        umadv, pool = run_umadv(torch, torchvision, args)
        print("umadv: %s" % "; ".join(umadv[2]), flush=True)
    for name, result in (("native", native), ("umadv", umadv)):
        if result is not None:
            print("%s: %.1f ms/iter in steady state" % (name, steady(result[0], args)))
    ok = compare(native, umadv, args) if native and umadv else True
    sys.stdout.flush()
    # The umadv context lives to the end of the process, its migration
    # threads and CUPTI subscription too: leave without running PyTorch's
    # teardown against them.
    os._exit(0 if ok else 1)


if __name__ == "__main__":
    main()
