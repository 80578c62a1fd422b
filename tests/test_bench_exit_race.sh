#!/bin/sh
# TAP: bench/exit_race refuses bad options with a usage error; on a GPU
# it prints a row per way (none, monitor, tight, umadv), each run counted
# once, and the children without a thread, and those that leave a umadv
# replay running (its exit handler stops it: umadv(7), PROCESS EXIT), all
# exit 0; without one it says so and exits 77 (a skip here, never a pass).
. "${top_srcdir:-.}/tests/tap.sh"

bench="$builddir/bench/exit_race"
tap_require "$bench"

for runs in 0 -1 abc 100001; do
    "$bench" --runs "$runs" >"$tmp/bad" 2>&1
    [ $? -eq 2 ] && grep -q -- "--runs: '$runs' is not a number from 1 to 100000" "$tmp/bad"
    ok $? "--runs $runs: a usage error naming the option" || diag "$tmp/bad"
done

"$bench" --at-once 65 >"$tmp/bad" 2>&1
[ $? -eq 2 ] && grep -q -- "--at-once: '65' is not a number from 1 to 64" "$tmp/bad"
ok $? "--at-once 65: a usage error naming the option" || diag "$tmp/bad"

"$bench" --runs >"$tmp/bad" 2>&1
[ $? -eq 2 ] && grep -q "usage: exit_race \[--runs N\] \[--at-once N\]" "$tmp/bad"
ok $? "--runs without its value: the usage" || diag "$tmp/bad"

"$bench" --child sideways >"$tmp/bad" 2>&1
[ $? -eq 2 ] && grep -q "exit_race: --child: 'sideways' is no way (none, monitor, tight, umadv)" "$tmp/bad"
ok $? "--child with a way it does not know: an error naming it" || diag "$tmp/bad"

"$bench" --runs 6 --at-once 3 >"$tmp/out" 2>"$tmp/err"
status=$?
if tap_bench_ran $status; then
    awk '$1 ~ /^(none|monitor|tight|umadv)$/ {
             n++; if ($2 != 6 || $3 + $4 + $5 + $6 != 6) bad = 1
             if (($1 == "none" || $1 == "umadv") && $3 != 6) bad = 1 }
         END { exit n != 4 || bad }' "$tmp/out"
    ok $? "a row per way, every run counted once; without a thread, and with a umadv replay \
left running, every child exits 0" || diag "$tmp/out"
fi

tap_done
