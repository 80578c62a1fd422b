"""torch.cuda.memory under a pluggable allocator: the queries that read
the allocator's device stats raise, as PyTorch's do."""
import collections

_pluggable = [False]
_swapped = []


class CUDAPluggableAllocator(object):
    def __init__(self, path, alloc_fn_name, free_fn_name):
        self.names = (path, alloc_fn_name, free_fn_name)


def change_current_allocator(allocator):
    _swapped.append(allocator)
    _pluggable[0] = True


def _no_stats():
    raise RuntimeError("CUDAPluggableAllocator does not yet support getDeviceStats. "
                       "If you need it, please file an issue describing your use case.")


def memory_stats_as_nested_dict(device=None):
    if _pluggable[0]:
        _no_stats()
    return {}


def memory_stats(device=None):
    """Flattened, as PyTorch's: it reads memory_stats_as_nested_dict."""
    out = []

    def flatten(prefix, obj):
        if isinstance(obj, dict):
            for k, v in obj.items():
                flatten(prefix + "." + k if prefix else k, v)
        else:
            out.append((prefix, obj))
    flatten("", memory_stats_as_nested_dict(device=device))
    return collections.OrderedDict(sorted(out))


def memory_allocated(device=None):
    return memory_stats(device=device).get("allocated_bytes.all.current", 0)


def memory_reserved(device=None):
    return memory_stats(device=device).get("reserved_bytes.all.current", 0)


def max_memory_allocated(device=None):
    return memory_stats(device=device).get("allocated_bytes.all.peak", 0)


def max_memory_reserved(device=None):
    return memory_stats(device=device).get("reserved_bytes.all.peak", 0)


def empty_cache():
    return None  # the pluggable allocator's emptyCache: no reset_fn, nothing


def reset_peak_memory_stats(device=None):
    if _pluggable[0]:
        raise RuntimeError("CUDAPluggableAllocator does not yet support resetPeakStats.")


def reset_max_memory_allocated(device=None):
    reset_peak_memory_stats(device)
