#!/bin/sh
# TAP: bench/evict_scatter refuses bad options with a usage error; on a
# GPU it prints a row per way (one range, a call per block, one batch),
# each eviction timed, also beside the unified-memory counters and a
# pinning thread, and without one it says so and exits 77 (a skip here,
# never a pass).
. "${top_srcdir:-.}/tests/tap.sh"

bench="$builddir/bench/evict_scatter"
tap_require "$bench"

"$bench" --blocks 1 >"$tmp/bad" 2>&1
[ $? -eq 2 ] && grep -q "invalid --blocks '1'" "$tmp/bad" && grep -q "usage: evict_scatter" "$tmp/bad"
ok $? "--blocks 1: a usage error naming the option" || diag "$tmp/bad"

"$bench" --size 1K >"$tmp/bad" 2>&1
[ $? -eq 2 ] && grep -q "invalid --size '1K'" "$tmp/bad"
ok $? "--size 1K: a usage error naming the option" || diag "$tmp/bad"

"$bench" --um-counters yes >"$tmp/bad" 2>&1
[ $? -eq 2 ] && grep -q "invalid --um-counters 'yes' (on or off)" "$tmp/bad"
ok $? "--um-counters yes: a usage error naming the option" || diag "$tmp/bad"

"$bench" --pin-beside 12 >"$tmp/bad" 2>&1
[ $? -eq 2 ] && grep -q "invalid --pin-beside '12'" "$tmp/bad"
ok $? "--pin-beside 12: a usage error naming the option" || diag "$tmp/bad"

"$bench" --size 16M --blocks 8 --repeat 1 >"$tmp/out" 2>"$tmp/err"
status=$?
if tap_bench_ran $status; then
    # three rows, the first eviction and the best timed, the best's stream
    # end after its calls
    awk '$1 ~ /^(one|each|batch)$/ { n++; if (!($2 + 0 > 0 && $4 + 0 > 0 && $4 + 0 >= $3 + 0)) bad = 1 }
         END { exit n != 3 || bad }' "$tmp/out"
    ok $? "a row per way, each eviction timed" || diag "$tmp/out"
fi

"$bench" --size 16M --blocks 8 --repeat 1 --um-counters on --pin-beside 32M >"$tmp/out" \
    2>"$tmp/err"
status=$?
if tap_bench_ran $status; then
    # the evictions to the host leave records; the thread pinned at least
    # once while they ran
    awk '$1 ~ /^(one|each|batch)$/ { n++ }
         /^unified-memory records: [1-9]/ { rec = 1 }
         /^beside: [1-9][0-9]* pins of 32.0 MiB/ { pin = 1 }
         END { exit n != 3 || !rec || !pin }' "$tmp/out"
    ok $? "beside the counters and a pinning thread: rows, records and pins" || {
        diag "$tmp/out"; diag "$tmp/err"; }
fi

tap_done
