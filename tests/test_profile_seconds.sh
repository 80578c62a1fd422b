#!/bin/sh
# TAP: umadv profile --seconds and --iteration-source on the command line,
# without a GPU: a bad number of seconds (0, negative, fractional, a
# word, more than 3600) and --seconds with --iteration are usage errors
# naming the option, as a bad UMADV_PROFILE_SECONDS names the variable,
# with nothing run; the program gets UMADV_PROFILE_SECONDS (or, under
# --iteration, not the environment's); --iteration-source reaches it as
# under umadv run; a window that never began is said. Stand-in programs
# save a shipped trace as the library would. The window itself:
# test_profile_seconds.c; on a GPU: test_profile_seconds_gpu.sh.
. "${top_srcdir:-.}/tests/tap.sh"
tap_require "$umadv"
inject=$builddir/.libs/libumadv_inject.so
[ -f "$inject" ] || { echo "Bail out! $inject is not built"; exit 1; }
unset UMADV_POLICY UMADV_BUDGET UMADV_RUN_SUMMARY UMADV_INJECT_LIBRARY UMADV_ITERATION_SOURCE \
    UMADV_PROFILE_ITERATION UMADV_PROFILE_OUTPUT UMADV_PROFILE_SECONDS NVTX_INJECTION64_PATH \
    LD_PRELOAD PYTHONPATH
trace=$srcdir/data/traces/gpt2-bs8.umt

np=""
if nm -D "$inject" 2>/dev/null | grep -q '__asan'; then
    np=--no-preload
fi

profile() { # NAME ARGS...: umadv profile ARGS in $tmp; NAME.out, .err, .rc
    name=$1
    shift
    (cd "$tmp" && "$umadv" profile $np -q "$@") >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}

for bad in 0 -1 1.5 ten 3601; do
    profile "bad$bad" -o bad.umt --seconds "$bad" -- sh -c "touch '$tmp/ran'"
    check_fails "bad$bad" 2 "invalid value '$bad' for '--seconds': not an integer between 1 and 3600" \
        "--seconds $bad"
done
profile both -o both.umt --iteration 2 --seconds 5 -- sh -c "touch '$tmp/ran'"
check_fails both 2 "--seconds and --iteration exclude each other" "--seconds with --iteration"
UMADV_PROFILE_SECONDS=0 profile envbad -o envbad.umt -- sh -c "touch '$tmp/ran'"
check_fails envbad 2 "UMADV_PROFILE_SECONDS=0: not an integer between 1 and 3600" \
    "UMADV_PROFILE_SECONDS=0"
[ ! -e "$tmp/ran" ]
ok $? "none of them ran the program"

saver="cp '$trace' \"\$UMADV_PROFILE_OUTPUT\""
show='echo "seconds=${UMADV_PROFILE_SECONDS:-unset} source=${UMADV_ITERATION_SOURCE:-unset}" >&2'
profile window -o window.umt --seconds 30 -- sh -c "$saver; $show"
[ "$(rc_of window)" -eq 0 ] && grep -q "^seconds=30 source=unset$" "$tmp/window.err" &&
    grep -q '^advice (simulated):' "$tmp/window.out"
ok $? "--seconds 30: the program's UMADV_PROFILE_SECONDS, the saved trace reported" ||
    { diag "$tmp/window.err"; diag "$tmp/window.out"; }

UMADV_PROFILE_SECONDS=9 profile iteration -o iteration.umt --iteration 2 -- sh -c "$saver; $show"
[ "$(rc_of iteration)" -eq 0 ] && grep -q "^seconds=unset source=unset$" "$tmp/iteration.err"
ok $? "--iteration beats UMADV_PROFILE_SECONDS of the environment" || diag "$tmp/iteration.err"

profile source -o source.umt --iteration-source launches -- sh -c "$saver; $show"
[ "$(rc_of source)" -eq 0 ] && grep -q "^seconds=unset source=launches$" "$tmp/source.err"
ok $? "--iteration-source reaches the program, as under umadv run" || diag "$tmp/source.err"
profile badsource -o badsource.umt --iteration-source steps -- true
check_fails badsource 2 "invalid value 'steps' for '--iteration-source': not one of auto|nvtx|optimizer|launches" \
    "--iteration-source steps"

profile never -o never.umt --seconds 5 -- true
check_fails never 1 "saved no profile: its window never began" "a program umadv saw nothing of"

tap_done
