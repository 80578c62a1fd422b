#!/bin/sh
# TAP: umadv topo. Its output on each hwloc XML fixture of tests/numa (2-
# and 4-socket servers, hidden PCI tree, a GPU with no locality, a one-node
# VM) under UMADV_HOST_NUMA auto, N and none, against tests/golden/topo-*;
# JSON that parses; errors (a node that does not exist, a bad value, a
# missing file, a stray argument) with their exit statuses; and this
# machine, GPU or not, exits 0 with its NUMA nodes.
#
# Regenerate the goldens deliberately (and review the diff) with:
#     tests/test_numa_topo.sh --regen    or   UMADV_REGEN_GOLDEN=1 make check
# run from the build tree (or with top_srcdir and top_builddir set).
. "${top_srcdir:-.}/tests/tap.sh"
fixtures=$srcdir/tests/numa
tap_require "$umadv"
# The host's own settings must not leak in.
unset UMADV_HOST_NUMA HWLOC_XMLFILE

# run NAME MODE ARGS...: UMADV_HOST_NUMA=MODE ("" to leave it unset)
# umadv ARGS, from the fixtures folder so paths print the same everywhere.
run() {
    name=$1 mode=$2
    shift 2
    if [ -n "$mode" ]; then
        (cd "$fixtures" && UMADV_HOST_NUMA=$mode "$umadv" "$@") >"$tmp/$name.out" 2>"$tmp/$name.err"
    else
        (cd "$fixtures" && "$umadv" "$@") >"$tmp/$name.out" 2>"$tmp/$name.err"
    fi
    echo $? >"$tmp/$name.rc"
}

# "UMADV_HOST_NUMA=MODE umadv ARGS" as a user would type it.
label() {
    mode=$1
    shift
    if [ -n "$mode" ]; then
        echo "UMADV_HOST_NUMA=$mode umadv $*"
    else
        echo "umadv $*"
    fi
}

# golden NAME MODE ARGS...: exit 0, nothing on stderr, stdout = tests/golden/NAME.
golden() {
    name=$1 mode=$2
    shift 2
    run "$name" "$mode" "$@"
    check_golden "$name" "$tmp/$name.out" "$(label "$mode" "$@")"
}

# fails NAME MODE STATUS PATTERN ARGS...: exit STATUS, PATTERN (fixed
# string) on stderr, nothing on stdout.
fails() {
    name=$1 mode=$2 want=$3 pattern=$4
    shift 4
    run "$name" "$mode" "$@"
    check_fails "$name" "$want" "$pattern" "$(label "$mode" "$@")"
}

# ------------------------------------------------------------- goldens

for f in 2socket 4socket nopci rootgpu vm; do
    golden "topo-$f.out" "" topo --xml "$f.xml"
done
golden topo-4socket-numa6.out 6 topo --xml 4socket.xml
golden topo-2socket-numa1.out 1 topo --xml 2socket.xml
golden topo-2socket-none.out none topo --xml 2socket.xml
golden topo-rootgpu-numa0.out 0 topo --xml rootgpu.xml
golden topo-4socket.json "" topo --xml 4socket.xml --json
golden help-topo.out "" topo --help

if command -v python3 >/dev/null 2>&1; then
    run json-vm "" topo --xml vm.xml --json
    python3 -m json.tool "$tmp/json-vm.out" >/dev/null 2>"$tmp/json-vm.check"
    ok $? "umadv topo --json is valid JSON"
else
    ok 0 "umadv topo --json is valid JSON # SKIP python3 not found"
fi

# ------------------------------------------------------------- errors

fails missing-node 7 1 "UMADV_HOST_NUMA=7: 2socket.xml has no numa node 7 (nodes: 0-1)" \
    topo --xml 2socket.xml
fails bad-value x 1 "UMADV_HOST_NUMA=x: not auto, none or a NUMA node number" \
    topo --xml 2socket.xml
fails no-file "" 1 "no-such.xml" topo --xml no-such.xml
fails stray "" 2 "'topo' takes no arguments, got 'extra'" topo extra
fails bad-option "" 2 "did you mean '--json'?" topo --jsno

# ------------------------------------------------------------- this machine

# GPU or none, driver or none: exit 0, the nodes listed, a gpus line.
run machine "" topo
grep -q -E '^numa nodes: [1-9]' "$tmp/machine.out" && grep -q -E '^gpus: ' "$tmp/machine.out" &&
    [ "$(rc_of machine)" -eq 0 ]
ok $? "umadv topo on this machine exits 0 with its numa nodes and gpus"
diag "$tmp/machine.out" 30

# hwloc itself reads HWLOC_XMLFILE: the 4-socket fixture as this machine.
HWLOC_XMLFILE=$fixtures/4socket.xml
export HWLOC_XMLFILE
run xmlfile "" topo
unset HWLOC_XMLFILE
grep -q -F "HWLOC_XMLFILE=" "$tmp/xmlfile.out" && grep -q -E '^numa nodes: 7$' "$tmp/xmlfile.out"
ok $? "HWLOC_XMLFILE stands in for this machine"

tap_done
