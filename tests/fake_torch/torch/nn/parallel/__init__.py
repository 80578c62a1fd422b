"""torch.nn.parallel: DistributedDataParallel as far as umadv's bucket
guard (src/inject/python/umadv_ddp.py) meets it, behaving as PyTorch
2.11's does: one communication hook per instance, Python or built-in
(a second raises); the hook's signature checked for a bucket parameter;
its qualified name read. Its forward runs the module, then "backward":
the hook called once per bucket, as the reducer calls it."""
import inspect

from torch import distributed
from torch.nn.modules.module import Module


class _Buffer(object):
    def __init__(self, ptr):
        self.ptr, self.scale = ptr, 1.0

    def data_ptr(self):
        return self.ptr

    def mul_(self, factor):
        self.scale *= factor
        return self


class GradBucket(object):
    def __init__(self, ptr):
        self._buffer = _Buffer(ptr)

    def buffer(self):
        return self._buffer


class DistributedDataParallel(Module):
    BUCKETS = (0x7f0000200000, 0x7f0000400000)

    def __init__(self, module, device_ids=None):
        Module.__init__(self, module)
        self.hook_state, self.hook, self.builtin, self.hook_name = None, None, None, None
        self.reduced = []

    def _once(self):
        if self.hook is not None or self.builtin is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only "
                               "be called once.")

    def register_comm_hook(self, state, hook):
        self._once()
        inspect.signature(hook).parameters["bucket"]  # KeyError without one, as DDP's
        self.hook_state, self.hook, self.hook_name = state, hook, hook.__qualname__

    def _register_builtin_comm_hook(self, comm_hook_type):
        self._once()
        self.builtin = comm_hook_type

    def forward(self, x):
        out = Module.forward(self, x)
        if self.hook is not None:
            for ptr in self.BUCKETS:
                self.reduced.append(self.hook(self.hook_state, GradBucket(ptr)))
        return out


distributed.GradBucket = GradBucket
