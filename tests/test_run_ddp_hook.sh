#!/bin/sh
# TAP: umadv run's start-up hook guards every DistributedDataParallel's
# gradient buckets (src/inject/python/umadv_ddp.py), over a stand-in for
# PyTorch (tests/fake_torch: DDP's hook rules as PyTorch 2.11 has them),
# without a GPU: a DDP with no hook of the program's gets the guard as
# DDP's allreduce at its first forward; a hook of the program's is called
# behind the guard's mark, its name and signature kept; a built-in hook,
# which the guard cannot enter, is told to the user; without umadv run,
# DDP is PyTorch's. Without a GPU no bucket is a umadv block, so every
# mark is counted as missed; the real marks: test_ddp_gpu.sh.
. "${top_srcdir:-.}/tests/tap.sh"
tap_fake_torch

# ddp.py [user|builtin|none]: a DDP, its hook, two forwards; what DDP holds
cat >"$tmp/ddp.py" <<'PY'
import sys
import torch
import torch.nn as nn
ddp = nn.parallel.DistributedDataParallel(nn.Module(nn.Module()))
calls = []


def user_hook(state, bucket):
    calls.append(bucket.buffer().data_ptr())
    fut = torch.distributed.all_reduce(bucket.buffer(), async_op=True).get_future()
    return fut.then(lambda f: f.value()[0])


if sys.argv[1] == "user":
    ddp.register_comm_hook("state", user_hook)
elif sys.argv[1] == "builtin":
    ddp._register_builtin_comm_hook("FP16_COMPRESS")
for it in range(2):
    ddp(torch.Tensor(4, 3))
print("hook %s builtin %s" % (ddp.hook_name, ddp.builtin))
print("reduced %d scales %s user calls %d" % (
    len(ddp.reduced), ",".join(sorted(set("%g" % f.value().scale for f in ddp.reduced
                                          if hasattr(f, "value")))), len(calls)))
try:
    import umadv_ddp
    print("guards %d marked %d missed %d held %d" % (len(umadv_ddp.guards),
          sum(len(g.marked) for g in umadv_ddp.guards), sum(g.missed for g in umadv_ddp.guards),
          sum(g.held for g in umadv_ddp.guards)))
except ImportError:
    print("no umadv_ddp")
PY

# prints NAME DESCRIPTION LINE...: ddp.py NAME under umadv run exits 0
# printing the LINEs
prints() {
    name=$1 what=$2
    shift 2
    run_hook "$name" -- python3 "$tmp/ddp.py" "$name"
    printf '%s\n' "$@" >"$tmp/$name.want"
    [ "$(rc_of "$name")" -eq 0 ] && cmp -s "$tmp/$name.want" "$tmp/$name.out"
    ok $? "$what" || { diag "$tmp/$name.out"; diag "$tmp/$name.err"; }
}

prints none "a DDP without a hook of the program's: the guard's allreduce at its first forward, every bucket marked first, DDP's 1/world-size arithmetic" \
    "hook BucketGuard.allreduce builtin None" "reduced 4 scales 0.5 user calls 0" \
    "guards 1 marked 0 missed 4 held 0"
prints user "the program's own hook: registered once, its name kept, called for every bucket behind the guard's mark, its future's value passed on" \
    "hook user_hook builtin None" "reduced 4 scales 1 user calls 4" "guards 1 marked 0 missed 4 held 0"

run_hook builtin -- python3 "$tmp/ddp.py" builtin
[ "$(rc_of builtin)" -eq 0 ] && grep -q "^hook None builtin FP16_COMPRESS$" "$tmp/builtin.out" &&
    grep -q "^guards 1 marked 0 missed 0 held 0$" "$tmp/builtin.out"
ok $? "a built-in hook: kept, and no Python hook added to it" ||
    { diag "$tmp/builtin.out"; diag "$tmp/builtin.err"; }
[ "$(grep -c "built-in communication hook FP16_COMPRESS runs in C++.*UMADV_STAGE=0" "$tmp/builtin.err")" -eq 1 ]
ok $? "...and the user is told once that its buckets cannot be guarded, and what to do" ||
    diag "$tmp/builtin.err"

python3 "$tmp/ddp.py" none >"$tmp/plain.out" 2>"$tmp/plain.err"
printf '%s\n' "hook None builtin None" "reduced 0 scales  user calls 0" "no umadv_ddp" \
    >"$tmp/plain.want"
cmp -s "$tmp/plain.want" "$tmp/plain.out"
ok $? "without umadv run, DDP is PyTorch's: no hook added" ||
    { diag "$tmp/plain.out"; diag "$tmp/plain.err"; }

tap_done
