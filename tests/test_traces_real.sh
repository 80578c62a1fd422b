#!/bin/sh
# TAP: the umadv command on the real traces that ship in data/traces
# (h100-*.umt, h200-*.umt: PyTorch training recorded on a GPU by
# examples/torch_train.py). For each: `umadv report` reads it, counts the
# steps the file holds and names the GPU its name says; its step
# durations come from the timing pass (not the faulting profiled
# iteration); `umadv plan --budget 50%` plans it, keeps the plan's peak
# within the budget, with no faults, and no slower than demand paging.
. "${top_srcdir:-.}/tests/tap.sh"
tap_require "$umadv"
set -- "$srcdir"/data/traces/h[0-9]*-*.umt
if [ ! -f "$1" ]; then
    echo "1..0 # SKIP no real traces in data/traces"
    exit 0
fi

echo "1..$(($# * 7))"

# column NAME COLUMN FILE: a column of a policy's row in umadv plan's table
# (not the line under plan's row that a trace with staging adds)
column() {
    awk -v p="$1" -v c="$2" '$1 == p && NF >= 11 && $2 ~ /^[0-9.]+$/ { print $c }' "$3"
}

for trace in "$@"; do
    b=$(basename "$trace")
    gpu=$(echo "$b" | sed 's/-.*//' | tr 'a-z' 'A-Z')     # h200 -> H200
    "$umadv" report "$trace" >"$tmp/report" 2>"$tmp/err"
    ok $? "$b: umadv report reads it" || diag "$tmp/err"
    want=$(grep -c '^step ' "$trace")
    grep -q "^steps: *$want " "$tmp/report"
    ok $? "$b: report counts the $want steps the file holds" || diag "$tmp/report"
    grep -q "^device: .*$gpu" "$tmp/report"
    ok $? "$b: recorded on an $gpu, as its name says" || diag "$tmp/report"
    grep -q '^trace .*source=".*step durations from a timing pass' "$trace"
    ok $? "$b: its step durations come from the timing pass"

    "$umadv" plan "$trace" --budget 50% >"$tmp/plan" 2>"$tmp/err"
    ok $? "$b: umadv plan --budget 50% plans it" || diag "$tmp/err"
    peak=$(column plan 10 "$tmp/plan")
    budget=$(column plan 11 "$tmp/plan")
    faults=$(column plan 6 "$tmp/plan")
    awk -v p="$peak" -v b="$budget" -v f="$faults" \
        'BEGIN { exit !(p != "" && p + 0 <= b + 0 && f == "0") }'
    ok $? "$b: the plan peaks at $peak GiB within the $budget GiB budget, with no faults"
    plan_ms=$(column plan 2 "$tmp/plan")
    demand_ms=$(column demand 2 "$tmp/plan")
    awk -v p="$plan_ms" -v d="$demand_ms" 'BEGIN { exit !(p != "" && d != "" && p + 0 <= d + 0) }'
    ok $? "$b: the plan ($plan_ms ms) is no slower than demand paging ($demand_ms ms)" ||
        diag "$tmp/plan"
done

[ "$failed" -eq 0 ]
