#!/bin/sh
# TAP: iterations from the repeating launch sequence on a GPU (umadv-run(1),
# ITERATIONS): jacobi (CUDA C, no umadv code) whose NVTX range is not
# umadv's has its sweeps found from its kernel launches, planned, and
# prints what it prints without umadv; --iteration-source launches takes
# the launches over its range; --iteration-source nvtx with no range
# finds none. Skipped without a CUDA device.
. "${top_srcdir:-.}/tests/tap.sh"
tap_jacobi_on_gpu

# One sweep (one launch) per iteration: the loop is found once 32 launches
# repeat, so 80 iterations leave about 45 for umadv.
args="--size 1024 --iters 80"

# run NAME [OPTIONS] -- PROGRAM ARGS: NAME.out, .err, .rc and the record NAME.sum
run() {
    name=$1
    shift
    "$umadv" run -q --summary "$tmp/$name.sum" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}
key() { # NAME KEY: the record's value
    sed -n "s/^$2 //p" "$tmp/$1.sum" | head -n 1
}
why() { # NAME: what a failing run left: its exit status, output and messages
    echo "exit status $(rc_of "$1")" >"$tmp/$1.why"
    cat "$tmp/$1.out" "$tmp/$1.err" >>"$tmp/$1.why"
    diag "$tmp/$1.why"
}

# shellcheck disable=SC2086 # args is a word list
"$jacobi" $args --range other >"$tmp/plain.out" 2>"$tmp/plain.err"
ok $? "jacobi runs without umadv" || diag "$tmp/plain.err"

# shellcheck disable=SC2086
run auto -- "$jacobi" $args --range other
[ "$(rc_of auto)" -eq 0 ] && cmp -s "$tmp/plain.out" "$tmp/auto.out"
ok $? "umadv run, a range that is not umadv's: output identical to the plain run" ||
    why auto
its=$(key auto iterations)
[ "$(key auto iterations_from)" = launches ] && [ "$(key auto launch_period)" = 1 ] &&
    [ "${its:-0}" -ge 40 ] && [ "$(key auto plan)" = ok ]
ok $? "its iterations from the launch sequence (period 1, $its iterations), planned" ||
    diag "$tmp/auto.sum"

# shellcheck disable=SC2086
run budget --budget 6M -- "$jacobi" $args --range other
[ "$(rc_of budget)" -eq 0 ] && cmp -s "$tmp/plain.out" "$tmp/budget.out" &&
    [ "$(key budget iterations_from)" = launches ]
ok $? "...and under a budget below the two grids: output identical" || why budget

# shellcheck disable=SC2086
run taken --iteration-source launches -- "$jacobi" $args
[ "$(rc_of taken)" -eq 0 ] && [ "$(key taken iterations_from)" = launches ]
ok $? "--iteration-source launches: the launches, not the program's NVTX range" ||
    diag "$tmp/taken.sum"

# shellcheck disable=SC2086
run nvtx --iteration-source nvtx -- "$jacobi" $args --range other
[ "$(rc_of nvtx)" -eq 0 ] && [ "$(key nvtx iterations)" = 0 ] &&
    [ "$(key nvtx iterations_from)" = none ]
ok $? "--iteration-source nvtx and no range of umadv's: no iteration" || diag "$tmp/nvtx.sum"

tap_done
