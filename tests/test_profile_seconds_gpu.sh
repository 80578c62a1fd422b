#!/bin/sh
# TAP: umadv profile --seconds on examples/jacobi, on a GPU
# (umadv-profile(1), A WINDOW OF TIME): with a window longer than the
# program, jacobi prints what it prints without umadv, the window is
# saved when it exits and reported, and holds every iteration's kernels
# (its NVTX ranges did not end it), where --iteration's profile holds
# one iteration's. Skipped as a whole without a CUDA device.
. "${top_srcdir:-.}/tests/tap.sh"
tap_jacobi_on_gpu

iters=10
small="--size 1024 --iters $iters"
# shellcheck disable=SC2086 # small is a word list
"$jacobi" $small >"$tmp/plain.out" 2>"$tmp/plain.err"
ok $? "jacobi runs without umadv" || diag "$tmp/plain.err"

# shellcheck disable=SC2086
"$umadv" profile -o "$tmp/w.umt" --seconds 600 --top 3 -- "$jacobi" $small \
    >"$tmp/window.out" 2>"$tmp/window.err"
rc=$?
lines=$(wc -l <"$tmp/plain.out")
head -n "$lines" "$tmp/window.out" >"$tmp/window.head"
[ "$rc" -eq 0 ] && cmp -s "$tmp/plain.out" "$tmp/window.head" &&
    grep -q "^advice (simulated):" "$tmp/window.out"
ok $? "umadv profile --seconds 600 jacobi exits 0, jacobi's output as without umadv, then the report" ||
    { diag "$tmp/window.out"; diag "$tmp/window.err"; }
grep -q "profile: saved$" "$tmp/window.err"
ok $? "the window, longer than the program, was saved at its exit: the run summary says so" ||
    diag "$tmp/window.err"

# shellcheck disable=SC2086
"$umadv" profile -q -o "$tmp/i.umt" -- "$jacobi" $small >"$tmp/iter.out" 2>"$tmp/iter.err"
num() { # TRACE KEY: the first "KEY": N of its JSON report
    "$umadv" report --json "$1" 2>/dev/null | sed -n "s/^ *\"$2\": \\([0-9]*\\),*\$/\\1/p" |
        head -n 1
}
wsteps=$(num "$tmp/w.umt" steps) witers=$(num "$tmp/w.umt" iterations)
wallocs=$(num "$tmp/w.umt" allocations) isteps=$(num "$tmp/i.umt" steps)
[ "${witers:-0}" -eq 1 ] && [ "${wallocs:-0}" -ge 2 ] && [ "${isteps:-0}" -ge 1 ] &&
    [ "${wsteps:-0}" -ge $((iters * isteps)) ]
ok $? "the window is one iteration of every sweep's kernels ($wsteps steps; $isteps in one iteration of $iters), both grids among its $wallocs allocations" ||
    { diag "$tmp/window.err"; diag "$tmp/iter.err"; }

tap_done
