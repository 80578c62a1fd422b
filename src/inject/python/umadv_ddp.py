"""DDP's gradient buckets kept out of umadv's staging (umadv(7),
DISTRIBUTED TRAINING).

NCCL's kernels read each bucket on NCCL's own stream while backward goes
on. umadv's plan does not see those reads (the launch parameters name
NCCL's work descriptor, not the bucket), and a staged block holds no
valid data until it is restored: a bucket staged under its collective
would be reduced as garbage. So every bucket is marked not stageable
(umadv_set_stageable(3) with 0) before its collective starts: evicting
it then migrates, and UVM keeps a migration coherent with any reader.

Two routes use this module:
  * examples/ddp_train.py --lib registers BucketGuard.allreduce as its
    DDP communication hook;
  * under `umadv run`, the start-up hook (sitecustomize.py) calls
    guard_every_ddp: every DistributedDataParallel of the program gets
    the guard, around the program's own hook if it registers one, else
    as DDP's default allreduce at its first forward.

`guards` lists every BucketGuard made in this process, for reports.
"""
import functools

guards = []


class BucketGuard(object):
    """Marks buckets not stageable; @um has .lib (libumadv through
    ctypes) and .context() (the process's context, or None)."""

    def __init__(self, torch, um):
        import ctypes
        self.torch, self.um = torch, um
        self.marked, self.missed = set(), 0
        um.lib.umadv_set_stageable.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
        guards.append(self)

    def mark(self, bucket):
        """Every call: a freed bucket's address may be a new, stageable block."""
        ptr = bucket.buffer().data_ptr()
        ctx = self.um.context()
        if ctx is not None and self.um.lib.umadv_set_stageable(ctx, ptr, 0) == 0:
            self.marked.add(ptr)
        else:
            self.missed += 1  # not a umadv block start: reported by the caller

    def allreduce(self, state, bucket):
        """DDP's default allreduce as a hook, in DDP's own arithmetic
        (multiply by 1/world size, then sum: the same bits as native
        DDP), after the mark. A bound method: DDP reads its __name__
        and __qualname__."""
        self.mark(bucket)
        buf = bucket.buffer()
        dist = self.torch.distributed
        buf.mul_(1.0 / dist.get_world_size())
        fut = dist.all_reduce(buf, async_op=True).get_future()
        return fut.then(lambda f: f.value()[0])

    def wrap(self, hook):
        """The program's hook, the mark first; its names and signature
        kept (DDP checks both)."""
        @functools.wraps(hook)
        def guarded(state, bucket):
            self.mark(bucket)
            return hook(state, bucket)
        return guarded


def guard_every_ddp(torch, um, warn):
    """Patch DistributedDataParallel so that each instance's buckets are
    guarded; False (and nothing patched) when torch has no DDP."""
    try:
        import importlib
        ddp = importlib.import_module("torch.nn.parallel").DistributedDataParallel
    except (ImportError, AttributeError):
        return False
    guard = BucketGuard(torch, um)
    register, builtin, forward = (ddp.register_comm_hook, ddp._register_builtin_comm_hook,
                                  ddp.forward)

    @functools.wraps(register)
    def register_guarded(self, state, hook):
        self._umadv_hooked = True
        return register(self, state, guard.wrap(hook))

    @functools.wraps(builtin)
    def register_builtin(self, comm_hook_type):
        self._umadv_hooked = True
        warn("DDP's built-in communication hook %s runs in C++, where umadv cannot mark the "
             "buckets not stageable: a bucket staged under its collective would be reduced "
             "as garbage; set UMADV_STAGE=0 or use a Python hook" % (comm_hook_type,))
        return builtin(self, comm_hook_type)

    @functools.wraps(forward)
    def forward_guarded(self, *args, **kwargs):
        if not getattr(self, "_umadv_hooked", False):
            self._umadv_hooked = True
            register(self, None, guard.allreduce)
        return forward(self, *args, **kwargs)

    ddp.register_comm_hook = register_guarded
    ddp._register_builtin_comm_hook = register_builtin
    ddp.forward = forward_guarded
    return True
