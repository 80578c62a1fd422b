#!/bin/sh
# TAP: bench/beside_kernels refuses bad options with a usage error; on a
# GPU it prints a row per call whose four times are all measured (the
# fourth from a CUDA context of its own), and
# without one it says so and exits 77 (a skip here, never a pass).
. "${top_srcdir:-.}/tests/tap.sh"

bench="$builddir/bench/beside_kernels"
tap_require "$bench"

"$bench" --waves 0 >"$tmp/bad" 2>&1
[ $? -eq 2 ] && grep -q "invalid --waves '0'" "$tmp/bad" && grep -q "usage: beside_kernels" "$tmp/bad"
ok $? "--waves 0: a usage error naming the option" || diag "$tmp/bad"

"$bench" --size 64M --busy-ms 5 --repeat 1 >"$tmp/out" 2>"$tmp/err"
status=$?
if tap_bench_ran $status; then
    # 15 calls, each with four times in milliseconds above 0
    awk '/GB\/s\)/ { n++; if (gsub(/GB\/s\)/, "&") != 4) bad = 1 } END { exit n != 15 || bad }' "$tmp/out"
    ok $? "a row per call, four settings each" || diag "$tmp/out"
fi

tap_done
