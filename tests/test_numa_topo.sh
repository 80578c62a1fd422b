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
set -u

top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
srcdir=$(cd "$top_srcdir" && pwd) || exit 1
builddir=$(cd "$top_builddir" && pwd) || exit 1
umadv=$builddir/tools/umadv/umadv
golden=$srcdir/tests/golden
fixtures=$srcdir/tests/numa

regen=0
if [ "${1:-}" = "--regen" ] || [ -n "${UMADV_REGEN_GOLDEN:-}" ]; then
    regen=1
fi

if [ ! -x "$umadv" ]; then
    echo "Bail out! $umadv is not built"
    exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/umadv-topo.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# Only errors on stderr; the host's own settings must not leak in.
UMADV_LOG=error
export UMADV_LOG
unset UMADV_LOG_FILE UMADV_HOST_NUMA HWLOC_XMLFILE

n=0
failed=0

ok() { # STATUS DESCRIPTION
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $n - $2"
    else
        echo "not ok $n - $2"
        failed=$((failed + 1))
    fi
}

diag() { # FILE [LINES]
    head -n "${2:-40}" "$1" | sed 's/^/# /'
}

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

rc_of() {
    cat "$tmp/$1.rc"
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
    if [ "$regen" -eq 1 ] && [ "$(rc_of "$name")" -eq 0 ]; then
        cp "$tmp/$name.out" "$golden/$name"
        ok 0 "umadv $* (golden $name regenerated)"
        return
    fi
    if [ "$(rc_of "$name")" -ne 0 ] || [ -s "$tmp/$name.err" ]; then
        ok 1 "$(label "$mode" "$@") exits 0 without messages"
        echo "#   exit status $(rc_of "$name"), stderr:"
        diag "$tmp/$name.err"
        return
    fi
    if diff -u "$golden/$name" "$tmp/$name.out" >"$tmp/$name.diff" 2>&1; then
        ok 0 "$(label "$mode" "$@") matches golden $name"
    else
        ok 1 "$(label "$mode" "$@") matches golden $name"
        diag "$tmp/$name.diff" 60
    fi
}

# fails NAME MODE STATUS PATTERN ARGS...: exit STATUS, PATTERN (fixed
# string) on stderr, nothing on stdout.
fails() {
    name=$1 mode=$2 want=$3 pattern=$4
    shift 4
    run "$name" "$mode" "$@"
    got=$(rc_of "$name")
    if [ "$got" -eq "$want" ] && grep -q -F -e "$pattern" "$tmp/$name.err" &&
       [ ! -s "$tmp/$name.out" ]; then
        ok 0 "$(label "$mode" "$@") exits $want: $pattern"
    else
        ok 1 "$(label "$mode" "$@") exits $want: $pattern"
        echo "#   exit status $got, stderr:"
        diag "$tmp/$name.err"
    fi
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

echo "1..$n"
[ "$failed" -eq 0 ]
