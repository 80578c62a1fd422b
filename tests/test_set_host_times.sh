#!/bin/sh
# TAP: bench/set_host_times.py gives every step of a trace one host time
# and seals the trace again, and the simulator uses host times
# (umadv-plan(1)): a synthetic VGG-16 whose launches come 2 ms apart is
# host-bound (printed, in the bound, no faster under a plan, and in umadv
# report); the same trace without host times simulates as before; NS 0
# takes them out again; an existing output is never overwritten.
# Skipped without python3.
. "${top_srcdir:-.}/tests/tap.sh"
script=$srcdir/bench/set_host_times.py
umadv=$builddir/tools/umadv/umadv
if ! command -v python3 >/dev/null 2>&1; then
    echo "1..0 # SKIP no python3"
    exit 0
fi

echo "1..9"
"$umadv" synth vgg16 --batch 8 -o "$tmp/t.umt" >/dev/null 2>&1
python3 "$script" "$tmp/t.umt" "$tmp/h.umt" 2000000 >"$tmp/set.out" 2>&1
ok $? "a host time set on every step, the trace sealed again" || diag "$tmp/set.out"
steps=$(grep -c '^step ' "$tmp/t.umt")
[ "$(grep -c '^step .* host_ns=2000000' "$tmp/h.umt")" -eq "$steps" ]
ok $? "every one of the $steps steps has it"

"$umadv" plan "$tmp/h.umt" --budget 90% -p plan >"$tmp/h.plan" 2>&1 &&
    "$umadv" plan "$tmp/t.umt" --budget 90% -p plan >"$tmp/t.plan" 2>&1
ok $? "umadv plan reads both" || diag "$tmp/h.plan"
host=$(sed -n 's/^host-bound: *\([0-9.]*\) ms.*/\1/p' "$tmp/h.plan")
compute=$(sed -n 's/^compute: *\([0-9.]*\) ms.*/\1/p' "$tmp/h.plan")
awk -v h="$host" -v c="$compute" -v n="$steps" \
    'BEGIN { exit !(h != "" && h >= n * 2 && h > c) }'
ok $? "host-bound: $host ms resident, at least 2 ms a launch ($steps steps; compute $compute)" ||
    diag "$tmp/h.plan"
planned=$(awk '$1 == "plan" && $2 ~ /^[0-9.]+$/ { print $2; exit }' "$tmp/h.plan")
grep -q "lower bound: .*max(host-bound $host" "$tmp/h.plan" &&
    awk -v p="$planned" -v h="$host" 'BEGIN { exit !(p >= h) }'
ok $? "the bound starts from it, and the plan ($planned ms) is no faster" || diag "$tmp/h.plan"
! grep -q '^host-bound' "$tmp/t.plan" && grep -q 'lower bound: .*max(compute ' "$tmp/t.plan"
ok $? "without host times, the GPU's time alone" || diag "$tmp/t.plan"

"$umadv" report "$tmp/h.umt" 2>&1 | grep -q "^host-bound: *$host ms in iteration 0" &&
    ! "$umadv" report "$tmp/t.umt" 2>&1 | grep -q '^host-bound'
ok $? "umadv report shows the host-bound time where there are host times, only there"

python3 "$script" "$tmp/h.umt" "$tmp/z.umt" 0 >/dev/null 2>&1 &&
    ! grep -q 'host_ns=' "$tmp/z.umt" && cmp -s "$tmp/z.umt" "$tmp/t.umt"
ok $? "NS 0 takes them out: the original trace, byte for byte"

cp "$tmp/t.umt" "$tmp/keep.umt"
python3 "$script" "$tmp/h.umt" "$tmp/keep.umt" 5 >"$tmp/refused.out" 2>&1
rc=$?
[ $rc -ne 0 ] && cmp -s "$tmp/keep.umt" "$tmp/t.umt" && grep -q 'exists: not overwritten' "$tmp/refused.out"
ok $? "an existing output is refused (exit $rc) and left as it was"

[ "$failed" -eq 0 ]
