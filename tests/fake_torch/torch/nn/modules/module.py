"""Modules whose calls run the global forward pre-hooks first and the
global forward hooks after (those registered with always_call also when
forward raises)."""
import collections

_global_forward_pre_hooks = collections.OrderedDict()
_global_forward_hooks = collections.OrderedDict()
_global_forward_hooks_always_called = set()
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


def register_module_forward_hook(hook, always_call=False):
    _next_id[0] += 1
    _global_forward_hooks[_next_id[0]] = hook
    if always_call:
        _global_forward_hooks_always_called.add(_next_id[0])
    return RemovableHandle(_global_forward_hooks, _next_id[0])


class Module(object):
    def __init__(self, *children):
        self.children = children
        self.training = True

    def __call__(self, *args):
        for hook in list(_global_forward_pre_hooks.values()):
            hook(self, args)
        try:
            output = self.forward(*args)
        except Exception:
            for key, hook in list(_global_forward_hooks.items()):
                if key in _global_forward_hooks_always_called:
                    hook(self, args, None)
            raise
        for hook in list(_global_forward_hooks.values()):
            hook(self, args, output)
        return output

    def forward(self, x):
        for child in self.children:
            x = child(x)
        return x

    def eval(self):
        self.training = False
        for child in self.children:
            child.eval()
