#!/bin/sh
# TAP: the Python start-up hook in profile mode (UMADV_PROFILE_OUTPUT),
# over a stand-in for PyTorch (tests/fake_torch), without a GPU or torch:
# the global module hooks declare the user's FILE:LINE that called each
# module (the first frame outside torch, installed packages and the hook)
# as the allocations' call site, give the enclosing call's back when a
# module returns, and clear it after the outermost (also when forward
# raises); the declaration reaches libumadv's umadv_set_alloc_site
# through ctypes; outside profile mode there are no such hooks; under
# --seconds PyTorch allocates through the injection library. The real
# thing: test_alloc_site_gpu.sh.
. "${top_srcdir:-.}/tests/tap.sh"
tap_fake_torch

cat >"$tmp/user.py" <<'PY'
import sitecustomize
import torch
import torch.nn as nn

sites = sitecustomize._umadv[3]
declared = []
real = sites.set_site


def spy(site):
    declared.append(site.decode() if site is not None else None)
    return real(site)


sites.set_site = spy


class Block(nn.Module):
    def __init__(self):
        nn.Module.__init__(self, nn.Module())

    def forward(self, x):
        return self.children[0](x)  # line 23: the inner call


class Bad(nn.Module):
    def forward(self, x):
        raise ValueError("no")


net = nn.Module(Block())
net(torch.Tensor(4, 3))  # line 32
print("declared %s" % declared)
del declared[:]
try:
    Bad()(torch.Tensor(1))  # line 36
except ValueError:
    pass
print("raised %s" % declared)
lib = sitecustomize._umadv[0].lib
print("direct %d %d" % (lib.umadv_set_alloc_site(b"x.py:1"), lib.umadv_set_alloc_site(b"y" * 300)))
PY

UMADV_PROFILE_OUTPUT=$tmp/unused.umt run_hook sites -- python3 user.py
printf '%s\n' "declared ['user.py:32', 'user.py:23', 'user.py:32', None]" \
    "raised ['user.py:36', None]" "direct 0 -1" >"$tmp/sites.want"
[ "$(rc_of sites)" -eq 0 ] && cmp -s "$tmp/sites.want" "$tmp/sites.out"
ok $? "profile mode: each module's caller line declared (the inner call's, then the outer's back), cleared after the outermost and after one that raises" ||
    { diag "$tmp/sites.out"; diag "$tmp/sites.err"; }
grep -q "^direct 0 -1$" "$tmp/sites.out"
ok $? "...through libumadv's umadv_set_alloc_site: a site taken, one of 300 bytes refused" ||
    diag "$tmp/sites.out"

cat >"$tmp/plain.py" <<'PY'
import sitecustomize
import torch
module = torch.nn.modules.module
print("sites %s pre %d post %d" % (sitecustomize._umadv[3], len(module._global_forward_pre_hooks),
                                   len(module._global_forward_hooks)))
print("allocator %s %s %s" % torch.cuda.memory._swapped[0].names)
PY
run_hook plain --iteration-source optimizer -- python3 plain.py
grep -q "^sites None pre 0 post 0$" "$tmp/plain.out" &&
    grep -q "^allocator .*/libumadv.so[.0-9]* umadv_torch_malloc umadv_torch_free$" "$tmp/plain.out"
ok $? "outside profile mode: no call-site hooks, libumadv's allocator" ||
    { diag "$tmp/plain.out"; diag "$tmp/plain.err"; }

UMADV_PROFILE_OUTPUT=$tmp/unused.umt UMADV_PROFILE_SECONDS=5 run_hook window \
    --iteration-source optimizer -- python3 plain.py
grep -q "^sites <sitecustomize._AllocSites object at .*> pre 1 post 1$" "$tmp/window.out" &&
    grep -q "^allocator .*/libumadv_inject.so umadv_inject_torch_malloc umadv_inject_torch_free$" "$tmp/window.out"
ok $? "profile mode with --seconds: PyTorch allocates through the injection library, whose window sees every allocation" ||
    { diag "$tmp/window.out"; diag "$tmp/window.err"; }

tap_done
