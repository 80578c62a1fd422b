#!/usr/bin/env python3
"""Train torchvision VGG-16 or ResNet-50 with its tensors in umadv managed memory.

The model, its gradients, the optimizer state and the activations live in
umadv's managed memory through its PyTorch allocator entry points
(CUDAPluggableAllocator on libumadv.so: umadv_torch_malloc/umadv_torch_free):
  --alloc tensor (default): the pluggable allocator is the process's CUDA
      allocator, so every tensor is one umadv allocation and the trace has
      per-tensor accesses and lifetimes (transients, fresh populates).
      PyTorch's caching allocator is bypassed: umadv's pool caches. Must be
      set before any CUDA allocation, so --both runs native in a child.
  --alloc pool: a torch.cuda.MemPool over the pluggable allocator; the
      caching allocator sub-allocates tensors and umadv sees its segments
      only (a kernel that touches one tensor touches its whole segment).
      (PYTORCH_NO_CUDA_MEMORY_CACHING=1 does not help: uncached allocations
      bypass the MemPool and go to cudaMalloc.)

Iterations are marked through ctypes on the process's umadv context
(umadv_torch_context); iteration --profile-iter is profiled (CUPTI: every
kernel launch becomes a step) and planned under UMADV_POLICY/UMADV_BUDGET;
the iteration after it is umadv's timing pass (step durations measured
without faults, then planned again), and the trace is saved with --trace
once that is done. --native runs the same training on PyTorch's own
allocator; --both runs native and umadv and compares the losses bit for
bit. --policies LIST trains once per policy of LIST in the same process,
each from the same initial weights (restored in place, so the tensors stay
the blocks the profile saw): the first run profiles, the others switch
with umadv_set_policy(), all under UMADV_BUDGET (a switch from oracle,
whose profile may rest on guesses, to a policy that evicts profiles once
more, so that its evictions can be staged); a table compares them, and
with --both a line gives the profiling run's profiling phase: its
iterations from 1 to the steady state over as many steady ones, in ms
and in native iterations (profiling_phase, also in --json).
--budget-change N makes it a long run: every N iterations the budget
changes (umadv_set_budget through ctypes) to a fraction of the footprint
drawn from --budget-range (splitmix64 of --budget-seed and the block, as
examples/mlp_train.c draws), the same sequence for every policy; each
block's resident peak is checked against its budget, every parameter and
buffer of the final model is compared bit for bit with the first run's
(put oracle first), and the managed bytes umadv still holds once the
model is gone are reported.
Every iteration trains on one synthetic batch made on the GPU at the start;
--loader gives each iteration a batch of its own, in pinned host memory,
copied into new GPU tensors as the iteration begins, as a data loader's
batch is (copies into blocks that may lie over memory umadv discarded).
Timed iterations are ones whose GPU faults umadv does not count (counting
costs every launch host time, see UMADV_FAULT_PERIOD): the faults shown
are those of the last counted replayed iteration before them.

The peers bench/peers.py measures umadv against: --peer save_on_cpu
trains natively under torch.autograd.graph.save_on_cpu(pin_memory=True)
(PyTorch's own hooks, wrapped to count the bytes packed to the host and
back, and to end the run as out of memory, exit 3, before it pins more
than the host can spare: HostGuard); --peer checkpoint under torch.utils.checkpoint.checkpoint_sequential
(use_reentrant=False) over the model's stages where its forward is a
chain of them (torchvision ResNets and VGGs, transformer, gpt2), in
sqrt(stages) segments (--segments); any other model exits 4, "not
applicable". Native runs report PyTorch's peak allocated memory.
--cap-gib G limits a native or --peer run to G GiB
(torch.cuda.set_per_process_memory_fraction); an out-of-memory, native
or through umadv, exits 3 with the error in --json. --model gpt2: a
causal language model of GPT-2 small's shape from torch.nn (12 blocks,
width 768, 12 heads, tied embeddings; --seq-len tokens, 128 by
default), trained on random tokens to predict the next.

Synthetic data, fixed seeds, weights=None: no downloads. fp32 (PyTorch's
default math modes: cuDNN may use TF32), SGD with momentum, cuDNN
deterministic and benchmark off, attention on PyTorch's math backend
(its others' backwards are not deterministic), so that both runs compute
the same bits.

  python3 examples/torch_train.py --lib _build/.libs/libumadv.so \\
      --model vgg16 --batch 64 --iters 8 --both --trace vgg16.umt
"""
import argparse
import contextlib
import ctypes
import gc
import hashlib
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time


UMADV_ERR_BUDGET_TOO_SMALL = -5  # include/umadv.h


class Stats(ctypes.Structure):
    """umadv_stats_t (include/umadv.h); size says how much of it we know."""
    _fields_ = [("size", ctypes.c_size_t)] + [(name, ctypes.c_uint64) for name in (
        "iterations", "steps", "managed_bytes", "managed_peak", "allocations",
        "fetched_bytes", "evicted_bytes", "gpu_faults", "gpu_peak_used", "fetch_ops",
        "evict_ops", "waits", "wait_ns", "drift_ops", "resident_peak", "staged_bytes",
        "restored_bytes", "plans", "managed_held", "managed_held_peak", "released_bytes",
        "held_evictions", "hold_wait_ns", "profiles", "profile_end_ns", "plan_ns",
        "replay_start_ns", "alloc_calls", "alloc_ns", "fault_count_ns")]


class Umadv:
    """The few calls of libumadv the training loop needs, through ctypes."""

    def __init__(self, path):
        self.path = path
        self.lib = ctypes.CDLL(path)
        lib = self.lib
        lib.umadv_status_string.restype = ctypes.c_char_p
        lib.umadv_status_string.argtypes = [ctypes.c_int]
        lib.umadv_torch_context.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        for name in ("umadv_iteration_begin", "umadv_profile_next_iteration", "umadv_plan"):
            getattr(lib, name).argtypes = [ctypes.c_void_p]
        lib.umadv_set_policy.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.umadv_set_budget.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
        lib.umadv_policy_parse.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
        lib.umadv_trace_save.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.umadv_get_stats.argtypes = [ctypes.c_void_p, ctypes.POINTER(Stats)]
        self.ctx = None

    def check(self, what, status):
        if status != 0:
            raise RuntimeError("%s: %s" % (what, lib_str(self.lib.umadv_status_string(status))))

    def context(self):
        if self.ctx is None:
            ctx = ctypes.c_void_p()
            self.check("umadv_torch_context", self.lib.umadv_torch_context(ctypes.byref(ctx)))
            self.ctx = ctx
        return self.ctx

    def call(self, name, *args):
        self.check(name, getattr(self.lib, name)(self.context(), *args))

    def set_policy(self, name):
        """umadv_set_policy; False when the budget is too small for it."""
        policy = ctypes.c_int()
        self.check("umadv_policy_parse(%s)" % name,
                   self.lib.umadv_policy_parse(name.encode(), ctypes.byref(policy)))
        status = self.lib.umadv_set_policy(self.context(), policy)
        if status == UMADV_ERR_BUDGET_TOO_SMALL:
            return False
        self.check("umadv_set_policy(%s)" % name, status)
        return True

    def set_budget(self, nbytes):
        """umadv_set_budget; False when a step needs more (the old budget stays)."""
        status = self.lib.umadv_set_budget(self.context(), nbytes)
        if status == UMADV_ERR_BUDGET_TOO_SMALL:
            return False
        self.check("umadv_set_budget(%d)" % nbytes, status)
        return True

    def stats(self):
        s = Stats()
        s.size = ctypes.sizeof(Stats)
        self.check("umadv_get_stats", self.lib.umadv_get_stats(self.context(), ctypes.byref(s)))
        return s


def mix64(x):
    """splitmix64, as examples/mlp_train.c."""
    m = 2**64 - 1
    x = (x + 0x9e3779b97f4a7c15) & m
    x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & m
    x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & m
    return x ^ (x >> 31)


def block_budget(seed, k, lo, hi, footprint):
    """The budget of block @k: a fraction of @footprint in [lo, hi), whole MiB."""
    u = (mix64((seed * 1000003 + k) & (2**64 - 1)) >> 11) * 2.0**-53
    mib = int((lo + u * (hi - lo)) * footprint) >> 20
    return max(mib, 1) << 20


class Budgets:
    """The budget changes of one run (--budget-change): which block is in
    force, what was set or refused, each block's resident peak."""

    def __init__(self, args, um, run):
        self.args, self.um, self.run = args, um, run
        self.block = None
        run.update({"budgets": [], "refused": 0, "blocks": [], "blocks_over": 0})

    def footprint(self):
        """--footprint, else umadv's managed peak once an iteration ran."""
        if self.args.footprint:
            return self.args.footprint
        if self.args.base is None and self.um.stats().iterations > 0:
            self.args.base = self.um.stats().managed_peak
        return self.args.base

    def report(self):
        """The block that ends: its executor's resident peak against its budget."""
        if self.block is None:
            return
        peak = self.um.stats().resident_peak
        budget = self.args.budget_now
        state = "oracle" if self.run["policy"] == "oracle" else (
            "within" if budget and peak <= budget else "OVER")
        if state == "OVER":
            self.run["blocks_over"] += 1
        self.run["blocks"].append({"block": self.block, "budget": budget,
                                   "resident_peak": peak, "state": state})
        print("  budget_block %d budget %s resident_peak %d %s" % (
            self.block, budget, peak, state), flush=True)

    def step(self, it):
        """At the start of iteration @it (before umadv marks it)."""
        n, base = self.args.budget_change, self.footprint()
        if not n or base is None or it // n == self.block:
            return
        self.report()
        self.block = it // n
        want = block_budget(self.args.budget_seed, self.block, self.args.budget_lo,
                            self.args.budget_hi, base)
        if want == self.args.budget_now:
            return
        if not self.um.set_budget(want):
            self.run["refused"] += 1
            print("  budget_refused %d %d (stays %s)" % (self.block, want, self.args.budget_now),
                  flush=True)
            return
        self.args.budget_now = want
        self.run["budgets"].append(want)
        print("  budget_set %d %d at iter %d" % (self.block, want, it), flush=True)


def param_digests(model):
    """sha256 of the bits of every parameter and buffer, by name."""
    return {k: hashlib.sha256(v.detach().cpu().contiguous().numpy().tobytes()).hexdigest()
            for k, v in model.state_dict().items()}


def compare_to_first(runs):
    """Each run's parameters and losses against the first run's, bit for bit."""
    ref = next((r for r in runs if "params" in r), None)
    for r in runs:
        if ref is None or "params" not in r:
            continue
        r["params_differ"] = sorted(k for k in ref["params"] if r["params"].get(k) != ref["params"][k])
        r["params_equal"] = not r["params_differ"] and len(r["params"]) == len(ref["params"])
        r["losses_equal"] = [x.hex() for x in r["losses"]] == [x.hex() for x in ref["losses"]]


def lib_str(b):
    return b.decode() if b else "?"


def find_library(given):
    here = os.path.dirname(os.path.abspath(__file__))
    for path in ([given] if given else []) + [os.environ.get("UMADV_LIBRARY", ""),
                                              os.path.join(here, "..", ".libs", "libumadv.so")]:
        if path and os.path.exists(path):
            return os.path.abspath(path)
    sys.exit("torch_train.py: libumadv.so not found: pass --lib PATH (e.g. BUILD/.libs/libumadv.so)")


@contextlib.contextmanager
def output_file(path):
    """Write @path as umadv's own outputs are written (umadv(1), OUTPUT
    FILES): a regular file (or a new one) is replaced only once the whole
    output is written, through a temporary file beside it; "-", devices and
    FIFOs are written as streams, never replaced."""
    if path == "-":
        yield sys.stdout
        return
    real = os.path.realpath(path)
    if os.path.exists(real) and not os.path.isfile(real):
        with open(real, "a") as f:
            yield f
        return
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(real) + ".tmp.",
                               dir=os.path.dirname(real))
    try:
        umask = os.umask(0)
        os.umask(umask)
        # mkstemp's 0600 is not what a plain create gives: the old file's
        # mode, or the umask's.
        os.chmod(tmp, os.stat(real).st_mode & 0o7777 if os.path.exists(real)
                 else 0o666 & ~umask)
        with os.fdopen(fd, "w") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, real)
    except BaseException:
        os.unlink(tmp)
        raise


def gib(n):
    return "%.2f GiB" % (n / 2**30)


def transformer(torch, image_size, dim=512, heads=8, layers=6, patch=16):
    """A transformer from torch.nn over image patches (no torchvision part):
    patch embedding, TransformerEncoder, mean pooling, 1000 classes."""
    nn = torch.nn
    tokens = (image_size // patch) ** 2

    class PatchTransformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Conv2d(3, dim, patch, stride=patch)
            self.pos = nn.Parameter(torch.randn(1, tokens, dim) * 0.02)
            layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0,
                                               batch_first=True, norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.head = nn.Linear(dim, 1000)

        def forward(self, x):
            x = self.embed(x).flatten(2).transpose(1, 2) + self.pos
            return self.head(self.encoder(x).mean(dim=1))

    return PatchTransformer()


GPT2_VOCAB = 50257  # GPT-2's tokenizer


def gpt2(torch, seq_len, dim=768, heads=12, layers=12, vocab=GPT2_VOCAB):
    """A causal language model of GPT-2 small's shape (12 pre-norm blocks
    of width 768, 12 heads, GELU MLP of 3072, tied input and output
    embeddings, learned positions) from torch.nn only, as an
    nn.Sequential of its stages so that checkpoint_sequential can split
    it. Takes token ids (batch, seq_len); gives the logits of every
    position flattened to (batch * seq_len, vocab) for cross_entropy."""
    nn = torch.nn

    class Embed(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, dim)
            # GPT-2's scale: N(0, 1), nn.Embedding's own, would give the
            # tied output layer logits of about sqrt(dim)
            nn.init.normal_(self.wte.weight, std=0.02)
            self.wpe = nn.Parameter(torch.randn(1, seq_len, dim) * 0.01)

        def forward(self, tokens):
            return self.wte(tokens) + self.wpe

    class CausalBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0,
                                                    activation="gelu", batch_first=True,
                                                    norm_first=True)
            mask = nn.Transformer.generate_square_subsequent_mask(seq_len)
            self.register_buffer("mask", mask, persistent=False)

        def forward(self, x):
            return self.layer(x, src_mask=self.mask, is_causal=True)

    class Logits(nn.Module):
        def __init__(self, wte):
            super().__init__()
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, vocab, bias=False)
            self.head.weight = wte.weight

        def forward(self, x):
            return self.head(self.norm(x)).flatten(0, 1)

    embed = Embed()
    return nn.Sequential(embed, *[CausalBlock() for _ in range(layers)], Logits(embed.wte))


def build_model(torch, torchvision, args):
    """--model: "transformer" or "gpt2" (torch.nn), or any torchvision classifier."""
    # The memory-efficient and flash attention backwards are not
    # deterministic (native differs from native: vit_b_16 from its third
    # iteration, H200, 2026-11-28): every model's attention, torchvision's
    # included, runs on the math one, so that losses compare bit for bit.
    torch.backends.cuda.enable_mem_efficient_sdp(False)
    torch.backends.cuda.enable_flash_sdp(False)
    if args.model in ("transformer", "gpt2"):
        if args.model == "gpt2":
            return gpt2(torch, args.seq_len)
        return transformer(torch, args.image_size)
    if args.model not in torchvision.models.list_models(module=torchvision.models):
        sys.exit("torch_train.py: --model %s: not 'transformer', 'gpt2' nor a torchvision "
                 "classification model (torchvision.models.list_models())" % args.model)
    return torchvision.models.get_model(args.model, weights=None)


def stages(torch, torchvision, model):
    """The modules whose composition in order is @model's forward, for
    checkpoint_sequential; None where the model does not split so (its
    forward does more than chain children)."""
    nn = torch.nn
    if isinstance(model, nn.Sequential):  # gpt2
        return list(model)
    if isinstance(model, torchvision.models.ResNet):  # torchvision's ResNet.forward
        return ([model.conv1, model.bn1, model.relu, model.maxpool] +
                [block for layer in (model.layer1, model.layer2, model.layer3, model.layer4)
                 for block in layer] + [model.avgpool, nn.Flatten(1), model.fc])
    if isinstance(model, torchvision.models.VGG):  # torchvision's VGG.forward
        return list(model.features) + [model.avgpool, nn.Flatten(1)] + list(model.classifier)
    if hasattr(model, "encoder") and hasattr(model, "pos"):  # transformer()
        class Patches(nn.Module):
            def forward(self, x):
                return model.embed(x).flatten(2).transpose(1, 2) + model.pos

        class Pool(nn.Module):
            def forward(self, x):
                return model.head(x.mean(dim=1))
        return [Patches()] + list(model.encoder.layers) + [Pool()]
    return None


class Batches:
    """The synthetic batches, identical for every run. Without --loader
    one batch goes to the GPU once and every iteration trains on it; with
    --loader each iteration has a batch of its own in pinned host memory,
    copied into new GPU tensors as the iteration begins, as a data
    loader's batch.cuda(non_blocking=True) is: the copies land in blocks
    that may lie where freed ones were discarded (umadv(7) STAGING)."""

    def __init__(self, torch, args):
        gen = torch.Generator().manual_seed(args.seed + 1)
        count = args.iters if args.loader else 1
        self.host = [self.draw(torch, args, gen) for _ in range(count)]
        if args.loader:
            self.host = [(x.pin_memory(), y.pin_memory()) for x, y in self.host]
            self.gpu = None
        else:
            self.gpu = tuple(t.cuda() for t in self.host[0])

    @staticmethod
    def draw(torch, args, gen):
        if args.model == "gpt2":
            tokens = torch.randint(0, GPT2_VOCAB, (args.batch, args.seq_len + 1), generator=gen)
            return tokens[:, :-1].contiguous(), tokens[:, 1:].reshape(-1)  # the next token
        x = torch.randn(args.batch, 3, args.image_size, args.image_size, generator=gen)
        return x, torch.randint(0, 1000, (args.batch,), generator=gen)

    def get(self, it):
        """Iteration @it's (x, y) on the GPU."""
        if self.gpu is not None:
            return self.gpu
        return tuple(t.cuda(non_blocking=True) for t in self.host[it % len(self.host)])


def build(torch, torchvision, args):
    """Model, optimizer and batches: identical for every run."""
    torch.manual_seed(args.seed)
    model = build_model(torch, torchvision, args).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    return model, opt, Batches(torch, args)


HOST_CHECK_BYTES = 1 << 30


def host_spare(meminfo_path="/proc/meminfo"):
    """Host memory this process may still take: MemAvailable less a
    sixteenth of MemTotal, at least 1 GiB (the rule umadv's staging pool
    pins by, src/common/hostmem.h); None when not known."""
    fields = {}
    try:
        with open(meminfo_path) as f:
            for line in f:
                name, _, rest = line.partition(":")
                parts = rest.split()
                if parts and parts[0].isdigit():
                    fields[name] = int(parts[0]) * 1024
    except OSError:
        return None
    if "MemAvailable" not in fields or "MemTotal" not in fields:
        return None
    reserve = max(1 << 30, fields["MemTotal"] // 16)
    return max(0, fields["MemAvailable"] - reserve)


class HostOutOfMemory(RuntimeError):
    """save_on_cpu would pin more than the host can spare."""


class HostGuard:
    """save_on_cpu pins every saved tensor on the host. Past what the host
    can spare, pinning does not fail: it wakes the kernel's OOM killer,
    which ends the process with nothing said (ResNet-50 at batch 672
    under a 16 GiB cap, H200 with 125 GiB of host memory, 2026-11-28). So
    every HOST_CHECK_BYTES packed, and before a larger tensor, the host's
    spare memory is read (@read: host_spare), and where it is less than
    twice what may be pinned before the next reading (PyTorch's pinned
    blocks round up to powers of two), the run ends as out of memory.
    Only past the most an earlier iteration packed: up to it, PyTorch's
    cache of pinned blocks serves the iteration without pinning more."""

    def __init__(self, read=host_spare):
        self.read, self.since, self.packed, self.peak = read, 0, 0, 0

    def check(self, nbytes):
        self.packed += nbytes
        if self.packed <= self.peak:
            return
        self.since += nbytes
        if self.since < HOST_CHECK_BYTES and nbytes < HOST_CHECK_BYTES:
            return
        self.since = 0
        spare = self.read()
        want = 2 * max(nbytes, HOST_CHECK_BYTES)
        if spare is not None and spare < want:
            raise HostOutOfMemory(
                "save_on_cpu: out of memory on the host: %.2f GiB packed this iteration, "
                "%.2f GiB more to pin, the host can spare %.2f" % (
                    self.packed / 2.0 ** 30, want / 2.0 ** 30, spare / 2.0 ** 30))

    def iteration_begins(self):
        self.peak, self.packed, self.since = max(self.peak, self.packed), 0, 0


class Peer:
    """How --peer runs an iteration's forward: save_on_cpu (PyTorch's own
    hooks, pin_memory=True, wrapped to count the bytes they move each
    way) or checkpoint_sequential over stages() in sqrt(n) segments
    (--segments), use_reentrant=False, preserving the RNG state (so
    dropout draws the same masks again). Checkpointing keeps a segment's
    input to run it again, so an in-place module first in a segment
    (VGG's ReLUs) would overwrite it: in-place modules are made out of
    place under checkpoint, as PyTorch's users do."""

    def __init__(self, torch, torchvision, args, model):
        self.torch, self.kind, self.model = torch, args.peer, model
        self.moved = {"out": 0, "in": 0}
        self.counted = True
        self.host = HostGuard()
        if self.kind == "checkpoint":
            # a submodule "import torch" need not bring in
            self.checkpoint = importlib.import_module("torch.utils.checkpoint")
            parts = stages(torch, torchvision, model)
            if parts is None:
                raise NotApplicable("--peer checkpoint: %s's forward is not a chain of its "
                                    "children" % args.model)
            self.seq = torch.nn.Sequential(*parts)
            for module in self.seq.modules():
                if getattr(module, "inplace", False) is True:
                    module.inplace = False
            self.segments = args.segments or max(1, round(len(parts) ** 0.5))

    def forward(self, x):
        if self.kind == "checkpoint":
            return self.checkpoint.checkpoint_sequential(
                self.seq, self.segments, x, use_reentrant=False)
        with self.hooks():
            return self.model(x)

    def hooks(self):
        inner = self.torch.autograd.graph.save_on_cpu(pin_memory=True)
        pack, unpack = getattr(inner, "pack_hook", None), getattr(inner, "unpack_hook", None)
        if pack is None or unpack is None:  # not the saved_tensors_hooks we know
            self.counted = False
            return inner
        moved, host = self.moved, self.host

        def counting_pack(tensor):
            nbytes = tensor.numel() * tensor.element_size()
            host.check(nbytes)
            packed = pack(tensor)
            moved["out"] += nbytes
            return packed

        def counting_unpack(packed):
            tensor = unpack(packed)
            moved["in"] += tensor.numel() * tensor.element_size()
            return tensor
        return self.torch.autograd.graph.saved_tensors_hooks(counting_pack, counting_unpack)

    def take_moved(self):
        """Bytes packed to the host and back since the last call."""
        out = dict(self.moved) if self.counted else None
        self.moved["out"] = self.moved["in"] = 0
        self.host.iteration_begins()
        return out


class NotApplicable(Exception):
    """A --peer the model does not allow."""


def step(torch, model, opt, x, y, peer=None):
    opt.zero_grad(set_to_none=True)
    logits = peer.forward(x) if peer is not None else model(x)
    # GoogLeNet and Inception v3 train with auxiliary heads: their output
    # is a named tuple; the loss here is the main head's alone
    logits = getattr(logits, "logits", logits)
    loss = torch.nn.functional.cross_entropy(logits, y)
    loss.backward()
    opt.step()
    return loss


def mark(um, it, args, profile):
    """umadv's side of iteration @it: plan once the profiled one is done;
    save the trace once the timing pass after it has given the durations."""
    if profile and it == args.profile_iter + 1:
        um.call("umadv_plan")
    if profile and it == args.profile_iter:
        um.call("umadv_profile_next_iteration")
    um.call("umadv_iteration_begin")
    if profile and it == args.profile_iter + 2 and args.trace:
        um.call("umadv_trace_save", args.trace.encode())


def memory_report(torch):
    """PyTorch's own counters; a pluggable allocator has none."""
    try:
        return "peak allocated %s, reserved %s" % (
            gib(torch.cuda.max_memory_allocated()), gib(torch.cuda.max_memory_reserved()))
    except RuntimeError:
        return "peak allocated and reserved: not known (pluggable allocator)"


def reserved(torch):
    try:
        return torch.cuda.memory_reserved()
    except RuntimeError:
        return None


# staged and restored bytes moved through pinned staging, apart from the
# UVM migrations of fetched and evicted (umadv(3))
COUNTERS = ("gpu_faults", "fetched_bytes", "evicted_bytes", "waits", "wait_ns", "drift_ops",
            "staged_bytes", "restored_bytes", "profiles", "profile_end_ns", "plan_ns",
            "replay_start_ns", "alloc_calls", "alloc_ns", "fault_count_ns")
# what umadv's own calls of a profiling phase took (umadv(3), umadv_stats_t)
PHASES = ("profile_end_ns", "plan_ns", "replay_start_ns")


def counters(um):
    s = um.stats()
    return {k: getattr(s, k) for k in COUNTERS}


def umadv_report(torch, um):
    s = um.stats()
    res = reserved(torch)
    if res is None:  # every tensor is a umadv block: nothing can be outside
        outside = "PyTorch memory outside umadv 0 bytes (one umadv block per tensor)"
    else:
        outside = "PyTorch memory outside umadv %d bytes" % (res - s.managed_bytes)
    return ("umadv: managed now %s (peak %s) in %d blocks; %s; gpu peak used %s; "
            "resident peak %s; faults %d; fetched %s, evicted %s; staged %s, restored %s; "
            "steps %d; waits %d (%.1f ms); drift ops %d" % (
                gib(s.managed_bytes), gib(s.managed_peak), s.allocations, outside,
                gib(s.gpu_peak_used), gib(s.resident_peak), s.gpu_faults, gib(s.fetched_bytes),
                gib(s.evicted_bytes), gib(s.staged_bytes), gib(s.restored_bytes), s.steps,
                s.waits, s.wait_ns / 1e6, s.drift_ops))


def snapshot(torch, model):
    """The initial parameters, buffers and random states (dropout draws
    from them), on the host (no umadv block)."""
    state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
    return {"model": state, "rng": torch.get_rng_state(), "rng_cuda": torch.cuda.get_rng_state()}


def reset(torch, model, opt, init):
    """Back to the initial weights, in place: the tensors (umadv blocks)
    stay the ones the profile saw. A zero momentum buffer gives the bits
    of SGD's first step (0 * momentum + grad)."""
    with torch.no_grad():
        for k, v in model.state_dict().items():
            v.copy_(init["model"][k])
        for state in opt.state.values():
            if state.get("momentum_buffer") is not None:
                state["momentum_buffer"].zero_()
    torch.set_rng_state(init["rng"])
    torch.cuda.set_rng_state(init["rng_cuda"])
    torch.cuda.synchronize()


def iterate(torch, model, opt, batches, args, um, run, peer=None):
    """One training run: times, losses and umadv's counters per iteration
    (--peer: the bytes save_on_cpu moved each way)."""
    profile = um is not None and run["index"] == 0 and not args.no_profile
    label = run["policy"] or "native"
    budgets = run.get("budget_ctl")
    for it in range(args.iters):
        t0 = time.perf_counter()
        before = counters(um) if um is not None else None
        if budgets is not None:
            budgets.step(it)
        if um is not None:
            mark(um, it, args, profile)
        cpu0 = time.process_time()
        x, y = batches.get(it)
        loss = step(torch, model, opt, x, y, peer)
        # the CPU time of the iteration's host work, read before the wait
        # (CUDA spins in it): near its wall time, the run is bound by the host
        run["cpu_times"].append((time.process_time() - cpu0) * 1e3)
        torch.cuda.synchronize()
        run["times"].append((time.perf_counter() - t0) * 1e3)
        run["losses"].append(loss.item())
        extra = ""
        if peer is not None:
            run["moved"].append(peer.take_moved())
        if um is not None:
            after = counters(um)
            delta = {k: after[k] - before[k] for k in COUNTERS}
            run["counters"].append(delta)
            # umadv reads an iteration's faults when the next one begins
            extra = "  faults(it-1) %d waits %d (%.1f ms) fetched %s evicted %s" % (
                delta["gpu_faults"], delta["waits"], delta["wait_ns"] / 1e6,
                gib(delta["fetched_bytes"]), gib(delta["evicted_bytes"]))
            if delta["alloc_calls"]:
                extra += " umadv calls %d (%.2f ms)" % (delta["alloc_calls"],
                                                        delta["alloc_ns"] / 1e6)
            if delta["fault_count_ns"] >= 50000:
                extra += " fault counts %.1f ms" % (delta["fault_count_ns"] / 1e6)
            if any(delta[k] for k in PHASES):
                extra += " (profile end %.1f, plan %.1f, replay start %.1f ms)" % tuple(
                    delta[k] / 1e6 for k in PHASES)
        print("  %-12s iter %2d  %8.1f ms  loss %.7f  %s%s" % (
            label, it, run["times"][-1], run["losses"][-1], run["losses"][-1].hex(), extra),
            flush=True)
    if budgets is not None:
        budgets.report()
    # Faults to the iteration they happened in: read at the next begin.
    faults = [c["gpu_faults"] for c in run["counters"]]
    for k, c in enumerate(run["counters"]):
        c["gpu_faults"] = faults[k + 1] if k + 1 < len(faults) else None


def train(torch, torchvision, args, um):
    """Train once natively (um None), or once per policy of --policies in
    this process from the same initial weights: the first run profiles,
    the others switch with umadv_set_policy. Returns the runs."""
    try:
        torch.cuda.reset_peak_memory_stats()
    except RuntimeError:
        pass  # pluggable allocator
    model, opt, batches = build(torch, torchvision, args)
    peer = Peer(torch, torchvision, args, model) if args.peer and um is None else None
    policies = args.policies if um is not None else [None]
    init = snapshot(torch, model) if len(policies) > 1 else None
    runs = []
    for index, policy in enumerate(policies):
        run = {"index": index, "policy": policy, "times": [], "cpu_times": [], "losses": [],
               "counters": [], "moved": []}
        runs.append(run)
        if um is not None and args.budget_change:
            run["budget_ctl"] = Budgets(args, um, run)
            if index > 0:  # the first block's budget before the switch plans with it
                run["budget_ctl"].step(0)
        if index > 0:
            if not um.set_policy(policy):
                run["skipped"] = "the budget is too small for a step"
                print("  %s: skipped: %s" % (policy, run["skipped"]), flush=True)
                continue
            reset(torch, model, opt, init)
        if peer is not None:
            run["peer"] = peer.kind
            run["segments"] = getattr(peer, "segments", None)
        iterate(torch, model, opt, batches, args, um, run, peer)
        run["report"] = [memory_report(torch)] + ([umadv_report(torch, um)] if um else [])
        if um is None and not args.native_alloc:  # a pluggable allocator has no counters
            run["peak_allocated"] = torch.cuda.max_memory_allocated()
            run["peak_reserved"] = torch.cuda.max_memory_reserved()
        if um is not None:
            stats = um.stats()
            run["managed_peak"], run["resident_peak"] = stats.managed_peak, stats.resident_peak
        if args.budget_change:
            run.pop("budget_ctl", None)
            run["params"] = param_digests(model)
    del model, opt, batches
    if um is not None and args.budget_change:
        compare_to_first(runs)
        args.left = managed_left(torch, um)
    return runs


def managed_left(torch, um):
    """What umadv still holds once the model, optimizer and data are gone:
    cuBLAS's workspaces (PyTorch keeps one per handle and stream) are
    returned first."""
    gc.collect()
    torch.cuda.synchronize()
    try:
        torch._C._cuda_clearCublasWorkspaces()
    except AttributeError:
        pass
    s = um.stats()
    print("managed_left %d bytes in %d blocks (model, optimizer, data and cuBLAS "
          "workspaces freed)" % (s.managed_bytes, s.allocations), flush=True)
    return {"managed_bytes": s.managed_bytes, "blocks": s.allocations}


# a later run's first iterations, where a profile is the policy switch's
REPROFILE_WINDOW = 4


def steady_from(args, run):
    """The first iteration of the steady state. The profiling run: after
    the profiled iteration, the timing pass, the first two on the plan
    made from it (umadv counts their faults, which costs every launch host
    time: UMADV_FAULT_PERIOD) and the one after them (measured: ResNet-50
    oracle 69.9 ms there, then 35.1 and 34.9). A later run: after its
    first two; one that profiled again at once (a switch from oracle's
    guesses to a policy that evicts, umadv(3) umadv_set_policy), as the
    profiling run after that profile, which ended at the iteration whose
    counters count it."""
    if run["index"] > 0:
        again = [k for k, c in enumerate(run["counters"][:REPROFILE_WINDOW]) if c.get("profiles")]
        return again[-1] + 4 if again else 2
    return 2 if args.no_profile else args.profile_iter + 5


def steady(run, args):
    tail = run["times"][steady_from(args, run):] or run["times"][-1:]
    return sum(tail) / len(tail)


def profiling_phase(run, native, args):
    """What the profiling run's iterations before the steady state cost
    over as many steady ones, in ms and in native iterations (native's
    steady state): iteration 0 left out on both sides (cuDNN's warm-up
    swings by a hundred ms between processes, as in bench/overhead.py).
    None for a later run, or without the native run."""
    if run["index"] > 0 or native is None:
        return None
    first = steady_from(args, run)
    over = sum(run["times"][1:first]) - (first - 1) * steady(run, args)
    return over, over / steady(native, args)


def steady_faults(run, args):
    """Faults of the last counted iteration before the steady state."""
    first = steady_from(args, run)
    counted = run["counters"][:first]
    return counted[-1]["gpu_faults"] if counted else None



def pluggable(torch, args):
    return torch.cuda.memory.CUDAPluggableAllocator(
        args.lib, "umadv_torch_malloc", "umadv_torch_free")


def use_umadv_allocator(torch, args):
    """--alloc tensor: umadv is the process's CUDA allocator (before any
    CUDA allocation: PyTorch refuses to swap an initialized allocator)."""
    args.lib = find_library(args.lib)
    # One large arena rather than UMADV_ARENA_SIZE's 1G ones. Empty arenas
    # are kept either way (pool.h); but with 1G arenas, plan run after
    # oracle in one process (peers.py's order) saw 150-220 stray fault
    # groups in its first iterations against 25-30 with one arena,
    # crossed the re-profile threshold and re-profiled (H100, 2026-11-24;
    # the cause is not found yet). The steady state is the same.
    os.environ.setdefault("UMADV_ARENA_SIZE", "16G")
    torch.cuda.memory.change_current_allocator(pluggable(torch, args))


def run_umadv(torch, torchvision, args):
    um = Umadv(args.lib)
    if args.alloc == "tensor":
        return train(torch, torchvision, args, um), None
    pool = torch.cuda.MemPool(pluggable(torch, args).allocator())
    # The pool routes allocations of this thread only: backward must run
    # here, not on autograd's device threads, or gradients escape umadv.
    with torch.autograd.set_multithreading_enabled(False), torch.cuda.use_mem_pool(pool):
        result = train(torch, torchvision, args, um)
    return result, pool


def run_native_child(args):
    """The native run of --both --alloc tensor, in a process of its own."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        mine, skip = [], False
        for a in sys.argv[1:]:  # the parent's flags, less --both and --json PATH
            if not skip and a not in ("--both", "--json") and not a.startswith("--json="):
                mine.append(a)
            skip = a == "--json"
        argv = [sys.executable, os.path.abspath(__file__), "--native", "--result-json",
                out.name] + mine
        if subprocess.run(argv).returncode != 0:
            sys.exit("torch_train.py: the native run failed")
        with open(out.name) as f:
            r = json.load(f)
    r["losses"] = [float.fromhex(h) for h in r["losses"]]
    return r


def summarize(run, native, args):
    """A run's figures for the table and --json."""
    if "skipped" in run:
        return {"policy": run["policy"], "skipped": run["skipped"]}
    ms = steady(run, args)
    first = steady_from(args, run)
    tail = run["counters"][first:] or run["counters"][-1:]
    n = max(len(tail), 1)
    cpu = run["cpu_times"][first:] or run["cpu_times"][-1:]
    out = {"policy": run["policy"] or "native", "ms_per_iter": ms, "steady_from": first,
           "iterations": len(run["times"]), "cpu_ms_per_iter": sum(cpu) / max(len(cpu), 1),
           "times": run["times"], "cpu_times": run["cpu_times"],
           "losses": [x.hex() for x in run["losses"]]}
    for k in ("budgets", "refused", "blocks", "blocks_over", "params_equal", "params_differ",
              "losses_equal"):
        if k in run:
            out[k] = run[k]
    if native is not None:
        out["x_native"] = ms / steady(native, args)
        out["identical"] = out["losses"] == [x.hex() for x in native["losses"]]
    phase = profiling_phase(run, native, args)
    if phase is not None:
        out["profiling_phase_ms"], out["profiling_phase_native_iterations"] = phase
    for k in ("peer", "segments", "peak_allocated", "peak_reserved"):
        if run.get(k) is not None:
            out[k] = run[k]
    moved = run.get("moved", [])[first:] or run.get("moved", [])[-1:]
    if moved and None not in moved:
        out["to_host_bytes_per_iter"] = sum(m["out"] for m in moved) / len(moved)
        out["from_host_bytes_per_iter"] = sum(m["in"] for m in moved) / len(moved)
    if run["counters"]:
        out["managed_peak"], out["resident_peak"] = run["managed_peak"], run["resident_peak"]
        out["faults_counted"] = steady_faults(run, args)
        for k in ("fetched_bytes", "evicted_bytes", "waits", "wait_ns", "drift_ops",
                  "staged_bytes", "restored_bytes", "alloc_calls", "alloc_ns"):
            out[k + "_per_iter"] = sum(c[k] for c in tail) / n
        # umadv's own calls before the steady state: the profiling phase's
        out["phases_ns"] = {k: sum(c[k] for c in run["counters"][:first]) for k in PHASES}
    return out


def print_summary(rows, native):
    print("\n  %-13s %9s %9s %10s %12s %12s %7s %9s %9s" % (
        "policy", "ms/iter", "x native", "faults(1)", "fetch GiB/it", "evict GiB/it",
        "waits", "wait ms", "identical"))
    for r in rows:
        if "skipped" in r:
            print("  %-13s skipped: %s" % (r["policy"], r["skipped"]))
            continue
        print("  %-13s %9.1f %9s %10s %12.2f %12.2f %7.0f %9.1f %9s" % (
            r["policy"], r["ms_per_iter"], "%.2f" % r["x_native"] if native else "-",
            "-" if r.get("faults_counted") is None else r["faults_counted"],
            r.get("fetched_bytes_per_iter", 0) / 2**30, r.get("evicted_bytes_per_iter", 0) / 2**30,
            r.get("waits_per_iter", 0), r.get("wait_ns_per_iter", 0) / 1e6,
            ("yes" if r["identical"] else "NO") if native else "-"))
    print("  (1) GPU fault groups of the last iteration counted before the steady state")
    for r in rows:
        if "profiling_phase_ms" in r:
            print("  %s's profiling phase: %.0f ms over the steady state in iterations 1-%d, "
                  "%.1f native iterations" % (r["policy"], r["profiling_phase_ms"],
                                              r["steady_from"] - 1,
                                              r["profiling_phase_native_iterations"]))


def print_longrun(rows, args):
    """The long run's table: each policy against the first run."""
    print("\n  %-13s %6s %8s %8s %9s %8s %8s %6s" % (
        "policy", "iters", "budgets", "refused", "ms mean", "params", "losses", "over"))
    for r in rows:
        if "skipped" in r:
            continue
        tail = r["times"][r["steady_from"]:] or r["times"][-1:]
        print("  %-13s %6d %8d %8d %9.1f %8s %8s %6d" % (
            r["policy"], r["iterations"], len(r.get("budgets", [])), r.get("refused", 0),
            sum(tail) / len(tail), "equal" if r.get("params_equal") else "DIFFER",
            "equal" if r.get("losses_equal") else "DIFFER", r.get("blocks_over", 0)))
    if args.left is not None:
        print("  managed bytes left: %d in %d blocks" % (args.left["managed_bytes"],
                                                          args.left["blocks"]))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="vgg16",
                   help="a torchvision classification model (vgg16, resnet50, densenet121, "
                        "mobilenet_v3_large, vit_b_16, ...), 'transformer' or 'gpt2' "
                        "(torch.nn)")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--seq-len", type=int, default=128, help="gpt2's tokens per sequence")
    p.add_argument("--peer", choices=("save_on_cpu", "checkpoint"),
                   help="native PyTorch the way a peer saves memory: "
                   "torch.autograd.graph.save_on_cpu(pin_memory=True), or "
                   "torch.utils.checkpoint.checkpoint_sequential over the model's stages "
                   "(implies --native)")
    p.add_argument("--segments", type=int,
                   help="--peer checkpoint's segments (default: the square root of the stages)")
    p.add_argument("--cap-gib", type=float,
                   help="native and --peer: PyTorch may hold this much GPU memory at most "
                   "(torch.cuda.set_per_process_memory_fraction); an out-of-memory exits 3")
    p.add_argument("--iters", type=int, default=8)
    p.add_argument("--loader", action="store_true",
                   help="a batch of its own for each iteration, in pinned host memory, "
                   "copied into new GPU tensors as the iteration begins (a data loader's "
                   "way); default: one batch on the GPU for every iteration")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--profile-iter", type=int, default=1,
                   help="iteration profiled; planned and replayed from the next")
    p.add_argument("--no-profile", action="store_true",
                   help="mark iterations only: no profile, no plan (to measure overheads)")
    p.add_argument("--alloc", choices=("tensor", "pool"), default="tensor",
                   help="tensor: every tensor a umadv block (default); pool: a MemPool "
                   "whose segments are umadv blocks")
    p.add_argument("--native-alloc", metavar="LIB",
                   help="--native through PyTorch's pluggable-allocator route, as umadv's "
                   "tensors go, over LIB's floor_malloc and floor_free (bench/floor_alloc.c: "
                   "an allocator that does next to nothing): what the route alone costs")
    p.add_argument("--result-json", help=argparse.SUPPRESS)
    p.add_argument("--json", help="write every run's times, losses and counters here")
    p.add_argument("--trace", help="write the profiled iteration here (umadv-trace(5))")
    p.add_argument("--lib", help="libumadv.so (default: $UMADV_LIBRARY)")
    p.add_argument("--policy", default="oracle", help="UMADV_POLICY unless already set")
    p.add_argument("--policies", help="train once per policy of this comma-separated list "
                   "in one process (the first profiles; e.g. oracle,demand,prefetch-all,plan)")
    p.add_argument("--budget-change", type=int, default=0, metavar="N",
                   help="every N iterations a new budget (umadv_set_budget), drawn from "
                   "--budget-range, the same sequence for every policy (0: never)")
    p.add_argument("--budget-seed", type=int, help="seed of the draws (default: --seed)")
    p.add_argument("--budget-range", default="0.25,1", metavar="LO,HI",
                   help="fractions of the footprint the budgets are drawn from")
    p.add_argument("--footprint", type=int, metavar="BYTES",
                   help="what the fractions are of (default: umadv's managed peak after "
                   "the first iteration)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--umadv", dest="mode", action="store_const", const="umadv")
    mode.add_argument("--native", dest="mode", action="store_const", const="native")
    mode.add_argument("--both", dest="mode", action="store_const", const="both")
    p.set_defaults(mode="both")
    args = p.parse_args()
    if args.peer:
        if args.mode == "umadv" or args.policies or args.budget_change:
            p.error("--peer runs native PyTorch (no umadv, no --policies)")
        args.mode = "native"
    if args.native_alloc and (args.mode != "native" or not os.path.exists(args.native_alloc)):
        p.error("--native-alloc: an existing library, for a --native run")
    if args.cap_gib is not None and (args.cap_gib <= 0 or args.mode != "native"):
        p.error("--cap-gib: GiB above 0, for a native or --peer run (umadv: UMADV_BUDGET)")
    if args.mode != "native" and not args.no_profile and args.iters < args.profile_iter + 3:
        p.error("--iters must exceed --profile-iter + 2 (the profile, the timing pass, "
                "then the plan)")
    if args.policies and args.no_profile:
        p.error("--policies needs the profile (no --no-profile)")
    args.policies = args.policies.split(",") if args.policies else None
    try:
        args.budget_lo, args.budget_hi = (float(x) for x in args.budget_range.split(","))
    except ValueError:
        args.budget_lo = args.budget_hi = -1.0
    if not 0 < args.budget_lo <= args.budget_hi <= 1:
        p.error("--budget-range: LO,HI, fractions of the footprint with 0 < LO <= HI <= 1")
    if args.budget_change < 0:
        p.error("--budget-change: a number of iterations, 0 for none")
    if args.budget_change and args.mode != "umadv":
        p.error("--budget-change needs --umadv (the budget is umadv's)")
    if args.budget_seed is None:
        args.budget_seed = args.seed
    args.base, args.budget_now, args.left = None, None, None
    return args


EXIT_OUT_OF_MEMORY = 3
EXIT_NOT_APPLICABLE = 4


def save_timeline(path):
    """UMADV_TIMELINE's file, which the context would write when destroyed:
    this process leaves through os._exit without destroying it."""
    umadv = Umadv(path)
    umadv.lib.umadv_timeline_save.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    umadv.call("umadv_timeline_save", None)


def finish(args, what, status):
    """Leave at once with @status, --json holding @what: a run that did
    not train (out of memory, a --peer the model does not allow)."""
    print("torch_train.py: %s" % "; ".join("%s: %s" % kv for kv in what.items()), flush=True)
    if args.json:
        with output_file(args.json) as f:
            json.dump(dict({"model": args.model, "batch": args.batch, "peer": args.peer,
                            "cap_gib": args.cap_gib}, **what), f, indent=1)
    sys.stdout.flush()
    os._exit(status)


def guarded(torch, args, fn, *fn_args):
    """@fn(*@fn_args), but out of memory and not applicable end the
    process with their own status (bench/peers.py tells them apart from
    failures)."""
    try:
        return fn(*fn_args)
    except NotApplicable as e:
        finish(args, {"not_applicable": str(e)}, EXIT_NOT_APPLICABLE)
    except RuntimeError as e:  # torch.cuda.OutOfMemoryError is one
        if isinstance(e, torch.cuda.OutOfMemoryError) or "out of memory" in str(e):
            finish(args, {"out_of_memory": str(e)[:600]}, EXIT_OUT_OF_MEMORY)
        raise


def cap_memory(torch, args, total):
    """--cap-gib: PyTorch's caching allocator refuses to hold more."""
    fraction = args.cap_gib * 2**30 / total
    if fraction > 1:
        sys.exit("torch_train.py: --cap-gib %g: more than the GPU's %s" % (args.cap_gib,
                                                                         gib(total)))
    torch.cuda.set_per_process_memory_fraction(fraction)
    print("cap: %.2f GiB (memory fraction %.4f)" % (args.cap_gib, fraction), flush=True)


def main():
    args = parse_args()
    import torch
    import torchvision

    if not torch.cuda.is_available():
        sys.exit("torch_train.py: no CUDA device")
    if args.mode in ("umadv", "both") and args.alloc == "tensor":
        use_umadv_allocator(torch, args)  # before CUDA is initialized
    if args.native_alloc:
        torch.cuda.memory.change_current_allocator(torch.cuda.memory.CUDAPluggableAllocator(
            os.path.abspath(args.native_alloc), "floor_malloc", "floor_free"))
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    free, total = torch.cuda.mem_get_info()
    if args.cap_gib is not None:
        cap_memory(torch, args, total)
    # Never more managed memory than the card has free (shared GPUs).
    os.environ.setdefault("UMADV_MAX_MANAGED", str(int(free * 0.8)))
    if args.policies:
        os.environ["UMADV_POLICY"] = args.policies[0]
    os.environ.setdefault("UMADV_POLICY", args.policy)
    args.policies = args.policies or [os.environ["UMADV_POLICY"]]
    print("%s, %s, torch %s, %s batch %d, %d iterations, free %s of %s, policies %s, "
          "UMADV_BUDGET=%s" % (
              torch.cuda.get_device_name(), "cudnn %s" % torch.backends.cudnn.version(),
              torch.__version__, args.model, args.batch, args.iters, gib(free), gib(total),
              ",".join(args.policies), os.environ.get("UMADV_BUDGET", "none")), flush=True)
    native, runs = None, []
    if args.mode == "both" and args.alloc == "tensor":
        native = run_native_child(args)
    elif args.mode in ("native", "both"):
        native = guarded(torch, args, train, torch, torchvision, args, None)[0]
        gc.collect()
        torch.cuda.empty_cache()
    if native is not None:
        print("native: %s; %.1f ms/iter in steady state" % ("; ".join(native["report"]),
                                                            steady(native, args)), flush=True)
    if args.result_json:
        with output_file(args.result_json) as f:
            json.dump({"index": 0, "policy": None, "times": native["times"],
                       "cpu_times": native["cpu_times"],
                       "losses": [x.hex() for x in native["losses"]],
                       "report": native["report"], "counters": []}, f)
    if args.mode in ("umadv", "both"):
        args.lib = find_library(args.lib)
        runs, pool = guarded(torch, args, run_umadv, torch, torchvision, args)
        for run in runs:
            if "report" in run:
                print("%s: %s" % (run["policy"], "; ".join(run["report"])), flush=True)
    rows = [summarize(r, native, args) for r in runs]
    if rows:
        print_summary(rows, native)
    ok = all(r.get("identical", True) for r in rows)
    if args.budget_change and rows:
        print_longrun(rows, args)
        ok = ok and all(r.get("params_equal", False) and r.get("blocks_over", 1) == 0
                        for r in rows if "skipped" not in r)
    if native is not None and rows:
        print("losses bitwise identical: %s" % ("yes" if ok else "NO"))
    if args.json:
        with output_file(args.json) as f:
            json.dump({"model": args.model, "batch": args.batch, "iters": args.iters,
                       "peer": args.peer, "cap_gib": args.cap_gib,
                       "seq_len": args.seq_len if args.model == "gpt2" else None,
                       "budget": os.environ.get("UMADV_BUDGET"),
                       "native": summarize(native, None, args) if native else None,
                       "budget_change": args.budget_change, "budget_seed": args.budget_seed,
                       "budget_range": [args.budget_lo, args.budget_hi],
                       "footprint": args.footprint or args.base, "managed_left": args.left,
                       "runs": rows}, f, indent=1)
    if os.environ.get("UMADV_TIMELINE") and runs:
        save_timeline(args.lib)
    sys.stdout.flush()
    # The umadv context lives to the end of the process, its migration
    # threads and CUPTI subscription too: leave without running PyTorch's
    # teardown against them.
    os._exit(0 if ok else 1)


if __name__ == "__main__":
    main()
