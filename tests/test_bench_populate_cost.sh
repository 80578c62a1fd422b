#!/bin/sh
# TAP: bench/populate_cost refuses bad options with a usage error; on a
# GPU it prints the baseline and a row per state, call and piece size,
# every GPU time measured, and without one it says so and exits 77 (a
# skip here, never a pass).
. "${top_srcdir:-.}/tests/tap.sh"

bench="$builddir/bench/populate_cost"
tap_require "$bench"

"$bench" --call 3M >"$tmp/bad" 2>&1
[ $? -eq 2 ] && grep -q "invalid --call '3M'" "$tmp/bad" && grep -q "usage: populate_cost" "$tmp/bad"
ok $? "--call 3M: a usage error naming the option" || diag "$tmp/bad"

"$bench" --repeat 0 >"$tmp/bad" 2>&1
[ $? -eq 2 ] && grep -q "invalid --repeat '0'" "$tmp/bad"
ok $? "--repeat 0: a usage error naming the option" || diag "$tmp/bad"

"$bench" --size 64M --call 2M,32M --repeat 1 >"$tmp/out" 2>"$tmp/err"
status=$?
if tap_bench_ran $status; then
    # the baseline, 3 states x 2 piece sizes x 2 calls, and "none" for two states:
    # 15 rows, each with its kernel's GPU time above 0
    awk '$1 ~ /^(resident|discarded|host)$/ { n++; if (!($(NF - 2) + 0 > 0)) bad = 1 }
         END { exit n != 15 || bad }' "$tmp/out"
    ok $? "a row per state, call and piece size, each kernel timed" || diag "$tmp/out"
fi

tap_done
