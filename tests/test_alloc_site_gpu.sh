#!/bin/sh
# TAP: call sites of a PyTorch program under umadv profile, on a GPU
# (umadv-profile(1), CALL SITES): examples/plain_train.py's activations
# are named by the script's line that called the network, not by a frame
# of PyTorch; under --seconds its allocations go through the injection
# library and the window is saved. Skipped without torch and a CUDA
# device.
. "${top_srcdir:-.}/tests/tap.sh"
tap_require "$umadv"
unset UMADV_POLICY UMADV_BUDGET UMADV_MAX_MANAGED UMADV_ROUTE_MALLOC UMADV_RUN_SUMMARY \
    UMADV_INJECT_LIBRARY UMADV_ITERATION_RANGE UMADV_ITERATION_SOURCE UMADV_PROFILE_ITERATION \
    UMADV_PROFILE_OUTPUT UMADV_PROFILE_SECONDS NVTX_INJECTION64_PATH LD_PRELOAD
if nm -D "$builddir/.libs/libumadv_inject.so" 2>/dev/null | grep -q '__asan'; then
    echo "1..0 # SKIP sanitizer build: Python cannot load the libraries without the ASan runtime"
    exit 0
fi
if ! python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' >/dev/null 2>&1; then
    echo "1..0 # SKIP no torch with a CUDA device"
    exit 0
fi
script=$srcdir/examples/plain_train.py
line=$(grep -n "cross_entropy(net(x), y)" "$script" | cut -d: -f1)

"$umadv" profile -q -o "$tmp/p.umt" -- python3 "$script" --iters 4 >"$tmp/p.out" 2>"$tmp/p.err"
[ $? -eq 0 ] && grep -q "site=\"[^\"]*plain_train.py:$line\"" "$tmp/p.umt"
ok $? "the network's activations are named by the script's line that called it (plain_train.py:$line)" ||
    { diag "$tmp/p.err"; grep -o 'site="[^"]*"' "$tmp/p.umt" | sort | uniq -c | head -n 20 |
          sed 's/^/# /'; }

"$umadv" profile -o "$tmp/s.umt" --seconds 600 -- python3 "$script" --iters 4 \
    >"$tmp/s.out" 2>"$tmp/s.err"
[ $? -eq 0 ] && grep -q "profile: saved$" "$tmp/s.err" &&
    grep -q "site=\"[^\"]*plain_train.py:$line\"" "$tmp/s.umt"
ok $? "--seconds: PyTorch's allocations begin the window, which is saved at exit with its call sites" ||
    { diag "$tmp/s.out"; diag "$tmp/s.err"; }

tap_done
