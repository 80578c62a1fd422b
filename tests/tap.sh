# TAP for the shell tests, sourced as `. "${top_srcdir:-.}/tests/tap.sh"`:
# the tree's paths, a scratch folder ($tmp, removed on exit), ok/diag, and
# the checks of a command's run against a golden output or an expected
# failure. A run named NAME leaves $tmp/NAME.out, .err and .rc.
set -u

top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
srcdir=$(cd "$top_srcdir" && pwd) || exit 1
builddir=$(cd "$top_builddir" && pwd) || exit 1
umadv=$builddir/tools/umadv/umadv
golden=$srcdir/tests/golden

# Goldens are regenerated only when asked: --regen or UMADV_REGEN_GOLDEN.
regen=0
if [ "${1:-}" = "--regen" ] || [ -n "${UMADV_REGEN_GOLDEN:-}" ]; then
    regen=1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/umadv-test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# Only errors on stderr, whatever the caller's environment says.
UMADV_LOG=error
export UMADV_LOG
unset UMADV_LOG_FILE

n=0
failed=0

# ok returns STATUS, so that "ok $? WHAT || diag FILE" explains a failure.
ok() { # STATUS DESCRIPTION
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $n - $2"
    else
        echo "not ok $n - $2"
        failed=$((failed + 1))
    fi
    return "$1"
}

diag() { # FILE [LINES]
    head -n "${2:-40}" "$1" | sed 's/^/# /'
}

# A bench program ran, its stdout in $tmp/out, its stderr in $tmp/err,
# exiting STATUS: without a usable GPU (77) a skip that says why, and
# false; else whether it exited 0, and true (the caller checks its output).
tap_bench_ran() { # STATUS
    if [ "$1" -eq 77 ]; then
        grep -q "no CUDA device\|no concurrent managed access" "$tmp/out"
        ok $? "without a usable GPU it says why # SKIP $(head -n 1 "$tmp/out")"
        return 1
    fi
    ok "$1" "runs on the GPU" || diag "$tmp/err"
    return 0
}

rc_of() { # NAME
    cat "$tmp/$1.rc"
}

# tap_require PROGRAM: bail out of the whole file if it is not built.
tap_require() {
    if [ ! -x "$1" ]; then
        echo "Bail out! $1 is not built"
        exit 1
    fi
}

# tap_jacobi_on_gpu: examples/jacobi ($jacobi) under umadv's injection
# library, on a GPU: the knobs a run would take from the environment
# unset; the whole file skipped in a sanitizer build (the injection
# library would need the ASan runtime preloaded) or without a CUDA device.
tap_jacobi_on_gpu() {
    tap_require "$umadv"
    jacobi=$builddir/examples/jacobi
    tap_require "$jacobi"
    unset UMADV_POLICY UMADV_BUDGET UMADV_MAX_MANAGED UMADV_ROUTE_MALLOC UMADV_RUN_SUMMARY \
        UMADV_INJECT_LIBRARY UMADV_ITERATION_RANGE UMADV_ITERATION_SOURCE \
        UMADV_PROFILE_ITERATION UMADV_PROFILE_OUTPUT UMADV_PROFILE_SECONDS UMADV_TIMELINE \
        NVTX_INJECTION64_PATH LD_PRELOAD
    if [ -n "${SANITIZERS:-}" ]; then
        echo "1..0 # SKIP sanitizer build ($SANITIZERS): the injection library would need the ASan runtime preloaded"
        exit 0
    fi
    "$jacobi" --size 64 --iters 3 >/dev/null 2>&1
    if [ $? -eq 77 ]; then
        echo "1..0 # SKIP no CUDA device"
        exit 0
    fi
}

# tap_fake_torch: umadv run's Python start-up hook over tests/fake_torch,
# a stand-in for PyTorch, without a GPU: the knobs the hook reads unset;
# PYTHONPATH on the stand-in; the whole file skipped without python3 and
# in a sanitizer build (Python cannot load the libraries without the
# ASan runtime).
tap_fake_torch() {
    tap_require "$umadv"
    unset UMADV_ITERATION_SOURCE UMADV_RUN_SUMMARY UMADV_PROFILE_OUTPUT UMADV_PROFILE_SECONDS \
        LD_PRELOAD
    command -v python3 >/dev/null 2>&1 || { echo "1..0 # SKIP no python3"; exit 0; }
    if nm -D "$builddir/.libs/libumadv_inject.so" 2>/dev/null | grep -q '__asan'; then
        echo "1..0 # SKIP sanitizer build: Python cannot load the libraries without the ASan runtime"
        exit 0
    fi
    PYTHONPATH=$srcdir/tests/fake_torch
    export PYTHONPATH
}

# run_hook NAME ARGS...: umadv run --no-preload -q ARGS in $tmp (the
# start-up hook brings umadv); NAME.out, NAME.err, NAME.rc in $tmp.
run_hook() {
    name=$1
    shift
    (cd "$tmp" && "$umadv" run --no-preload -q "$@") >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}

# tap_done: the plan, last, and the exit status.
tap_done() {
    echo "1..$n"
    [ "$failed" -eq 0 ]
}

# check_golden NAME OUTPUT LABEL: run NAME exited 0 with nothing on stderr
# and OUTPUT (its stdout, maybe filtered) equals tests/golden/NAME.
check_golden() {
    name=$1 output=$2 label=$3
    if [ "$regen" -eq 1 ] && [ "$(rc_of "$name")" -eq 0 ]; then
        cp "$output" "$golden/$name"
        ok 0 "$label (golden $name regenerated)"
        return
    fi
    if [ "$(rc_of "$name")" -ne 0 ] || [ -s "$tmp/$name.err" ]; then
        ok 1 "$label exits 0 without messages"
        echo "#   exit status $(rc_of "$name"), stderr:"
        diag "$tmp/$name.err"
        return
    fi
    if diff -u "$golden/$name" "$output" >"$tmp/$name.diff" 2>&1; then
        ok 0 "$label matches golden $name"
    else
        ok 1 "$label matches golden $name"
        diag "$tmp/$name.diff" 60
    fi
}

# check_fails NAME STATUS PATTERN LABEL: run NAME exited STATUS with
# PATTERN (a fixed string) on stderr and nothing on stdout.
check_fails() {
    name=$1 want=$2 pattern=$3 label=$4
    got=$(rc_of "$name")
    if [ "$got" -eq "$want" ] && grep -q -F -e "$pattern" "$tmp/$name.err" &&
       [ ! -s "$tmp/$name.out" ]; then
        ok 0 "$label exits $want: $pattern"
    else
        ok 1 "$label exits $want: $pattern"
        echo "#   exit status $got, stderr:"
        diag "$tmp/$name.err"
    fi
}
