#!/bin/sh
# TAP: PyTorch under umadv run on a GPU (umadv-run(1), PYTORCH): a small
# conv net (examples/plain_train.py) with cudnn.benchmark = True trains
# with the losses, bit for bit, of a plain run with cuDNN's heuristics
# (benchmark off: what cuDNN picks under umadv's allocator), and within
# rounding of a plain run that autotunes; empty_cache and memory_stats
# answer; a loop with no optimizer has its iterations found from its
# module calls and planned. Skipped without torch and a CUDA device.
. "${top_srcdir:-.}/tests/tap.sh"
tap_require "$umadv"
unset UMADV_POLICY UMADV_BUDGET UMADV_MAX_MANAGED UMADV_ROUTE_MALLOC UMADV_RUN_SUMMARY \
    UMADV_INJECT_LIBRARY UMADV_ITERATION_RANGE UMADV_ITERATION_SOURCE UMADV_PROFILE_ITERATION \
    NVTX_INJECTION64_PATH LD_PRELOAD
if nm -D "$builddir/.libs/libumadv_inject.so" 2>/dev/null | grep -q '__asan'; then
    echo "1..0 # SKIP sanitizer build: Python cannot load the libraries without the ASan runtime"
    exit 0
fi
if ! python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' >/dev/null 2>&1; then
    echo "1..0 # SKIP no torch with a CUDA device"
    exit 0
fi
script=$srcdir/examples/plain_train.py

plain() { # NAME ARGS...
    name=$1
    shift
    python3 "$script" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}
run() { # NAME [OPTIONS] -- ARGS...: umadv run ... python3 plain_train.py
    name=$1
    shift
    "$umadv" run -q --summary "$tmp/$name.sum" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}
key() { # NAME KEY
    sed -n "s/^$2 //p" "$tmp/$1.sum" | head -n 1
}

plain heur --iters 6
plain tuned --iters 6 --cudnn-benchmark
[ "$(rc_of heur)" -eq 0 ] && [ "$(rc_of tuned)" -eq 0 ]
ok $? "plain_train.py runs without umadv, with and without cudnn.benchmark" ||
    { diag "$tmp/heur.err"; diag "$tmp/tuned.err"; }

run bench -- python3 "$script" --iters 6 --cudnn-benchmark --memory
[ "$(rc_of bench)" -eq 0 ] && cmp -s "$tmp/heur.out" "$tmp/bench.out"
ok $? "cudnn.benchmark = True under umadv run: it trains, the losses bit for bit those of cuDNN's heuristics" ||
    { diag "$tmp/bench.out"; diag "$tmp/bench.err"; }

# Autotuned algorithms add in another order: the losses agree to rounding.
paste -d ' ' "$tmp/tuned.out" "$tmp/bench.out" | awk '
    { a = $4; b = $9; d = a - b; if (d < 0) d = -d; if (a < 0) a = -a
      if (d > 1e-4 * (a + 1e-6)) bad = 1; n++ }
    END { exit (bad || n != 6) }'
ok $? "...and within 1e-4 of a plain run that autotunes" ||
    { diag "$tmp/tuned.out"; diag "$tmp/bench.out"; }

grep -q "^memory: allocated [1-9][0-9]* reserved [1-9][0-9]* peak [1-9][0-9]* stats [1-9][0-9]* cudnn.benchmark True$" \
    "$tmp/bench.err" && [ "$(key bench iterations_from)" = optimizer ] && [ "$(key bench plan)" = ok ]
ok $? "empty_cache every iteration, memory_stats and the memory queries answer from umadv's pool; planned at the optimizer's steps" ||
    { diag "$tmp/bench.err"; diag "$tmp/bench.sum"; }

plain byhand --iters 14 --no-optimizer
run loop -- python3 "$script" --iters 14 --no-optimizer
its=$(key loop iterations)
[ "$(rc_of loop)" -eq 0 ] && cmp -s "$tmp/byhand.out" "$tmp/loop.out" &&
    [ "$(key loop iterations_from)" = launches ] && [ "${its:-0}" -ge 8 ] &&
    [ "$(key loop plan)" = ok ]
ok $? "a loop with no optimizer: the same losses, $its iterations found from its module calls, planned" ||
    { diag "$tmp/loop.err"; diag "$tmp/loop.sum"; }

tap_done
