"""A stand-in for PyTorch, for tests/test_run_hook.sh: just what umadv
run's start-up hook (src/inject/python/sitecustomize.py) reaches for,
behaving as PyTorch 2.11 does under a CUDAPluggableAllocator: a CUDA
device, the allocator calls, memory queries that raise, module calls
through global forward pre-hooks, optimizer step hooks, and the cuDNN
benchmark flag behind a ContextProp. The first convolution under
benchmark mode raises, as the real one does (no cacheInfo)."""
import sys

from torch import _C, cuda, distributed, nn, optim  # noqa: F401
from torch import backends  # noqa: F401
import torch.backends.cudnn  # noqa: F401

_grad = [True]


def is_grad_enabled():
    return _grad[0]


class Tensor(object):
    def __init__(self, *shape):
        self.shape = tuple(shape)


def conv(x):
    """A convolution: cuDNN's autotuning asks the allocator's cacheInfo."""
    if _C._benchmark[0] and cuda.memory._pluggable[0]:
        raise RuntimeError("CUDAPluggableAllocator does not yet support cacheInfo. "
                           "If you need it, please file an issue describing your use case.")
    return x


sys.modules[__name__].conv = conv
