"""torch.backends.cudnn: the module replaced by an instance of a class
whose benchmark is a ContextProp over torch._C, as PyTorch's is."""
import sys
import types

import torch._C
from torch.backends import ContextProp


class CudnnModule(types.ModuleType):
    benchmark = ContextProp(torch._C._get_cudnn_benchmark, torch._C._set_cudnn_benchmark)

    def __init__(self, m, name):
        super(CudnnModule, self).__init__(name)
        self.m = m


sys.modules[__name__] = CudnnModule(sys.modules[__name__], __name__)
