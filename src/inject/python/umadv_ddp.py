"""DDP's gradient buckets kept out of umadv's staging, and on the GPU while
their collectives read them (umadv(7), DISTRIBUTED TRAINING).

NCCL's kernels read each bucket on NCCL's own stream while backward goes
on. umadv's plan does not see those reads (the launch parameters name
NCCL's work descriptor, not the bucket), and a staged block holds no
valid data until it is restored: a bucket staged under its collective
would be reduced as garbage. So every bucket is marked not stageable
(umadv_set_stageable(3) with 0) before its collective starts, and held
(umadv_hold_resident(3)) on a stream that waits for the collective: the
collective's future is a CUDA future, whose then-callbacks run on a
stream made to wait for the work behind it, so the hold is recorded
there, as soon as the collective is queued. An eviction umadv issues
after that waits for the collective's end; one it issued before the
collective was queued (the plan evicting a bucket DDP had not yet
filled) migrates, which UVM keeps coherent with any reader.

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
        self.marked, self.missed, self.held = set(), 0, 0
        um.lib.umadv_set_stageable.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
        um.lib.umadv_hold_resident.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        guards.append(self)

    def mark(self, bucket):
        """Every call: a freed bucket's address may be a new, stageable
        block. Returns the bucket's address if it is a umadv block, else
        None."""
        ptr = bucket.buffer().data_ptr()
        ctx = self.um.context()
        if ctx is not None and self.um.lib.umadv_set_stageable(ctx, ptr, 0) == 0:
            self.marked.add(ptr)
            return ptr
        self.missed += 1  # not a umadv block start: reported by the caller
        return None

    def hold(self, ptr, value):
        """In a then-callback of the collective's future: the bucket at
        @ptr (None: not a umadv block) held on the current stream, which
        waits for the collective; @value passed on."""
        ctx = self.um.context()
        if ptr is not None and ctx is not None:
            stream = self.torch.cuda.current_stream().cuda_stream
            if self.um.lib.umadv_hold_resident(ctx, ptr, stream) == 0:
                self.held += 1
        return value

    def allreduce(self, state, bucket):
        """DDP's default allreduce as a hook, in DDP's own arithmetic
        (multiply by 1/world size, then sum: the same bits as native
        DDP), after the mark, held until it ends. A bound method: DDP
        reads its __name__ and __qualname__."""
        ptr = self.mark(bucket)
        buf = bucket.buffer()
        dist = self.torch.distributed
        buf.mul_(1.0 / dist.get_world_size())
        fut = dist.all_reduce(buf, async_op=True).get_future()
        return fut.then(lambda f: self.hold(ptr, f.value()[0]))

    def wrap(self, hook):
        """The program's hook, the mark first and the hold after; its
        names and signature kept (DDP checks both)."""
        @functools.wraps(hook)
        def guarded(state, bucket):
            ptr = self.mark(bucket)
            return hook(state, bucket).then(lambda f: self.hold(ptr, f.value()))
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
