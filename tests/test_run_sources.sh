#!/bin/sh
# TAP: umadv run's iteration sources without a GPU (umadv-run(1),
# ITERATIONS): --iteration-source and UMADV_ITERATION_SOURCE take auto,
# nvtx, optimizer or launches, set the knob for the program, and refuse
# any other word before the program starts, naming the option or the
# variable and the words; umadv info -c documents the knob.
. "${top_srcdir:-.}/tests/tap.sh"
tap_require "$umadv"
unset UMADV_ITERATION_SOURCE UMADV_RUN_SUMMARY LD_PRELOAD

run() { # NAME ARGS...: umadv run ARGS (no preload: sh needs no CUDA)
    name=$1
    shift
    "$umadv" run --no-preload "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}

for source in auto nvtx optimizer launches; do
    run "set_$source" -q --iteration-source "$source" -- sh -c 'echo "$UMADV_ITERATION_SOURCE"'
    [ "$(rc_of "set_$source")" -eq 0 ] && [ "$(cat "$tmp/set_$source.out")" = "$source" ]
    ok $? "--iteration-source $source reaches the program as UMADV_ITERATION_SOURCE" ||
        diag "$tmp/set_$source.err"
done

UMADV_ITERATION_SOURCE=nvtx run beats -q --iteration-source launches -- \
    sh -c 'echo "$UMADV_ITERATION_SOURCE"'
[ "$(cat "$tmp/beats.out")" = launches ]
ok $? "the option beats the environment"

run badopt --iteration-source kernels -- sh -c 'echo started'
check_fails badopt 2 "invalid value 'kernels' for '--iteration-source': not one of auto|nvtx|optimizer|launches" \
    "--iteration-source kernels"
UMADV_ITERATION_SOURCE=steps run badenv -- sh -c 'echo started'
check_fails badenv 2 "UMADV_ITERATION_SOURCE=steps: not one of auto|nvtx|optimizer|launches" \
    "a bad UMADV_ITERATION_SOURCE, before the program starts,"
UMADV_ITERATION_SOURCE= run emptyenv -- sh -c 'echo started'
check_fails emptyenv 2 "UMADV_ITERATION_SOURCE=" "an empty UMADV_ITERATION_SOURCE"

"$umadv" info -c >"$tmp/info.out" 2>&1
grep -q '^UMADV_ITERATION_SOURCE enum *auto' "$tmp/info.out" &&
    grep -q 'launches: the repeating' "$tmp/info.out"
ok $? "umadv info -c lists the knob, its default and its words" || diag "$tmp/info.out"

"$umadv" run --help >"$tmp/help.out" 2>&1
grep -q -- '--iteration-source S' "$tmp/help.out"
ok $? "umadv run --help lists --iteration-source"

tap_done
