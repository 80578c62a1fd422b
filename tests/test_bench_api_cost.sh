#!/bin/sh
# TAP: bench/api_cost runs on the host backend (no GPU) and measures what
# it says: a row per mode, the profiled modes replaying (one plan each,
# bytes moved where the policy moves them), the calls alone not profiled.
. "${top_srcdir:-.}/tests/tap.sh"

"$builddir/bench/api_cost" 20 5 >"$tmp/out" 2>"$tmp/err"
ok $? "bench/api_cost 20 5 runs" || diag "$tmp/err"

# row MODE: its plans and moved MiB columns
row() {
    awk -v m="$1" '$0 ~ "^" m "  " { print $(NF - 1), ($NF > 0 ? "moved" : "none") }' "$tmp/out"
}
[ "$(row 'no profile')" = "0 none" ] && [ "$(row oracle)" = "1 moved" ] &&
    [ "$(row prefetch-all)" = "1 moved" ] && [ "$(row plan)" = "1 moved" ]
ok $? "the calls alone plan nothing; oracle, prefetch-all and plan each replay a plan" ||
    diag "$tmp/out"

# the time outside the steps' waits is part of the iteration's, and for
# the calls alone (nothing replayed, so nothing waited for) all of it
awk '$1 ~ /^(no|oracle|prefetch-all|plan)$/ {
         stepped = $(NF - 4); outside = $(NF - 2)
         if (outside < 0 || outside > stepped + 0.05) bad = 1
         if ($1 == "no" && outside != stepped) bad = 1
     } END { exit bad }' "$tmp/out"
ok $? "outside the waits: a part of each stepped iteration, all of it unreplayed" ||
    diag "$tmp/out"

"$builddir/bench/api_cost" 0 >"$tmp/zero" 2>&1
[ $? -eq 2 ] && grep -q "usage: bench/api_cost" "$tmp/zero"
ok $? "no blocks: a usage error" || diag "$tmp/zero"

tap_done
