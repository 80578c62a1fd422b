#!/bin/sh
# TAP: umadv run's Python start-up hook over a stand-in for PyTorch
# (tests/fake_torch: what PyTorch 2.11 does under a pluggable allocator),
# without a GPU or torch: cudnn.benchmark = True kept and read back while
# ATen's flag stays off (the convolution that would raise runs); the
# memory queries, memory_stats, empty_cache and reset_peak_memory_stats
# answered instead of raising; the module-call sequence followed until the
# program makes an optimizer (auto), the hook gone at its first step;
# UMADV_ITERATION_SOURCE keeping only the hook it names. The real thing:
# test_run_torch_gpu.sh.
. "${top_srcdir:-.}/tests/tap.sh"
tap_fake_torch

cat >"$tmp/bench.py" <<'PY'
import torch
import torch.backends.cudnn as cudnn
print("allocator %s" % ("umadv" if torch.cuda.memory._swapped else "torch"))
cudnn.benchmark = True
print("benchmark %s aten %s" % (cudnn.benchmark, torch._C._benchmark[0]))
torch.conv(torch.Tensor(8, 3, 32, 32))
print("conv ran")
cudnn.benchmark = True
cudnn.benchmark = False
print("benchmark %s aten %s" % (cudnn.benchmark, torch._C._benchmark[0]))
PY
run_hook bench -- python3 "$tmp/bench.py"
printf '%s\n' "allocator umadv" "benchmark True aten False" "conv ran" \
    "benchmark False aten False" >"$tmp/bench.want"
[ "$(rc_of bench)" -eq 0 ] && cmp -s "$tmp/bench.want" "$tmp/bench.out"
ok $? "cudnn.benchmark = True: read back True, ATen's flag off, the convolution runs" ||
    { diag "$tmp/bench.out"; diag "$tmp/bench.err"; }
[ "$(grep -c "cudnn.benchmark: PyTorch cannot size cuDNN's autotuning workspace" "$tmp/bench.err")" -eq 1 ]
ok $? "...and the program is told once why cuDNN does not autotune" || diag "$tmp/bench.err"

# Without umadv's hook, a pluggable allocator and benchmark mode: the
# stand-in's convolution raises, as PyTorch's does (why the hook is there).
python3 -c '
import torch
memory = torch.cuda.memory
memory.change_current_allocator(memory.CUDAPluggableAllocator("lib.so", "alloc", "free"))
torch.backends.cudnn.benchmark = True
torch.conv(torch.Tensor(8, 3, 32, 32))' >"$tmp/plain.out" 2>"$tmp/plain.err"
grep -q "does not yet support cacheInfo" "$tmp/plain.err"
ok $? "without the hook, benchmark mode under a pluggable allocator raises at the convolution" ||
    diag "$tmp/plain.err"

cat >"$tmp/memory.py" <<'PY'
import torch
stats = torch.cuda.memory_stats()
print("keys %s" % " ".join(k for k in sorted(stats) if k.endswith(".current")))
print("allocated %d reserved %d peak %d" % (torch.cuda.memory_allocated(),
      torch.cuda.memory_reserved(), torch.cuda.max_memory_allocated()))
torch.cuda.empty_cache()
torch.cuda.reset_peak_memory_stats()
torch.cuda.reset_peak_memory_stats()
print("done")
PY
run_hook memory -- python3 "$tmp/memory.py"
[ "$(rc_of memory)" -eq 0 ] &&
    grep -q "^keys active_bytes.all.current allocated_bytes.all.current allocation.all.current reserved_bytes.all.current$" "$tmp/memory.out" &&
    grep -q "^allocated [0-9]* reserved [0-9]* peak [0-9]*$" "$tmp/memory.out" &&
    grep -q "^done$" "$tmp/memory.out"
ok $? "memory_stats, memory_allocated/reserved, max_memory_allocated, empty_cache and reset_peak_memory_stats answer, none raises" ||
    { diag "$tmp/memory.out"; diag "$tmp/memory.err"; }
[ "$(grep -c "reset_peak_memory_stats: the peaks are umadv's" "$tmp/memory.err")" -eq 1 ]
ok $? "...a reset of the peaks says once that umadv keeps them" || diag "$tmp/memory.err"

cat >"$tmp/loop.py" <<'PY'
import sitecustomize
import torch
import torch.nn as nn
import torch.optim as optim
module_hooks = torch.nn.modules.module._global_forward_pre_hooks
step_hooks = torch.optim.optimizer._post_hooks
launches = sitecustomize._umadv[2][0]
print("hooks module %d step %d" % (len(module_hooks), len(step_hooks)))
net = nn.Module(nn.Module(), nn.Module(nn.Module()))
for it in range(40):
    net(torch.Tensor(4, 3))
print("after 40 iterations module %d followed %s" % (
    len(module_hooks), launches is not None and not launches.stopped))
opt = optim.Optimizer()
print("optimizer made: followed %s" % (launches is not None and not launches.stopped))
opt.step()
net(torch.Tensor(4, 3))
opt.step()
print("after steps module %d step %d" % (len(module_hooks), len(step_hooks)))
PY
run_hook auto -- python3 "$tmp/loop.py"
printf '%s\n' "hooks module 1 step 1" "after 40 iterations module 1 followed True" \
    "optimizer made: followed False" "after steps module 0 step 1" >"$tmp/auto.want"
[ "$(rc_of auto)" -eq 0 ] && cmp -s "$tmp/auto.want" "$tmp/auto.out"
ok $? "auto: module calls followed until the program makes an optimizer, their hook gone at its step" ||
    { diag "$tmp/auto.out"; diag "$tmp/auto.err"; }

run_hook optimizer --iteration-source optimizer -- python3 "$tmp/loop.py"
head -n 1 "$tmp/optimizer.out" | grep -q "^hooks module 0 step 1$"
ok $? "--iteration-source optimizer: no module hook" || diag "$tmp/optimizer.out"

run_hook launches --iteration-source launches -- python3 "$tmp/loop.py"
grep -q "^optimizer made: followed True$" "$tmp/launches.out" &&
    grep -q "^after steps module 1 step 0$" "$tmp/launches.out"
ok $? "--iteration-source launches: no step hook; the module calls followed throughout" ||
    diag "$tmp/launches.out"

run_hook nvtx --iteration-source nvtx -- python3 "$tmp/loop.py"
grep -q "^after steps module 0 step 0$" "$tmp/nvtx.out"
ok $? "--iteration-source nvtx: neither hook" || diag "$tmp/nvtx.out"

tap_done
