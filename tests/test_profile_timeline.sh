#!/bin/sh
# TAP: the measured window of a profile (umadv-profile(1), TIMELINE and
# KERNELS) without a GPU, on a hand-made profile whose activity has
# concurrent kernels, overlapping fault groups, migrations of each
# direction and several causes, and thrashing: the timeline is the golden
# Chrome trace; the report ranks kernels by the fault time inside their
# runs, and names where each allocation was made; umadv profile writes
# the timeline of the trace its program saved, refuses an existing one
# before the program runs unless --force, and a failed timeline leaves an
# older one as it was.
. "${top_srcdir:-.}/tests/tap.sh"
tap_require "$umadv"
unset UMADV_POLICY UMADV_BUDGET UMADV_MAX_MANAGED UMADV_ROUTE_MALLOC UMADV_RUN_SUMMARY \
    UMADV_INJECT_LIBRARY UMADV_ITERATION_RANGE UMADV_PROFILE_ITERATION UMADV_PROFILE_OUTPUT \
    NVTX_INJECTION64_PATH LD_PRELOAD PYTHONPATH
trace=$golden/profile-activity.umt
plain=$srcdir/data/traces/gpt2-bs8.umt

# run NAME ARGS...: umadv ARGS in $tmp; NAME.out, .err, .rc
run() {
    name=$1
    shift
    (cd "$tmp" && "$umadv" "$@") >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}

# ---- umadv report ----

run profile-timeline.json report "$trace" --timeline tl.json
check_golden profile-timeline.json "$tmp/tl.json" "umadv report --timeline on a measured window"
if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/tl.json"
    ok $? "the timeline is JSON (python's parser reads it)"
else
    ok 0 "the timeline is JSON # SKIP no python3"
fi

sed -n '/^kernels by fault stall/,/^$/p' "$tmp/profile-timeline.json.out" >"$tmp/kernels.txt"
head -1 "$tmp/kernels.txt" | grep -q 'top 2 of 2 that faulted; 0.002 ms stalled in all' &&
    sed -n 2p "$tmp/kernels.txt" | grep -q '(5 records past the profiler.s bound were not kept' &&
    sed -n 4p "$tmp/kernels.txt" | grep -q '^ *1 *0.003 *8 *0.001 *33.3%  relu_fwd$' &&
    sed -n 5p "$tmp/kernels.txt" | grep -q '^ *2 *0.002 *8 *0.001 *40.0%  conv_fwd$'
ok $? "kernels by fault stall: relu_fwd (1 us of 3) before conv_fwd (0.8 us of two runs of 1), the records dropped said" ||
    diag "$tmp/kernels.txt"

grep -q '^ *0 weight .*  conv1.weight, init_weights+0x2a (train)$' "$tmp/profile-timeline.json.out" &&
    grep -q '^ *1 activation .*  conv1.out, -$' "$tmp/profile-timeline.json.out"
ok $? "largest allocations: where each was allocated, where the trace says" ||
    diag "$tmp/profile-timeline.json.out" 60

grep -q '"labels": "5 records dropped past the profiler.s bound"' "$tmp/tl.json"
ok $? "the timeline says how many records the profiler dropped"

run top report "$trace" --top 1 --json
grep -q '"kernel_fault_stall_ms": 0.001800' "$tmp/top.out" &&
    [ "$(sed -n '/"kernels_by_fault_stall"/,/]/p' "$tmp/top.out" | grep -c '"name"')" -eq 1 ] &&
    grep -q '{"name": "relu_fwd", "launches": 1, "run_ms": 0.003000, "fault_groups": 8, "stall_ms": 0.001000}' "$tmp/top.out"
ok $? "--json has them too, --top 1 keeps the costliest" || diag "$tmp/top.out"

run plain report "$plain"
[ "$(rc_of plain)" -eq 0 ] && ! grep -q 'kernels by fault stall\|kernel fault stalls' "$tmp/plain.out"
ok $? "a trace without activity reports as before (no kernel table)"

run noact report "$plain" --timeline noact.json
[ "$(rc_of noact)" -eq 1 ] && grep -q 'has no measured activity' "$tmp/noact.err" &&
    [ ! -e "$tmp/noact.json" ]
ok $? "--timeline on a trace without activity: exit 1, no file" || diag "$tmp/noact.err"

echo keep >"$tmp/kept.json"
run kept report "$plain" --timeline kept.json
[ "$(rc_of kept)" -eq 1 ] && [ "$(cat "$tmp/kept.json")" = keep ] && ! ls "$tmp" | grep -q '\.tmp\.'
ok $? "a failed timeline leaves the older one as it was, and no temporary file"

run dash report "$trace" --timeline -
check_fails dash 2 "--timeline needs a file" "--timeline -"

cp "$trace" "$tmp/same.umt"
run same report same.umt --timeline same.umt
[ "$(rc_of same)" -ne 0 ] && cmp -s "$trace" "$tmp/same.umt"
ok $? "the trace itself is refused as the timeline"

# ---- umadv profile ----

np=""
inject=$builddir/.libs/libumadv_inject.so
if [ -f "$inject" ] && nm -D "$inject" 2>/dev/null | grep -q '__asan'; then
    np=--no-preload
fi
saver="cp '$trace' \"\$UMADV_PROFILE_OUTPUT\""

run prof profile $np -q -o p.umt --timeline p.json -- sh -c "$saver"
[ "$(rc_of prof)" -eq 0 ] && cmp -s "$tmp/p.json" "$golden/profile-timeline.json" &&
    grep -q '^kernels by fault stall' "$tmp/prof.out"
ok $? "umadv profile --timeline: the measured window of the saved trace, and its kernels" ||
    diag "$tmp/prof.err"

echo keep >"$tmp/old.json"
run exists profile $np -q -o e.umt --timeline old.json -- sh -c "touch '$tmp/ran'; $saver"
check_fails exists 1 "old.json exists" "an existing --timeline file"
[ "$(cat "$tmp/old.json")" = keep ] && [ ! -e "$tmp/ran" ] && [ ! -e "$tmp/e.umt" ]
ok $? "it is refused before the program runs, and left as it was"

run force profile $np -q --force -o e.umt --timeline old.json -- sh -c "$saver"
[ "$(rc_of force)" -eq 0 ] && cmp -s "$tmp/old.json" "$golden/profile-timeline.json"
ok $? "--force replaces it"

saver_plain="cp '$plain' \"\$UMADV_PROFILE_OUTPUT\""
echo keep >"$tmp/old.json"
run noactp profile $np -q --force -o n.umt --timeline old.json -- sh -c "$saver_plain"
[ "$(rc_of noactp)" -eq 1 ] && grep -q 'has no measured activity' "$tmp/noactp.err" &&
    [ "$(cat "$tmp/old.json")" = keep ] && [ -s "$tmp/n.umt" ]
ok $? "a profile without activity: exit 1, the trace kept, the older timeline as it was" ||
    diag "$tmp/noactp.err"

run pdash profile $np -q --timeline - -- true
check_fails pdash 2 "--timeline needs a file" "umadv profile --timeline -"
run pdir profile $np -q -o d.umt --timeline . -- sh -c "touch '$tmp/ran2'; $saver"
check_fails pdir 1 "is a folder" "a folder as --timeline"
run pnodir profile $np -q -o d.umt --timeline no/such/t.json -- sh -c "touch '$tmp/ran2'; $saver"
check_fails pnodir 1 "no such folder" "--timeline in a folder that does not exist"
[ ! -e "$tmp/ran2" ] && [ ! -e "$tmp/d.umt" ]
ok $? "both before the program runs"

tap_done
