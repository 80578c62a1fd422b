#!/bin/sh
# TAP: umadv profile on examples/jacobi, on a GPU (umadv-profile(1)):
# jacobi (two managed grids, an NVTX range per iteration, no umadv code)
# prints what it prints without umadv, the trace saved holds one
# iteration of kernel steps over both grids, and the report advises on
# it. Skipped as a whole without a CUDA device.
. "${top_srcdir:-.}/tests/tap.sh"
tap_jacobi_on_gpu

small="--size 1024 --iters 10"
# shellcheck disable=SC2086 # small is a word list
"$jacobi" $small >"$tmp/plain.out" 2>"$tmp/plain.err"
ok $? "jacobi runs without umadv" || diag "$tmp/plain.err"

# shellcheck disable=SC2086
"$umadv" profile -o "$tmp/j.umt" --top 3 -- "$jacobi" $small >"$tmp/prof.out" 2>"$tmp/prof.err"
rc=$?
lines=$(wc -l <"$tmp/plain.out")
head -n "$lines" "$tmp/prof.out" >"$tmp/prof.head"
[ "$rc" -eq 0 ] && cmp -s "$tmp/plain.out" "$tmp/prof.head"
ok $? "umadv profile jacobi exits 0, jacobi's output first and as without umadv" ||
    { diag "$tmp/prof.out"; diag "$tmp/prof.err"; }
grep -q "^advice (simulated):" "$tmp/prof.out" &&
    grep -q "umadv run --budget .* --policy plan -- $jacobi\$" "$tmp/prof.out"
ok $? "then the report of the trace, with its advice and the command that applies it" ||
    diag "$tmp/prof.out"

"$umadv" report --json "$tmp/j.umt" >"$tmp/j.json" 2>"$tmp/j.err"
num() { # KEY: the first "KEY": N of the JSON report
    sed -n "s/^ *\"$1\": \\([0-9]*\\),*\$/\\1/p" "$tmp/j.json" | head -n 1
}
steps=$(num steps) allocs=$(num allocations) iters=$(num iterations)
[ "${iters:-0}" -eq 1 ] && [ "${steps:-0}" -ge 1 ] && [ "${allocs:-0}" -ge 2 ]
ok $? "the trace: one iteration, its steps ($steps), both grids among its allocations ($allocs)" ||
    diag "$tmp/j.json"
grep -q '"kind": "kernel"' "$tmp/j.json"
ok $? "its steps are jacobi's kernel launches" || diag "$tmp/j.json"

tap_done
