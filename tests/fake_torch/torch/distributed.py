"""torch.distributed: a world of 2 whose all_reduce completes at once
(its future's value: the tensor, as NCCL's work gives it)."""


class _Future(object):
    def __init__(self, value):
        self._value = value

    def value(self):
        return self._value

    def then(self, callback):
        return _Future(callback(self))


class _Work(object):
    def __init__(self, tensor):
        self.tensor = tensor

    def get_future(self):
        return _Future([self.tensor])


def get_world_size():
    return 2


def all_reduce(tensor, async_op=False):
    return _Work(tensor) if async_op else None
