#!/bin/sh
# TAP: the calls that cannot take managed memory under umadv run
# --managed-malloc (umadv-run(1), CUDA PROGRAMS): cudaIpcGetMemHandle and
# cudaMemPoolExportPointer on routed cudaMalloc and cudaMallocAsync blocks
# return cudaErrorNotSupported with an error naming the call, and every
# other call answers as without umadv. Without a GPU, every call fails as
# it does without umadv.
. "${top_srcdir:-.}/tests/tap.sh"
tap_require "$umadv"
refused=$builddir/tests/run_refused
tap_require "$refused"
unset UMADV_ROUTE_MALLOC UMADV_RUN_SUMMARY UMADV_INJECT_LIBRARY NVTX_INJECTION64_PATH LD_PRELOAD
if nm -D "$builddir/.libs/libumadv_inject.so" 2>/dev/null | grep -q '__asan'; then
    echo "1..0 # SKIP sanitizer build: the injection library cannot be preloaded"
    exit 0
fi

"$refused" >"$tmp/plain.out" 2>"$tmp/plain.err"
ok $? "run_refused runs without umadv" || diag "$tmp/plain.err"
"$umadv" run -q --managed-malloc -- "$refused" >"$tmp/routed.out" 2>"$tmp/routed.err"
rc=$?

if ! grep -q '^cudaMalloc 0$' "$tmp/plain.out"; then
    [ "$rc" -eq 0 ] && cmp -s "$tmp/plain.out" "$tmp/routed.out"
    ok $? "no GPU: every call fails as without umadv" || diag "$tmp/routed.out"
    tap_done
    exit $?
fi

grep -q '^cudaIpcGetMemHandle 801$' "$tmp/routed.out" &&
    grep -q 'cudaIpcGetMemHandle(.*managed memory.*CUDA IPC cannot share' "$tmp/routed.err"
ok $? "cudaIpcGetMemHandle on a routed cudaMalloc block: refused, the call named" ||
    { diag "$tmp/routed.out"; diag "$tmp/routed.err"; }
grep -q '^cudaMemPoolExportPointer 801$' "$tmp/routed.out" &&
    grep -q 'cudaMemPoolExportPointer(.*managed memory.*no memory pool holds' "$tmp/routed.err"
ok $? "cudaMemPoolExportPointer on a routed cudaMallocAsync block: refused, the call named" ||
    { diag "$tmp/routed.out"; diag "$tmp/routed.err"; }
grep -v -e '^cudaIpcGetMemHandle' -e '^cudaMemPoolExportPointer' "$tmp/plain.out" >"$tmp/plain.rest"
grep -v -e '^cudaIpcGetMemHandle' -e '^cudaMemPoolExportPointer' "$tmp/routed.out" >"$tmp/routed.rest"
[ "$rc" -eq 0 ] && cmp -s "$tmp/plain.rest" "$tmp/routed.rest"
ok $? "every other call answers as without umadv" || diag "$tmp/routed.out"

tap_done
