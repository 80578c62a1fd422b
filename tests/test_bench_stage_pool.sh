#!/bin/sh
# TAP: bench/stage_pool runs on the host backend (no GPU): a row per step
# time, the executor and the simulator each staging the pattern's
# evictions; a bad option is a usage error.
. "${top_srcdir:-.}/tests/tap.sh"

"$builddir/bench/stage_pool" --layers 8 --step-us 0,1000 --iters 2 >"$tmp/out" 2>"$tmp/err"
ok $? "bench/stage_pool --layers 8 --step-us 0,1000 runs" || diag "$tmp/err"

# the rows: step us, then four MiB figures; both sides staged something
awk 'NR > 2 && NF == 5 && $2 > 0 && $4 > 0 { n++ } END { exit n != 2 }' "$tmp/out"
ok $? "a row per step time, the executor's and the simulator's staged bytes above 0" ||
    diag "$tmp/out"

"$builddir/bench/stage_pool" --budget 0 >"$tmp/bad" 2>&1
[ $? -eq 2 ] && grep -q "usage: stage_pool" "$tmp/bad"
ok $? "--budget 0: a usage error" || diag "$tmp/bad"

tap_done
