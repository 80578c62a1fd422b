#!/bin/sh
# TAP: examples/ddp_train.py's start on a rank whose umadv context cannot
# be made, without a GPU: a stand-in torch (tests/ddp/torch, no CUDA
# work) lets the script reach the real libumadv through --lib, which
# fails on a bad per-rank UMADV_BUDGET entry and on LOCAL_RANK's device
# (1023: none has it). The rank must exit 2 before it joins the process
# group (the stand-in's init_process_group fails the test if called),
# libumadv's error and the script's must name the rank and the reason.
# Skipped without python3, and in sanitizer builds (python would have to
# preload the ASan runtime for libumadv.so).
. "${top_srcdir:-.}/tests/tap.sh"
script=$srcdir/examples/ddp_train.py
lib=$builddir/.libs/libumadv.so

if [ -n "${SANITIZERS:-}" ]; then
    echo "1..0 # SKIP sanitizer build ($SANITIZERS)"
    exit 0
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "1..0 # SKIP no python3"
    exit 0
fi
if [ ! -f "$lib" ]; then
    echo "Bail out! $lib is not built"
    exit 1
fi
unset UMADV_POLICY UMADV_BUDGET UMADV_DEVICE UMADV_MAX_MANAGED RANK LOCAL_RANK WORLD_SIZE

# The torch ddp_train.py touches before its context: the allocator swap,
# the device, the flags; any collective is a failure of the test.
mkdir -p "$tmp/py/torch"
cat >"$tmp/py/torch/__init__.py" <<'PY'
import sys


class _Flags:
    pass


class backends:
    cudnn = _Flags()


class _Memory:
    @staticmethod
    def CUDAPluggableAllocator(path, malloc, free):
        return (path, malloc, free)

    @staticmethod
    def change_current_allocator(allocator):
        pass


class cuda:
    memory = _Memory

    @staticmethod
    def set_device(device):
        pass


class distributed:
    @staticmethod
    def init_process_group(*args, **kwargs):
        sys.stderr.write("stand-in torch: init_process_group called\n")
        sys.exit(9)
PY

# rank NAME VAR=VALUE...: ddp_train.py --lib as rank 1 of 2, with VARs set
rank() {
    name=$1
    shift
    env PYTHONPATH="$tmp/py" RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 "$@" \
        python3 "$script" --lib "$lib" --iters 2 >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}

echo "1..4"

rank budget UMADV_DEVICE=0 UMADV_BUDGET=12G,6X
[ "$(cat "$tmp/budget.rc")" -eq 2 ] &&
    grep -q '^umadv\[rank 1\]: error: UMADV_BUDGET=12G,6X: entry 1 ("6X") of the per-rank list: not a size' \
        "$tmp/budget.err" &&
    grep -q "^umadv\[rank 1\]: error: the process's umadv context cannot be made (invalid parameter)" \
        "$tmp/budget.err"
ok $? "a bad per-rank budget: libumadv names the rank, the knob and the entry" ||
    diag "$tmp/budget.err"

grep -q '^ddp_train.py\[rank 1\]: no umadv context on GPU 1 (umadv_torch_context: invalid parameter;.*this rank stops before joining the job' \
    "$tmp/budget.err" && ! grep -q init_process_group "$tmp/budget.err"
ok $? "the rank exits 2 before the process group, saying which rank and why" ||
    diag "$tmp/budget.err"

rank device LOCAL_RANK=1023
[ "$(cat "$tmp/device.rc")" -eq 2 ] && grep -q '^umadv\[rank 1\]: error: ' "$tmp/device.err" &&
    grep -q '^ddp_train.py\[rank 1\]: no umadv context on GPU 1023 (umadv_torch_context: ' \
        "$tmp/device.err" && ! grep -q init_process_group "$tmp/device.err"
ok $? "no device for LOCAL_RANK 1023 (UMADV_DEVICE's default): the same clean exit" ||
    diag "$tmp/device.err"

PYTHONPATH="$tmp/py" RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 python3 "$script" --native --iters 2 \
    >"$tmp/native.out" 2>"$tmp/native.err"
[ $? -eq 9 ] && grep -q 'init_process_group called' "$tmp/native.err"
ok $? "--native reaches the process group, which the stand-in fails (its check can fail)" ||
    diag "$tmp/native.err"
