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
  * until the program makes an optimizer, gives the injection library its
    module calls (a global forward pre-hook) as its launch sequence, so
    that a loop without an optimizer has its iterations found too
    (UMADV_ITERATION_SOURCE says which of the two may mark them);
  * keeps every DistributedDataParallel's gradient buckets out of
    staging while NCCL reads them (umadv_ddp.py);
  * answers torch.cuda's memory queries that the pluggable allocator
    cannot (they raise) from umadv's counters, and keeps empty_cache,
    reset_peak_memory_stats and cudnn.benchmark = True from raising;
  * in profile mode (umadv profile), names the user's line that called
    each module as the call site of the allocations it makes; with
    umadv profile --seconds, allocates through the injection library,
    whose window begins at the first allocation and may end at any.

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

    FIELDS = ("iterations", "steps", "managed_bytes", "managed_peak", "allocations",
              "fetched_bytes", "evicted_bytes", "gpu_faults", "gpu_peak_used", "fetch_ops",
              "evict_ops", "waits", "wait_ns", "drift_ops", "resident_peak", "staged_bytes",
              "restored_bytes", "plans", "managed_held", "managed_held_peak")

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
        self.lib.umadv_release_cached.argtypes = [ctypes.c_void_p, ctypes.c_void_p]

    def context(self):
        ctx = self.ctypes.c_void_p()
        if self.lib.umadv_torch_context(self.ctypes.byref(ctx)) != 0:
            return None
        return ctx

    def stats(self):
        ctx = self.context()
        return None if ctx is None else _Stats.read(self.ctypes, self.lib, ctx)

    def release_cached(self):
        """torch.cuda.empty_cache: the pool's empty arenas back to CUDA."""
        ctx = self.context()
        if ctx is not None:
            self.lib.umadv_release_cached(ctx, None)


def _nested_stats(um):
    """torch.cuda.memory_stats_as_nested_dict's answer from umadv's pool:
    allocated and active bytes are umadv's live blocks, reserved bytes
    the managed memory its pool holds, the peaks theirs; what umadv does
    not count is left out."""
    s = um.stats()
    current = 0 if s is None else s.managed_bytes
    peak = 0 if s is None else s.managed_peak
    held = 0 if s is None else s.managed_held
    held_peak = 0 if s is None else s.managed_held_peak
    count = 0 if s is None else s.allocations

    def per_pool(value, top):
        return {"all": {"current": value, "peak": top}}
    return {
        "allocated_bytes": per_pool(current, peak),
        "reserved_bytes": per_pool(held, held_peak),
        "active_bytes": per_pool(current, peak),
        "allocation": per_pool(count, count),
        "num_alloc_retries": 0,
        "num_ooms": 0,
    }


def _wrap(module, name, fallback):
    """module.name(...) as it was, or fallback(...) where it raises
    RuntimeError (the pluggable allocator's "does not yet support")."""
    original = getattr(module, name, None)
    if original is None:
        return None

    def call(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        except RuntimeError:
            return fallback(*args, **kwargs)
    call.__name__ = name
    call.__doc__ = original.__doc__
    return call


def _memory_fallbacks(um):
    """What torch.cuda's memory calls answer where the pluggable allocator
    raises: allocated = umadv's live blocks, reserved = the managed
    memory its pool holds, the maxima their peaks; memory_stats (and
    memory_summary) read memory_stats_as_nested_dict; empty_cache returns
    the pool's empty arenas (umadv_release_cached); the peaks are umadv's,
    kept for the process, so a reset only says so."""
    said = []

    def stat(field):
        s = um.stats()
        return 0 if s is None else getattr(s, field)

    def peaks_kept(device=None):
        if not said:
            said.append(True)
            _warn("torch.cuda.reset_peak_memory_stats: the peaks are umadv's, kept for "
                  "the whole process")
    return {
        "memory_allocated": lambda device=None: stat("managed_bytes"),
        "memory_reserved": lambda device=None: stat("managed_held"),
        "max_memory_allocated": lambda device=None: stat("managed_peak"),
        "max_memory_reserved": lambda device=None: stat("managed_held_peak"),
        "memory_stats_as_nested_dict": lambda device=None: _nested_stats(um),
        "empty_cache": um.release_cached,
        "reset_peak_memory_stats": peaks_kept,
        "reset_max_memory_allocated": peaks_kept,
    }


def _memory_queries(torch, um):
    """torch.cuda's memory calls that raise under a pluggable allocator,
    answered from umadv's pool (_memory_fallbacks)."""
    for name, fallback in _memory_fallbacks(um).items():
        call = _wrap(torch.cuda.memory, name, fallback)
        if call is not None:
            setattr(torch.cuda.memory, name, call)
            setattr(torch.cuda, name, call)


def _cudnn_benchmark(torch):
    """torch.backends.cudnn.benchmark = True under the pluggable allocator:
    cuDNN's autotuning asks the allocator for the largest block it may use
    as workspace (CUDACachingAllocator::cacheInfo), which a pluggable
    allocator cannot answer: the first convolution would raise. The
    program's setting is kept and read back; ATen's stays off, so cuDNN
    picks its algorithms by its heuristics, as with benchmark off."""
    cudnn = importlib.import_module("torch.backends.cudnn")
    real_get, real_set = torch._C._get_cudnn_benchmark, torch._C._set_cudnn_benchmark
    wanted = [bool(real_get())]

    def get_benchmark():
        return wanted[0]

    def set_benchmark(value):
        if value and not wanted[0]:
            _warn("cudnn.benchmark: PyTorch cannot size cuDNN's autotuning workspace under "
                  "umadv's allocator (a pluggable allocator has no cacheInfo); cuDNN picks "
                  "its algorithms by its heuristics, as with benchmark off")
        wanted[0] = bool(value)
        real_set(False)
    torch._C._get_cudnn_benchmark = get_benchmark
    torch._C._set_cudnn_benchmark = set_benchmark
    prop = type(cudnn).__dict__.get("benchmark")
    if prop is not None and hasattr(prop, "getter") and hasattr(prop, "setter"):
        prop.getter, prop.setter = get_benchmark, set_benchmark
    else:
        _warn("cannot keep cudnn.benchmark off under umadv's allocator: leave it off")
    real_set(False)


def _profile_mode():
    """umadv profile runs the program (UMADV_PROFILE_OUTPUT)."""
    return bool(os.environ.get("UMADV_PROFILE_OUTPUT"))


def _allocator_names(um, inject_path):
    """The library and the functions of PyTorch's allocator: libumadv's,
    or under umadv profile --seconds the injection library's over them,
    which see every allocation (the window begins at the first and ends
    at one made after its time)."""
    if _profile_mode() and os.environ.get("UMADV_PROFILE_SECONDS"):
        return (inject_path, "umadv_inject_torch_malloc", "umadv_inject_torch_free")
    return (um.lib_path, "umadv_torch_malloc", "umadv_torch_free")


class _AllocSites(object):
    """Profile mode: the call site of the allocations a module call makes
    is the user's line that called the module (the first frame outside
    torch, installed packages and this hook), declared to libumadv
    (umadv_set_alloc_site: the thread's own) by a global forward
    pre-hook and given back to the enclosing call's when the module
    returns, so that a report names train.py:42 rather than a frame of
    PyTorch's allocator. Only in profile mode: a frame walk per call."""

    LONGEST = 255  # umadv_set_alloc_site's bound, in bytes

    def __init__(self, torch, um):
        import ctypes
        import threading
        self.set_site = um.lib.umadv_set_alloc_site
        self.set_site.argtypes = [ctypes.c_char_p]
        self.set_site.restype = ctypes.c_int
        self.torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
        self.cwd = os.getcwd() + os.sep
        self.local = threading.local()
        self.library = {}  # co_filename: whether its frames are never a site
        modules = torch.nn.modules.module
        self.handles = [modules.register_module_forward_pre_hook(self.enter)]
        try:  # also when the module raises (PyTorch 2.1 and later)
            self.handles.append(modules.register_module_forward_hook(self.leave,
                                                                     always_call=True))
        except TypeError:
            self.handles.append(modules.register_module_forward_hook(self.leave))

    def is_library(self, filename):
        known = self.library.get(filename)
        if known is None:
            path = filename if filename.startswith("<") else os.path.abspath(filename)
            parts = path.split(os.sep)
            known = (path.startswith(self.torch_dir) or path.startswith(_HERE + os.sep) or
                     "site-packages" in parts or "dist-packages" in parts or
                     filename.startswith("<frozen"))
            self.library[filename] = known
        return known

    def caller_site(self):
        """b"FILE:LINE" of the user's frame below this hook; None if none."""
        frame = sys._getframe(1)
        while frame is not None and self.is_library(frame.f_code.co_filename):
            frame = frame.f_back
        if frame is None:
            return None
        name = frame.f_code.co_filename
        if name.startswith(self.cwd):
            name = name[len(self.cwd):]
        site = ("%s:%d" % (name, frame.f_lineno)).encode("utf-8", "replace")
        if len(site) > self.LONGEST:
            site = b"..." + site[len(site) - self.LONGEST + 3:]
        return site

    def calls(self):
        """This thread's module calls under way: (id(module), site)."""
        stack = getattr(self.local, "stack", None)
        if stack is None:
            stack = self.local.stack = []
            self.local.site = None
        return stack

    def declare(self, site):
        if site != self.local.site:
            self.set_site(site)
            self.local.site = site

    def enter(self, module, args):
        stack = self.calls()
        site = self.caller_site()
        stack.append((id(module), site))
        self.declare(site)
        return None

    def leave(self, module, args, output):
        stack = self.calls()
        key = id(module)
        while stack and stack.pop()[0] != key:
            pass  # calls that raised past their forward hook
        self.declare(stack[-1][1] if stack else None)
        return None


def _alloc_sites(torch, um):
    """_AllocSites in profile mode; None otherwise, or when it cannot be."""
    if not _profile_mode():
        return None
    try:
        return _AllocSites(torch, um)
    except (AttributeError, OSError) as e:
        _warn("cannot follow the module calls for the allocations' call sites (%s): the "
              "profile names PyTorch's frames" % (e,))
        return None


def _sources():
    """UMADV_ITERATION_SOURCE's word (umadv run has checked it)."""
    return os.environ.get("UMADV_ITERATION_SOURCE", "auto").strip().lower() or "auto"


class _ModuleLaunches(object):
    """A PyTorch program's launch sequence, as the injection library's
    period detector reads it: one id per module call (the module, its
    training mode, grad mode and its first input's shape), from a global
    forward pre-hook. Once the library says launches mark no more (an
    optimizer stepped), or the program makes an optimizer, the hook does
    nothing, and goes at the next step."""

    def __init__(self, torch, um):
        import ctypes
        self.torch = torch
        self.launch = um.inject.umadv_inject_launch
        self.launch.argtypes = [ctypes.c_uint64]
        self.launch.restype = ctypes.c_int
        self.stopped = False
        self.handle = torch.nn.modules.module.register_module_forward_pre_hook(self.pre_hook)

    def pre_hook(self, module, args):
        if self.stopped:
            return None
        first = args[0] if args and isinstance(args[0], self.torch.Tensor) else None
        key = hash((id(module), module.training, self.torch.is_grad_enabled(),
                    tuple(first.shape) if first is not None else None))
        if not self.launch(key & 0xFFFFFFFFFFFFFFFF):
            self.stopped = True  # removed outside the module call
        return None

    def stop(self):
        self.stopped = True

    def remove_if_stopped(self):
        if self.stopped and self.handle is not None:
            self.handle.remove()
            self.handle = None


def _stop_at_optimizer(launches):
    """auto: a program that makes an optimizer will step it, and its steps
    are its iterations: its module calls need not be followed (their
    inner loops, a ResNet's blocks, would be taken for iterations until
    the first step)."""
    try:
        cls = importlib.import_module("torch.optim.optimizer").Optimizer
    except (ImportError, AttributeError):
        return
    made = cls.__init__

    def init(self, *args, **kwargs):
        made(self, *args, **kwargs)
        launches.stop()
    init.__doc__ = made.__doc__
    cls.__init__ = init


def _iteration_hooks(torch, um):
    """The optimizer step hook and the module-call sequence, as
    UMADV_ITERATION_SOURCE admits them."""
    source = _sources()
    launches = None
    if source in ("auto", "launches"):
        try:
            launches = _ModuleLaunches(torch, um)
        except (AttributeError, OSError) as e:
            _warn("cannot follow the module calls (%s): iterations come from the optimizer "
                  "and NVTX ranges only" % (e,))
    if source not in ("auto", "optimizer"):
        return (launches, None)
    if launches is not None:
        _stop_at_optimizer(launches)

    def stepped(optimizer, args, kwargs):
        um.inject.umadv_inject_iteration()
        if launches is not None:
            launches.remove_if_stopped()
    # torch.optim's submodule by its full name: `import torch` binds no
    # `torch.optim.optimizer` attribute in every release (2.11 does not)
    try:
        optimizer = importlib.import_module("torch.optim.optimizer")
        hook = optimizer.register_optimizer_step_post_hook(stepped)
    except (ImportError, AttributeError) as e:
        _warn("cannot hook the optimizer's step (%s): iterations come from NVTX ranges and "
              "the module calls only" % (e,))
        hook = None
    return (launches, hook)


def _ddp_buckets(torch, um):
    """Every DistributedDataParallel's gradient buckets kept out of
    staging while NCCL reads them (umadv_ddp.py)."""
    try:
        import umadv_ddp  # beside this file, on PYTHONPATH
        umadv_ddp.guard_every_ddp(torch, um, _warn)
    except Exception as e:
        _warn("cannot guard DDP's gradient buckets (%r): a DDP program must run with "
              "UMADV_STAGE=0" % (e,))


def _install(torch):
    """umadv under torch, right after `import torch`."""
    inject_path = os.environ.get("UMADV_INJECT_LIBRARY", "")
    if not inject_path or not torch.cuda.is_available():
        return
    try:
        um = _Umadv(inject_path)
        allocator = torch.cuda.memory.CUDAPluggableAllocator(*_allocator_names(um, inject_path))
        torch.cuda.memory.change_current_allocator(allocator)
    except Exception as e:  # the program still runs, on PyTorch's allocator
        _warn("cannot put umadv's allocator under PyTorch (%s): running without umadv" % (e,))
        return
    hooks = _iteration_hooks(torch, um)
    sites = _alloc_sites(torch, um)
    _ddp_buckets(torch, um)
    _memory_queries(torch, um)
    try:
        _cudnn_benchmark(torch)
    except (ImportError, AttributeError) as e:
        _warn("cannot keep cudnn.benchmark off under umadv's allocator (%s): leave it off"
              % (e,))

    import atexit

    def summary():
        if torch.cuda.is_initialized():  # then the allocator made the context
            um.inject.umadv_inject_exit()
    atexit.register(summary)
    sys.modules[__name__]._umadv = (um, allocator, hooks, sites)  # kept alive


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
