#!/bin/sh
# TAP: umadv run's kernel-launch hooks without a GPU (umadv-run(1), CUDA
# PROGRAMS, ITERATIONS): a program's cudaLaunchKernel calls reach CUDA
# unchanged (the same answers with and without umadv) and are followed as
# the launch sequence: one that never repeats is told at exit to mark its
# iterations with an NVTX range; a loop, a short program, or
# --iteration-source nvtx, is not.
. "${top_srcdir:-.}/tests/tap.sh"
tap_require "$umadv"
prog=$builddir/tests/run_launch
tap_require "$prog"
unset UMADV_ITERATION_SOURCE UMADV_RUN_SUMMARY UMADV_INJECT_LIBRARY NVTX_INJECTION64_PATH \
    LD_PRELOAD
if nm -D "$builddir/.libs/libumadv_inject.so" 2>/dev/null | grep -q '__asan'; then
    echo "1..0 # SKIP sanitizer build: the injection library cannot be preloaded"
    exit 0
fi
UMADV_LOG=warn # the hint is a warning
hint="no iteration found: 300 launches repeat no sequence"

run() { # NAME ARGS...: umadv run -q ARGS
    name=$1
    shift
    "$umadv" run -q "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}

"$prog" random 300 >"$tmp/plain.out" 2>"$tmp/plain.err"
ok $? "run_launch runs without umadv" || diag "$tmp/plain.err"

run random -- "$prog" random 300
[ "$(rc_of random)" -eq 0 ] && cmp -s "$tmp/plain.out" "$tmp/random.out"
ok $? "under umadv run every launch reaches CUDA, answered as without umadv" ||
    { diag "$tmp/random.out"; diag "$tmp/random.err"; }
grep -q "$hint (UMADV_ITERATION_SOURCE=auto); mark each iteration with an NVTX range named \"iteration\"" \
    "$tmp/random.err"
ok $? "launches that never repeat: told at exit how to mark the iterations" ||
    diag "$tmp/random.err"

run loop -- "$prog" loop 300
[ "$(rc_of loop)" -eq 0 ] && ! grep -q "no iteration found" "$tmp/loop.err"
ok $? "a loop of launches: not told" || diag "$tmp/loop.err"

run short -- "$prog" random 30
[ "$(rc_of short)" -eq 0 ] && ! grep -q "no iteration found" "$tmp/short.err"
ok $? "30 launches: too short to tell, not told" || diag "$tmp/short.err"

run nvtx --iteration-source nvtx -- "$prog" random 300
[ "$(rc_of nvtx)" -eq 0 ] && ! grep -q "no iteration found" "$tmp/nvtx.err"
ok $? "--iteration-source nvtx: launches not followed, not told" || diag "$tmp/nvtx.err"

tap_done
