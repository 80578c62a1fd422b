#!/bin/sh
# TAP: each libFuzzer target (fuzz/) for FUZZ_SECONDS seconds (default 20),
# starting from its committed corpus (fuzz/corpus/TARGET) and every earlier
# finding (fuzz/findings/TARGET, regression inputs). A crash, a sanitizer
# report, a leak, an input slower than FUZZ_TIMEOUT seconds (default 30: a
# trace at the reader's section cap takes seconds under the sanitizers) or
# more memory than 2 GB is a failure that prints the reproducer. The
# targets exist only in a build configured with --enable-sanitizers and
# clang with libFuzzer: elsewhere the whole file is skipped. `make fuzz`
# runs this with FUZZ_SECONDS=60 (or as given); FUZZ_TARGETS picks some.
. "${top_srcdir:-.}/tests/tap.sh"

seconds=${FUZZ_SECONDS:-20}
timeout=${FUZZ_TIMEOUT:-30}
targets=${FUZZ_TARGETS:-trace plan cli}

if [ ! -x "$builddir/fuzz/fuzz_trace" ]; then
    echo "1..0 # SKIP no libFuzzer targets: configure --enable-sanitizers with clang and libFuzzer (Debian: clang libclang-rt-dev)"
    exit 0
fi

# Reports on stderr, where the log shows them; stop at the first error.
ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0:allocator_may_return_null=1
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS UBSAN_OPTIONS

# run_target NAME: fuzz NAME for $seconds into a scratch corpus (the
# committed one stays as it is), one test line with the executions.
run_target() {
    name=$1 exe=$builddir/fuzz/fuzz_$1
    work=$tmp/$name
    mkdir -p "$work/corpus" "$work/artifacts"
    seeds="$srcdir/fuzz/corpus/$name"
    [ -d "$srcdir/fuzz/findings/$name" ] && seeds="$seeds $srcdir/fuzz/findings/$name"
    tap_require "$exe"
    # The words of the input's language (fuzz_plan reads traces too).
    dict=$srcdir/fuzz/$name.dict
    [ "$name" = plan ] && dict=$srcdir/fuzz/trace.dict
    # shellcheck disable=SC2086 # seeds is a list of folders
    "$exe" -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb=2048 -dict="$dict" \
        -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
        "$work/corpus" $seeds >"$work/log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n 1)
    secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$work/log" | tail -n 1)
    if [ "$rc" -eq 0 ] && [ -z "$(ls "$work/artifacts")" ]; then
        ok 0 "fuzz_$name: ${runs:-?} executions in ${secs:-?} s, no finding"
        return
    fi
    ok 1 "fuzz_$name: exit status $rc after ${runs:-?} executions"
    grep -v '^#\|^INFO\|^ *NEW\|^ *REDUCE\|^ *pulse\|^ *INITED' "$work/log" | tail -n 60 |
        sed 's/^/# /'
    for f in "$work/artifacts"/*; do
        [ -f "$f" ] || continue
        echo "# reproducer $(basename "$f") ($(wc -c <"$f") bytes; save it under fuzz/findings/$name/"
        echo "# and rerun: fuzz/fuzz_$name FILE), base64:"
        base64 "$f" | head -n 200 | sed 's/^/#   /'
    done
}

for t in $targets; do
    run_target "$t"
done
tap_done
