#!/bin/sh
# TAP: bench/discard_copy refuses bad options with a usage error; on a GPU
# it prints a row per way, every page the CPU read counted once (with
# --behind the stream ways, each with its discard call's time),
# and without one it says so and exits 77 (a skip here, never a pass).
. "${top_srcdir:-.}/tests/tap.sh"

bench="$builddir/bench/discard_copy"
tap_require "$bench"

"$bench" --size 3000 >"$tmp/bad" 2>&1
[ $? -eq 2 ] && grep -q "invalid --size '3000'" "$tmp/bad" && grep -q "usage: discard_copy" "$tmp/bad"
ok $? "--size 3000: a usage error naming the option" || diag "$tmp/bad"

"$bench" --ranges 0 >"$tmp/bad" 2>&1
[ $? -eq 2 ] && grep -q "invalid --ranges '0'" "$tmp/bad"
ok $? "--ranges 0: a usage error naming the option" || diag "$tmp/bad"

for behind in 0 -5 abc 10us 1000001; do
    "$bench" --behind "$behind" >"$tmp/bad" 2>&1
    [ $? -eq 2 ] && grep -q "invalid --behind '$behind'" "$tmp/bad" &&
        grep -q "usage: discard_copy.*\[--behind US\]" "$tmp/bad"
    ok $? "--behind $behind: a usage error naming the option" || diag "$tmp/bad"
done

"$bench" --behind >"$tmp/bad" 2>&1
[ $? -eq 2 ] && grep -q "unknown option '--behind'" "$tmp/bad"
ok $? "--behind without its value: a usage error" || diag "$tmp/bad"

"$bench" --size 2M --ranges 4 --rounds 2 --poison --trip >"$tmp/out" 2>"$tmp/err"
status=$?
if tap_bench_ran $status; then
    # two rows, each of 8 ranges whose 512 pages each are counted once
    awk '$1 ~ /^(copy|populate\+copy)$/ { n++; s = 0; for (i = 5; i <= NF; i++) s += $i
                                          if ($2 != 8 || s != 8 * 512) bad = 1 }
         END { exit n != 2 || bad }' "$tmp/out"
    ok $? "a row per way, every page the CPU read counted once" || diag "$tmp/out"

    "$bench" --size 2M --ranges 4 --rounds 2 --poison --behind 100 >"$tmp/out" 2>"$tmp/err"
    ok $? "--behind 100 runs on the GPU" || diag "$tmp/err"
    # the stream ways' rows, pages counted once, a discard time last
    awk '$1 ~ /^(idle|behind|after-discard|populate-behind|beside)$/ {
             n++; s = 0; for (i = 5; i < NF; i++) s += $i
             if ($2 != 8 || s != 8 * 512 || $NF <= 0) bad = 1 }
         END { exit n != 5 || bad }' "$tmp/out"
    ok $? "--behind: a row per stream way (idle, behind, after-discard, populate-behind, beside), \
every page counted once" || diag "$tmp/out"
fi

tap_done
