"""Optimizers whose step runs the global step post hooks."""
import collections

_post_hooks = collections.OrderedDict()


def register_optimizer_step_post_hook(hook):
    from torch.nn.modules.module import RemovableHandle
    key = len(_post_hooks) + 1
    _post_hooks[key] = hook
    return RemovableHandle(_post_hooks, key)


class Optimizer(object):
    def step(self):
        for hook in list(_post_hooks.values()):
            hook(self, (), {})
