#!/bin/sh
# TAP: umadv profile --timeline on examples/jacobi, on a GPU
# (umadv-profile(1), TIMELINE): the trace saved holds the profiled
# iteration's activity as CUPTI measured it, and the timeline draws its
# kernels, by name, inside their steps. Skipped as a whole without a
# CUDA device.
. "${top_srcdir:-.}/tests/tap.sh"
tap_jacobi_on_gpu

"$umadv" profile -q -o "$tmp/j.umt" --timeline "$tmp/j.json" -- "$jacobi" --size 1024 \
    --iters 10 >"$tmp/prof.out" 2>"$tmp/prof.err"
[ $? -eq 0 ] && [ -s "$tmp/j.json" ]
ok $? "umadv profile --timeline jacobi exits 0 and writes the timeline" || diag "$tmp/prof.err"

kernels=$(grep -c '^ev kind=kernel .* step=[0-9]* name=[0-9]*$' "$tmp/j.umt")
names=$(grep -c '^kname id=' "$tmp/j.umt")
[ "${kernels:-0}" -ge 1 ] && [ "${names:-0}" -ge 1 ] &&
    grep -q "^trace .* events=[1-9][0-9]* kernel_names=$names" "$tmp/j.umt"
ok $? "the trace holds the measured kernels ($kernels runs of $names names), each with its step" ||
    diag "$tmp/j.umt" 30

# every kernel name of the trace is a kernel event of the timeline
missing=0
sed -n 's/^kname id=[0-9]* name="\(.*\)"$/\1/p' "$tmp/j.umt" >"$tmp/names"
while read -r name; do
    grep -q -F "{\"name\": \"$name\", \"ph\": \"X\"" "$tmp/j.json" || missing=$((missing + 1))
done <"$tmp/names"
[ "$missing" -eq 0 ] && grep -q '"args": {"name": "kernels"}' "$tmp/j.json" &&
    grep -q '"args": {"name": "steps"}' "$tmp/j.json"
ok $? "the timeline has the steps and kernels tracks, every kernel by its name" ||
    diag "$tmp/j.json"

if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/j.json"
    ok $? "the timeline is JSON (python's parser reads it)"
else
    ok 0 "the timeline is JSON # SKIP no python3"
fi

tap_done
