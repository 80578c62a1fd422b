#!/bin/sh
# TAP: hostile inputs end in time, with a clear error or a bounded run.
# Every tests/reliability/*.umt (inputs that crashed, hit undefined
# behaviour or planned without bound in umadv 0.1, issue 9) goes through
# `umadv plan FILE --budget 50%` under a time limit: no signal, no timeout,
# never "inf" or a bound of 0 in the output, and the verdict its name
# calls for. Also: reads that would never end (/dev/zero, /dev/urandom),
# traces past the planning limits, and budgets that do not fit an integer.
. "${top_srcdir:-.}/tests/tap.sh"
inputs=$srcdir/tests/reliability
tap_require "$umadv"

# Seconds any one run may take: a refusal or a small plan takes well
# under one; the limit only catches a hang.
limit=20

# run_limited NAME ARGS...: umadv ARGS under the time limit, from the
# inputs folder (messages name the file as given), with the VAR=VALUE
# words of $run_env in its environment; $tmp/NAME.{out,err,rc}.
run_env=
run_limited() {
    name=$1
    shift
    # shellcheck disable=SC2086 # run_env is a list of words
    (cd "$inputs" && exec env $run_env timeout -s KILL "$limit" "$umadv" "$@") \
        >"$tmp/$name.out" 2>"$tmp/$name.err" </dev/null
    echo $? >"$tmp/$name.rc"
}

# fails_limited NAME STATUS PATTERN ARGS...: run_limited, then exit
# status STATUS with PATTERN (a fixed string) on stderr, nothing on stdout.
fails_limited() { # NAME STATUS PATTERN ARGS...
    name=$1 want=$2 pattern=$3
    shift 3
    run_limited "$name" "$@"
    check_fails "$name" "$want" "$pattern" "umadv $*"
}

# ended NAME LABEL: the run was not killed by a signal nor by the limit.
ended() {
    rc=$(rc_of "$1")
    [ "$rc" -lt 128 ] && [ "$rc" -ne 124 ]
    ok $? "$2: ends by itself (exit status $rc)" || diag "$tmp/$1.err"
}

# sane_output NAME LABEL: no infinite or zero figure reached the output.
sane_output() {
    ! grep -q -i -w -e 'inf' -e 'nan' "$tmp/$1.out" "$tmp/$1.err" &&
        ! grep -q -F 'x bound 0.000' "$tmp/$1.out"
    ok $? "$2: no inf, nan or zero bound in the output" || diag "$tmp/$1.out"
}

# The verdict each input calls for: FILE STATUS PATTERN (on stderr).
expect() {
    case $1 in
    garbage-fetch_bw-subnormal.umt)
        echo "1 $1:4: link: fetch_bw: \"4.9e-324\" is out of range" ;;
    segv-evict_bw-subnormal.umt)
        echo "1 $1:4: link: evict_bw: \"4.9e-324\" is out of range" ;;
    segv-fault_bw-subnormal.umt)
        echo "1 $1:4: link: fault_bw: \"4.9e-324\" is out of range" ;;
    segv-evict_latency-1e308.umt)
        echo "1 $1:4: link: evict_latency: \"1e308\" is out of range" ;;
    segv-resnet50-fault_latency-1e308.umt)
        echo "1 $1:5: link: fault_latency: \"1e308\" is out of range" ;;
    ub-floatcast-fetch_bw-1e308.umt)
        echo "1 $1:4: link: fetch_bw: \"1e308\" is out of range" ;;
    plan-over60s-7GB-1KB-trace.umt)
        echo "1 $1:5: alloc: more than 4194304 sections in all" ;;
    plan-*)
        echo "1 UMADV_PLAN_MAX_TOUCHES" ;;
    *)
        echo "0 " ;;
    esac
}

for path in "$inputs"/*.umt; do
    file=$(basename "$path")
    name=plan-$file
    set -- $(expect "$file")
    want=$1
    shift
    pattern=$*
    run_limited "$name" plan "$file" --budget 50%
    ended "$name" "plan $file"
    sane_output "$name" "plan $file"
    if [ "$want" -eq 0 ]; then
        [ "$(rc_of "$name")" -eq 0 ] && [ ! -s "$tmp/$name.err" ]
        ok $? "plan $file: plans it" || diag "$tmp/$name.err"
    else
        check_fails "$name" "$want" "$pattern" "plan $file"
    fi
done

# ------------------------------------------------------ reads that never end

for dev in /dev/zero /dev/urandom; do
    name=report-$(basename "$dev")
    run_limited "$name" report "$dev"
    ended "$name" "report $dev"
    check_fails "$name" 1 "$dev:" "report $dev"
done

# Endless input on standard input, past the version line: comments
# without end before the 'trace' record, then after it.
endless() { # NAME PATTERN HEADER-LINES...
    name=$1 pattern=$2
    shift 2
    { printf '%s\n' "$@"; yes '# filler'; } |
        (cd "$inputs" && exec timeout -s KILL "$limit" "$umadv" report -) \
        >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
    ended "$name" "report of $name"
    check_fails "$name" 1 "$pattern" "report of $name"
}
endless no-header "<stdin>: no 'trace' record in the first 1048576 bytes" 'umadv-trace 1'
endless past-counts "<stdin>: more than 1441792 bytes, more than the counts of its 'trace'" \
    'umadv-trace 1' 'trace section_size=2097152 allocs=1 steps=1 accesses=1'

# A line past the longest a trace may hold, on line 3.
{ printf 'umadv-trace 1\n# ok\n# '; head -c 70000 /dev/zero | tr '\0' x; echo; } \
    >"$tmp/long-line.umt"
run_limited long-line report "$tmp/long-line.umt"
check_fails long-line 1 "long-line.umt:3: line longer than 65536 bytes" "report of a long line"

# ------------------------------------------------------ the planner's limit

run_env=UMADV_PLAN_MAX_TOUCHES=1000
fails_limited max-touches 1 "more than the planner takes: 1000 (UMADV_PLAN_MAX_TOUCHES" \
    plan "$srcdir/data/traces/vgg16-bs256.umt" --budget 95%
run_env=UMADV_PLAN_MAX_TOUCHES=0
run_limited no-limit plan "$srcdir/data/traces/vgg16-bs256.umt" --budget 95%
run_env=
[ "$(rc_of no-limit)" -eq 0 ]
ok $? "UMADV_PLAN_MAX_TOUCHES=0 plans without a limit" || diag "$tmp/no-limit.err"

# ------------------------------------------------------ budgets as numbers

fails_limited huge-percent 2 "invalid value '1e300%' for '--budget'" \
    plan ub-nullptr-offset-step-without-access.umt --budget 1e300%
fails_limited over-percent 2 "invalid value '101%' for '--budget'" \
    plan ub-nullptr-offset-step-without-access.umt --budget 101%

# ------------------------------------------------------ synth, bounded

fails_limited synth-deep-64k 1 "use at most 4 iterations or a larger section size" \
    synth resnet-deep -s 64K -n 100 -o "$tmp/deep.umt"
[ ! -e "$tmp/deep.umt" ]
ok $? "synth refused leaves no file"
fails_limited synth-iterations 2 "expected a whole number from 1 to 10000" \
    synth vgg16 -n 1000000 -o "$tmp/many.umt"
fails_limited synth-batch 2 "expected a whole number from 1 to 1048576" \
    synth vgg16 -b 2000000 -o "$tmp/big.umt"

tap_done
