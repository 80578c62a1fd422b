"""Modules whose calls run the global forward pre-hooks first."""
import collections

_global_forward_pre_hooks = collections.OrderedDict()
_next_id = [0]


class RemovableHandle(object):
    def __init__(self, hooks, key):
        self.hooks, self.key = hooks, key

    def remove(self):
        self.hooks.pop(self.key, None)


def register_module_forward_pre_hook(hook):
    _next_id[0] += 1
    _global_forward_pre_hooks[_next_id[0]] = hook
    return RemovableHandle(_global_forward_pre_hooks, _next_id[0])


class Module(object):
    def __init__(self, *children):
        self.children = children
        self.training = True

    def __call__(self, *args):
        for hook in list(_global_forward_pre_hooks.values()):
            hook(self, args)
        return self.forward(*args)

    def forward(self, x):
        for child in self.children:
            x = child(x)
        return x

    def eval(self):
        self.training = False
        for child in self.children:
            child.eval()
