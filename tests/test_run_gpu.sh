#!/bin/sh
# TAP: umadv run on the examples, on a GPU (umadv-run(1)). jacobi (CUDA C
# on managed memory, no umadv code) and plain_train.py (PyTorch, no umadv
# code) must print exactly what they print without umadv, under the
# default policy, under a budget, with a budget too small to plan (time,
# never data) and with cudaMalloc routed; the summary must show the
# iterations umadv found, a plan and the memory it served. Skipped as a
# whole without a CUDA device; the PyTorch half without torch.
. "${top_srcdir:-.}/tests/tap.sh"
tap_jacobi_on_gpu

small="--size 1024 --iters 20"

# plain NAME PROGRAM ARGS...: without umadv; run NAME [OPTIONS] -- PROGRAM ARGS
plain() {
    name=$1
    shift
    "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}
run() {
    name=$1
    shift
    "$umadv" run "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}

same() { # NAME REFERENCE LABEL
    [ "$(rc_of "$1")" -eq 0 ] && cmp -s "$tmp/$2.out" "$tmp/$1.out"
    ok $? "$3: output identical to the plain run" || { diag "$tmp/$1.out"; diag "$tmp/$1.err"; }
}

# ---- jacobi ------------------------------------------------------------

# shellcheck disable=SC2086 # small is a word list
plain jplain "$jacobi" $small
ok "$(rc_of jplain)" "jacobi runs without umadv" || diag "$tmp/jplain.err"

# shellcheck disable=SC2086
run jrun -- "$jacobi" $small
same jrun jplain "umadv run jacobi"
grep -q "iterations 20, .*plan: ok" "$tmp/jrun.err" &&
    grep -q "0 cudaMalloc routed, 2 cudaMallocManaged managed" "$tmp/jrun.err"
ok $? "its summary: 20 NVTX iterations, a plan, both grids from umadv's pool" ||
    diag "$tmp/jrun.err"

# The two grids: 2 x 4 MiB, both touched by every sweep.
# shellcheck disable=SC2086
run jdemand --budget 8M --policy demand -- "$jacobi" $small
same jdemand jplain "--budget 8M --policy demand"

# shellcheck disable=SC2086
run jsmall --budget 4M -- "$jacobi" $small
same jsmall jplain "a budget below one sweep's grids"
grep -q "plan: budget too small for a step" "$tmp/jsmall.err"
ok $? "the summary says why there is no plan" || diag "$tmp/jsmall.err"

# shellcheck disable=SC2086
plain jdev "$jacobi" $small --alloc device
# shellcheck disable=SC2086
run jroute --managed-malloc -- "$jacobi" $small --alloc device
[ "$(rc_of jdev)" -eq 0 ] && cmp -s "$tmp/jplain.out" "$tmp/jdev.out"
ok $? "jacobi on cudaMalloc memory computes what it does on managed memory"
same jroute jdev "--managed-malloc on cudaMalloc memory"
grep -q "2 cudaMalloc routed" "$tmp/jroute.err"
ok $? "--managed-malloc routed both cudaMalloc grids" || diag "$tmp/jroute.err"

# shellcheck disable=SC2086
run jrange --iteration-range sweep -- "$jacobi" $small --range sweep
same jrange jplain "--iteration-range sweep"
grep -q "iterations 20," "$tmp/jrange.err"
ok $? "iterations found from a range of another name" || diag "$tmp/jrange.err"

# ---- the interposed calls ------------------------------------------------

alloc=$builddir/tests/run_alloc
plain aplain "$alloc"
run arun -- "$alloc"
run aroute --managed-malloc -- "$alloc"
grep -q '^managed round trip intact$' "$tmp/aplain.out" &&
    grep -q '^device round trip intact$' "$tmp/aplain.out"
ok $? "run_alloc runs without umadv" || diag "$tmp/aplain.out"
same arun aplain "umadv run run_alloc (cudaMallocManaged from umadv's pool)"
grep -q '^cudaIpcGetMemHandle 801$' "$tmp/aroute.out" &&
    grep -q 'cudaIpcGetMemHandle(.*managed memory' "$tmp/aroute.err" &&
    grep -v '^cudaIpcGetMemHandle' "$tmp/aplain.out" >"$tmp/aplain.rest" &&
    grep -v '^cudaIpcGetMemHandle' "$tmp/aroute.out" >"$tmp/aroute.rest" &&
    cmp -s "$tmp/aplain.rest" "$tmp/aroute.rest"
ok $? "--managed-malloc: every call as without umadv but IPC, refused with an error naming it" ||
    { diag "$tmp/aroute.out"; diag "$tmp/aroute.err"; }
grep -q "2 cudaMalloc routed, 1 cudaMallocManaged managed" "$tmp/aroute.err"
ok $? "the summary counts cudaMalloc and cudaMallocAsync routed" || diag "$tmp/aroute.err"

# ---- PyTorch -------------------------------------------------------------

script=$srcdir/examples/plain_train.py
if python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' >/dev/null 2>&1; then
    plain pplain python3 "$script" --iters 6
    ok "$(rc_of pplain)" "plain_train.py runs without umadv" || diag "$tmp/pplain.err"
    run prun -- python3 "$script" --iters 6
    same prun pplain "umadv run plain_train.py"
    grep -q "iterations 6, .*plan: ok" "$tmp/prun.err"
    ok $? "its summary: an iteration at every optimizer step, a plan" || diag "$tmp/prun.err"
    peak=$(sed -n 's/.*managed peak \([0-9.]*\) GiB.*/\1/p' "$tmp/prun.err")
    budget=$(awk -v g="${peak:-0}" 'BEGIN { printf "%d", g * 1073741824 * 0.6 }')
    run pbudget --budget "$budget" -- python3 "$script" --iters 6
    same pbudget pplain "umadv run plain_train.py under 60% of its managed peak"
else
    for what in "plain_train.py runs" "umadv run plain_train.py" "its summary" "under a budget"; do
        n=$((n + 1))
        echo "ok $n # SKIP no torch with a CUDA device: $what"
    done
fi

tap_done
