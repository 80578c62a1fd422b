"""torch.cuda: a device, not yet initialised (no summary at exit)."""
from torch.cuda import memory
from torch.cuda.memory import (empty_cache, max_memory_allocated, max_memory_reserved,  # noqa
                               memory_allocated, memory_reserved, memory_stats,
                               memory_stats_as_nested_dict, reset_max_memory_allocated,
                               reset_peak_memory_stats)


def is_available():
    return True


def is_initialized():
    return False
