"""torch._C's cuDNN benchmark flag (ATen's)."""
_benchmark = [False]


def _get_cudnn_benchmark():
    return _benchmark[0]


def _set_cudnn_benchmark(value):
    _benchmark[0] = bool(value)
