#!/bin/sh
# TAP: CUDA graphs under umadv run on a GPU (umadv(7), STREAM CAPTURE).
# run_graph (CUDA C, no umadv code) replays a chain of kernels over six
# buffers of 16 MiB under a budget of half of them (cudaMalloc routed,
# which umadv run never stages: evictions migrate); midway it captures
# the chain into a graph in global mode and launches that: the capture
# must not be refused or invalidated by umadv's calls, and the program
# prints exactly what it prints without umadv, the host's bits in every
# buffer. The same with a capture every iteration, and on managed
# memory. (tests/test_graph_gpu does the same on staged blocks.)
# Skipped without a CUDA device.
. "${top_srcdir:-.}/tests/tap.sh"
tap_jacobi_on_gpu
graph=$builddir/tests/run_graph
tap_require "$graph"

# run NAME [OPTIONS] -- PROGRAM ARGS: NAME.out, .err, .rc and the record NAME.sum
run() {
    name=$1
    shift
    UMADV_LOG=info "$umadv" run --summary "$tmp/$name.sum" "$@" >"$tmp/$name.out" \
        2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}
key() { # NAME KEY: the record's value
    sed -n "s/^$2 //p" "$tmp/$1.sum" | head -n 1
}
same() { # NAME REFERENCE LABEL: the same output, no error said, a plan that moved data
    [ "$(rc_of "$1")" -eq 0 ] && cmp -s "$tmp/$2.out" "$tmp/$1.out" &&
        ! grep -q "umadv: error" "$tmp/$1.err" && [ "$(key "$1" plan)" = ok ] &&
        [ "$(key "$1" bytes_to_host)" -gt 0 ]
    ok $? "$3" ||
        { diag "$tmp/$1.out"; diag "$tmp/$1.err" 100; diag "$tmp/$1.sum"; diag "$tmp/$1.rc"; }
}

# plain NAME LABEL ARGS: run_graph without umadv, the host's bits in every buffer
plain() {
    name=$1
    label=$2
    shift 2
    "$graph" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
    [ "$(rc_of "$name")" -eq 0 ] && grep -q "^buffers match$" "$tmp/$name.out"
    ok $? "run_graph without umadv, $label: the host's bits" ||
        { diag "$tmp/$name.out"; diag "$tmp/$name.err"; }
}

plain plain "graphs from iteration 20" --iters 40 --graph-from 20
run routed --managed-malloc --budget 48M -- "$graph" --iters 40 --graph-from 20
same routed plain "umadv run, cudaMalloc routed: a graph captured and launched mid-replay, \
output identical"

plain replain "a capture every iteration from 20" --iters 40 --graph-from 20 --recapture
run recapture --managed-malloc --budget 48M -- "$graph" --iters 40 --graph-from 20 --recapture
same recapture replain "a capture every iteration from 20: output identical"

plain mplain "on managed memory" --iters 40 --graph-from 20 --alloc managed
run managed --budget 48M -- "$graph" --iters 40 --graph-from 20 --alloc managed
same managed mplain "on managed memory (evictions migrate): output identical"

tap_done
