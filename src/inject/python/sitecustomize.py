"""umadv run's start-up hook for Python (umadv-run(1), PYTHON).

`umadv run` puts this folder first on PYTHONPATH, so Python imports this
module at start-up. It runs the user's own sitecustomize (the next one on
the path), then waits for `import torch`: once torch is imported, before
the program can allocate CUDA memory, it

  * makes umadv's allocator PyTorch's (CUDAPluggableAllocator over
    libumadv's umadv_torch_malloc/umadv_torch_free): every tensor is a
    umadv block;
  * marks an iteration at every optimizer step (a global step post hook):
    the injection library profiles one, plans, and replays the plan;
  * answers torch.cuda's memory queries that the pluggable allocator
    cannot (they raise) from umadv's counters.

It does nothing when UMADV_INJECT_LIBRARY is empty or torch has no CUDA
device; a program that sets its own allocator before its first CUDA
allocation keeps it.
"""
import importlib
import importlib.abc
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _warn(message):
    """As libumadv logs (umadv(7), LOGGING): a rank of a distributed job
    (RANK, else LOCAL_RANK) says which it is."""
    rank = os.environ.get("RANK") or os.environ.get("LOCAL_RANK") or ""
    tag = "[rank %s]" % rank if rank.isdigit() else ""
    sys.stderr.write("umadv%s: %s\n" % (tag, message))


def _chain_user_sitecustomize():
    """Import the sitecustomize this one hides, if there is one."""
    mine = sys.modules.get("sitecustomize")
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    try:
        del sys.modules["sitecustomize"]
        importlib.import_module("sitecustomize")
    except ImportError:
        pass
    except Exception as e:  # the user's, which Python would have reported
        _warn("your sitecustomize failed: %r" % (e,))
    finally:
        sys.path[:] = saved
        if mine is not None:
            sys.modules["sitecustomize"] = mine


class _Stats(object):
    """umadv_stats_t (umadv.h), up to the fields read here."""

    FIELDS = ("iterations", "steps", "managed_bytes", "managed_peak", "allocations")

    @staticmethod
    def read(ctypes, lib, ctx):
        class Stats(ctypes.Structure):
            _fields_ = [("size", ctypes.c_size_t)] + [
                (name, ctypes.c_uint64) for name in _Stats.FIELDS]
        s = Stats()
        s.size = ctypes.sizeof(Stats)
        if lib.umadv_get_stats(ctx, ctypes.byref(s)) != 0:
            return None
        return s


class _Umadv(object):
    """The two libraries through ctypes: the injection library (iterations,
    the summary) and libumadv (the allocator, the counters)."""

    def __init__(self, inject_path):
        import ctypes
        self.ctypes = ctypes
        self.inject = ctypes.CDLL(inject_path)
        self.inject.umadv_inject_libumadv_path.restype = ctypes.c_char_p
        self.inject.umadv_inject_iteration.restype = None
        self.inject.umadv_inject_exit.restype = None
        path = self.inject.umadv_inject_libumadv_path()
        if not path:
            raise OSError("the injection library does not know its libumadv")
        self.lib_path = path.decode()
        self.lib = ctypes.CDLL(self.lib_path)
        self.lib.umadv_torch_context.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        self.lib.umadv_get_stats.argtypes = [ctypes.c_void_p, ctypes.c_void_p]

    def stats(self):
        ctx = self.ctypes.c_void_p()
        if self.lib.umadv_torch_context(self.ctypes.byref(ctx)) != 0:
            return None
        return _Stats.read(self.ctypes, self.lib, ctx)


def _memory_queries(torch, um):
    """torch.cuda.memory_allocated & co. raise under a pluggable allocator:
    answer them from umadv's pool (allocated = reserved: umadv's blocks)."""
    def stat(field):
        s = um.stats()
        return 0 if s is None else getattr(s, field)

    answers = {
        "memory_allocated": lambda device=None: stat("managed_bytes"),
        "memory_reserved": lambda device=None: stat("managed_bytes"),
        "max_memory_allocated": lambda device=None: stat("managed_peak"),
        "max_memory_reserved": lambda device=None: stat("managed_peak"),
    }
    for name, answer in answers.items():
        original = getattr(torch.cuda, name, None)
        if original is None:
            continue

        def query(device=None, _original=original, _answer=answer):
            try:
                return _original(device)
            except RuntimeError:
                return _answer(device)
        setattr(torch.cuda, name, query)
        setattr(torch.cuda.memory, name, query)


def _install(torch):
    """umadv under torch, right after `import torch`."""
    inject_path = os.environ.get("UMADV_INJECT_LIBRARY", "")
    if not inject_path or not torch.cuda.is_available():
        return
    try:
        um = _Umadv(inject_path)
        allocator = torch.cuda.memory.CUDAPluggableAllocator(
            um.lib_path, "umadv_torch_malloc", "umadv_torch_free")
        torch.cuda.memory.change_current_allocator(allocator)
    except Exception as e:  # the program still runs, on PyTorch's allocator
        _warn("cannot put umadv's allocator under PyTorch (%s): running without umadv" % (e,))
        return
    # torch.optim's submodule by its full name: `import torch` binds no
    # `torch.optim.optimizer` attribute in every release (2.11 does not)
    try:
        optimizer = importlib.import_module("torch.optim.optimizer")
        hook = optimizer.register_optimizer_step_post_hook(
            lambda optimizer, args, kwargs: um.inject.umadv_inject_iteration())
    except (ImportError, AttributeError) as e:
        _warn("cannot hook the optimizer's step (%s): iterations come from NVTX ranges only"
              % (e,))
        hook = None
    _memory_queries(torch, um)

    import atexit

    def summary():
        if torch.cuda.is_initialized():  # then the allocator made the context
            um.inject.umadv_inject_exit()
    atexit.register(summary)
    sys.modules[__name__]._umadv = (um, allocator, hook)  # kept alive


class _TorchFinder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps torch's loader so that _install runs
    once torch's own import is done."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_install(module):
            exec_module(module)
            _install(module)
        spec.loader.exec_module = exec_then_install
        return spec


_chain_user_sitecustomize()
if os.environ.get("UMADV_INJECT_LIBRARY") and "torch" not in sys.modules:
    sys.meta_path.insert(0, _TorchFinder())
