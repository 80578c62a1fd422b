#!/bin/sh
# TAP: examples/torch_train.py, PyTorch training on umadv's allocator
# entry points, on a GPU. A small ResNet-50 (batch 8, 64x64 images, 4
# iterations) must give bitwise the same losses on umadv memory as on
# PyTorch's own allocator, learn, make every tensor a umadv block (the
# default --alloc tensor), and leave a trace that `umadv report` reads,
# recorded on the device PyTorch saw, with one step per kernel and step
# durations from the timing pass. --alloc pool (a MemPool of umadv
# segments) must keep every byte PyTorch holds in umadv, backward too.
# Skipped as a whole without python3, torch, torchvision or a CUDA device.
. "${top_srcdir:-.}/tests/tap.sh"
script=$srcdir/examples/torch_train.py
lib=$builddir/.libs/libumadv.so
umadv=$builddir/tools/umadv/umadv

# libumadv.so of a sanitizer build needs the ASan runtime loaded first, and
# PyTorch and CUDA under ASan are not what this test is about.
if [ -n "${SANITIZERS:-}" ]; then
    echo "1..0 # SKIP sanitizer build ($SANITIZERS): python would have to preload the ASan runtime for libumadv.so"
    exit 0
fi
if ! python3 -c 'import torch, torchvision, sys; sys.exit(not torch.cuda.is_available())' \
        >/dev/null 2>&1; then
    echo "1..0 # SKIP no python3 with torch, torchvision and a CUDA device"
    exit 0
fi
if [ ! -f "$lib" ] || [ ! -x "$umadv" ]; then
    echo "Bail out! $lib or $umadv is not built"
    exit 1
fi

unset UMADV_POLICY UMADV_BUDGET UMADV_MAX_MANAGED

small="--model resnet50 --batch 8 --image-size 64 --iters 4 --lib $lib"

echo "1..13"
# Python's errors end its output: show the end.
diag() { # FILE
    tail -n 30 "$1" | sed 's/^/# /'
}

# shellcheck disable=SC2086 # small is a word list on purpose
python3 "$script" $small --both >"$tmp/both.out" 2>"$tmp/both.err"
ok $? "native then umadv in one process runs" || diag "$tmp/both.err"
grep -q '^losses bitwise identical: yes$' "$tmp/both.out"
ok $? "losses are bitwise identical with and without umadv" || diag "$tmp/both.out"

# shellcheck disable=SC2086
# Under plan (its first pass, which evicts nothing, is the profile of a
# model that fits: its kernel records time the steps where it moved
# little, else a timing pass does; umadv(7) THE TIMING PASS).
python3 "$script" $small --umadv --policy plan --trace "$tmp/t.umt" >"$tmp/um.out" 2>"$tmp/um.err"
ok $? "umadv alone, with a trace, runs" || diag "$tmp/um.err"
first=$(sed -n 's/^ *plan  *iter  *0 .* loss \([0-9.]*\) .*/\1/p' "$tmp/um.out")
last=$(sed -n 's/^ *plan  *iter  *3 .* loss \([0-9.]*\) .*/\1/p' "$tmp/um.out")
awk -v a="$first" -v b="$last" 'BEGIN { exit !(a != "" && b != "" && b < a) }'
ok $? "the loss falls ($first -> $last)"
blocks=$(sed -n 's/.*umadv: managed now .* in \([0-9]*\) blocks.*/\1/p' "$tmp/um.out")
[ "${blocks:-0}" -gt 300 ]
ok $? "every tensor is a umadv block (${blocks:-?} live: weights, grads, momenta)" ||
    diag "$tmp/um.out"

"$umadv" report "$tmp/t.umt" >"$tmp/report.out" 2>"$tmp/report.err"
ok $? "umadv report reads the trace" || diag "$tmp/report.err"
gpu=$(sed -n '1s/^\([^,]*\),.*/\1/p' "$tmp/um.out")
grep -q "^device: *$gpu," "$tmp/report.out"
ok $? "the trace names the device PyTorch ran on ($gpu)" || diag "$tmp/report.out"
steps=$(sed -n 's/^steps: *\([0-9]*\) (kernel \([0-9]*\),.*/\1 \2/p' "$tmp/report.out")
set -- $steps
[ "${1:-0}" -gt 100 ] && [ "$1" = "${2:-}" ]
ok $? "every step is a kernel launch, and a ResNet-50 iteration has hundreds ($steps)"
grep -Eq '^trace .*source=".*step durations from (a (timing|first) pass|two passes)' "$tmp/t.umt"
ok $? "its step durations are measured (a timing pass, a first pass that moved little, or two)"

# Policies one after another in one process, under a budget of 60% of
# the footprint: the plan replays automatic (kernel-launch) steps, demand
# faults; both from the same weights, so both give native's losses.
peak=$(sed -n 's/.*umadv: managed now .* (peak \([0-9.]*\) GiB).*/\1/p' "$tmp/um.out")
budget=$(awk -v g="${peak:-0}" 'BEGIN { printf "%d", g * 1073741824 * 0.6 }')
# shellcheck disable=SC2086
UMADV_BUDGET=$budget python3 "$script" $small --iters 6 --both --policies oracle,demand,plan \
    >"$tmp/pol.out" 2>"$tmp/pol.err"
ok $? "--policies oracle,demand,plan under a budget of $budget bytes runs" ||
    diag "$tmp/pol.err"
runs=$(awk '$1 == "oracle" || $1 == "demand" || $1 == "plan" { if ($2 ~ /^[0-9.]+$/) n++ }
            END { print n + 0 }' "$tmp/pol.out")
grep -q '^losses bitwise identical: yes$' "$tmp/pol.out" && [ "$runs" -eq 3 ]
ok $? "every policy's losses are native's, bit for bit ($runs runs in the table)" ||
    diag "$tmp/pol.out"

# A batch of its own each iteration, copied from pinned host memory into
# new tensors (--loader): under the budget the copies land in blocks over
# memory umadv discarded or staged, and must keep what they wrote.
# shellcheck disable=SC2086
UMADV_BUDGET=$budget python3 "$script" $small --iters 6 --loader --both --policies plan \
    >"$tmp/loader.out" 2>"$tmp/loader.err"
grep -q '^losses bitwise identical: yes$' "$tmp/loader.out"
ok $? "--loader: a batch copied in each iteration, under the budget: native's losses" ||
    diag "$tmp/loader.out"

# shellcheck disable=SC2086
python3 "$script" $small --alloc pool --umadv >"$tmp/pool.out" 2>"$tmp/pool.err"
grep -q 'PyTorch memory outside umadv 0 bytes' "$tmp/pool.out"
ok $? "--alloc pool: every byte PyTorch reserved is umadv memory, backward included" ||
    diag "$tmp/pool.out"

[ "$failed" -eq 0 ]
