#!/bin/sh
# TAP: the umadv command. Outputs of plan and report on the shipped traces
# against tests/golden/*, --help of every command, usage and runtime errors
# with their exit statuses, and the shipped traces against what
# tools/make-traces.sh makes today.
#
# Regenerate the goldens deliberately (and review the diff before you
# commit it) with:
#     tests/test_cli.sh --regen        or   UMADV_REGEN_GOLDEN=1 make check
# run from the build tree (or with top_srcdir and top_builddir set).
. "${top_srcdir:-.}/tests/tap.sh"
traces=$srcdir/data/traces
tap_require "$umadv"

# run NAME ARGS...: umadv ARGS, from the traces folder so that the trace
# paths it prints are the same everywhere; stdout, stderr and the exit
# status land in $tmp/NAME.{out,err,rc}.
run() {
    name=$1
    shift
    (cd "$traces" && "$umadv" "$@") >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}

# Lines that measure this machine (planning time) are not part of a golden.
filter_timing() {
    grep -v -e 'planning time:' -e '"planning_ms"' "$1"
}

# golden NAME ARGS...: exit status 0, nothing on stderr, stdout equal to
# tests/golden/NAME (timing lines left out).
golden() {
    name=$1
    shift
    run "$name" "$@"
    filter_timing "$tmp/$name.out" >"$tmp/$name.filtered"
    check_golden "$name" "$tmp/$name.filtered" "umadv $*"
}

# fails NAME STATUS PATTERN ARGS...: exit status STATUS and stderr has
# PATTERN (a fixed string); stdout stays empty.
fails() {
    name=$1 want=$2 pattern=$3
    shift 3
    run "$name" "$@"
    check_fails "$name" "$want" "$pattern" "umadv $*"
}

# ------------------------------------------------------------- goldens

# VGG-16 at batch 256: its largest step (conv1_2 backward) needs 15.56 GiB
# of a 17.25 GiB footprint, so only large budgets can be planned.
golden plan-vgg16.out plan vgg16-bs256.umt --budget 16G,95%
golden plan-vgg16.json plan vgg16-bs256.umt --budget 16G,95% --json
golden plan-vgg16-ops.out plan vgg16-bs256.umt --budget 16G --policy plan --ops
golden plan-resnet50.out plan resnet50-bs256.umt --budget 75%,50%,25%
golden plan-gpt2.out plan gpt2-bs8.umt --budget 50%,4G
golden plan-resnet-deep.out plan resnet-deep-1001.umt --budget 50% --policy demand,plan
golden plan-options.out plan resnet50-bs256.umt -b 40% --policy plan,prefetch-all \
    --lookahead 4 --no-read-mostly
# Host placement is opt-in: with it, the same budget places runs on the host.
golden plan-vgg16-host.out plan vgg16-bs256.umt --budget 16G --policy plan --host-placement
for t in vgg16-bs256 resnet50-bs256 gpt2-bs8 resnet-deep-1001; do
    golden "report-$t.out" report "$t.umt"
done
# The advice with the options: a budget of our own, shorter top lists, and
# the same data as JSON.
golden report-gpt2-budget.out report gpt2-bs8.umt --budget 6G --top 3
golden report-gpt2.json report gpt2-bs8.umt --json --top 3
golden report-gpt2-share.out report gpt2-bs8.umt --budget 60% --top 2
# The advice's figures are the simulator's, as umadv plan shows them:
# plan and demand at 50% of the footprint, the same milliseconds.
"$umadv" report --json "$traces/gpt2-bs8.umt" >"$tmp/advice.json" 2>&1 &&
    "$umadv" plan "$traces/gpt2-bs8.umt" --budget 50% --policy plan,demand --json \
        >"$tmp/plan50.json" 2>&1
advice50=$(grep '"percent": 50,' "$tmp/advice.json" |
    sed 's/.*"plan_ms": \([0-9.]*\), "demand_ms": \([0-9.]*\),.*/\1 \2/')
plan50=$(grep '"ms_per_iter"' "$tmp/plan50.json" | sed 's/[^0-9.]//g' | tr '\n' ' ')
[ -n "$advice50" ] && [ "$advice50 " = "$plan50" ]
ok $? "the advice's plan and demand at 50% are umadv plan's ($advice50 / $plan50)"
fails report-top0 2 "invalid value '0' for '--top'" report gpt2-bs8.umt --top 0
fails report-budget0 2 "invalid value '0%' for '--budget'" report gpt2-bs8.umt --budget 0%
# A trace from a PyTorch run marks its allocations stageable: the plan
# says which channel its evictions take, with and without the staged
# figures of the link probe, and with --no-stage.
stage_golden() {
    name=$1
    shift
    (cd "$tmp" && "$umadv" "$@") >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
    filter_timing "$tmp/$name.out" >"$tmp/$name.filtered"
    check_golden "$name" "$tmp/$name.filtered" "umadv $*"
}
"$builddir/tests/stage_trace" "$traces/resnet50-bs256.umt" "$tmp/r50-staged.umt" figures &&
    "$builddir/tests/stage_trace" "$traces/resnet50-bs256.umt" "$tmp/r50-stageable.umt"
ok $? "tests/stage_trace marks a shipped trace stageable"
stage_golden plan-stage.out plan r50-staged.umt --budget 50%,25% --policy demand,plan
stage_golden plan-stage-nofig.out plan r50-stageable.umt --budget 50% --policy plan
stage_golden plan-stage-off.out plan r50-staged.umt --budget 50% --policy plan --no-stage
stage_golden plan-stage-host.out plan r50-staged.umt --budget 50% --policy plan --host-placement
stage_golden report-stage.out report r50-staged.umt
golden help.out --help
for c in plan report synth info profile; do
    golden "help-$c.out" "$c" --help
done

# The default trace is the shipped H200 ResNet-50 one: same output but the path.
run default plan --budget 50%
run default-explicit plan h200-resnet50-bs64.umt --budget 50%
grep -v -e '^trace:' "$tmp/default.out" | filter_timing - >"$tmp/default.cut"
grep -v -e '^trace:' "$tmp/default-explicit.out" | filter_timing - >"$tmp/default.want"
test "$(rc_of default)" = 0 && cmp -s "$tmp/default.cut" "$tmp/default.want"
ok $? "umadv plan without TRACE plans the shipped h200-resnet50-bs64.umt"

run help-plan-2 help plan
cmp -s "$tmp/help-plan-2.out" "$golden/help-plan.out"
ok $? "umadv help plan prints what umadv plan --help does"

# JSON that every parser reads (the goldens only prove it is stable).
if command -v python3 >/dev/null 2>&1; then
    run json-ops plan gpt2-bs8.umt --budget 50%,4G --json --ops
    python3 -m json.tool "$tmp/json-ops.out" >/dev/null 2>"$tmp/json-ops.check"
    ok $? "umadv plan --json --ops is valid JSON"
    python3 -m json.tool "$tmp/plan-vgg16.json.out" >/dev/null 2>"$tmp/json.check"
    ok $? "umadv plan --json is valid JSON"
else
    ok 0 "umadv plan --json --ops is valid JSON # SKIP python3 not found"
    ok 0 "umadv plan --json is valid JSON # SKIP python3 not found"
fi

# --ops names an allocation by its tag; where two allocations share one
# (PyTorch's tensors are all "torch"), each one's ID follows it.
if command -v python3 >/dev/null 2>&1; then
    python3 - "$traces/gpt2-bs8.umt" "$tmp/shared-tags.umt" <<'EOF'
import sys, zlib
body = open(sys.argv[1], "rb").read()
body = body[:body.rindex(b"end crc32=")].replace(b'tag="h0.ln2.out"', b'tag="h0.ln1.out"')
open(sys.argv[2], "wb").write(body + b"end crc32=%08x\n" % (zlib.crc32(body) & 0xffffffff))
EOF
    run shared-tags plan "$tmp/shared-tags.umt" --budget 50% --policy plan --ops
    test "$(rc_of shared-tags)" = 0 && grep -q ' h0\.ln1\.out #302 ' "$tmp/shared-tags.out" &&
        grep -q ' h0\.ln1\.out #306 ' "$tmp/shared-tags.out" &&
        grep -q ' embed\.out  ' "$tmp/shared-tags.out" && ! grep -q 'embed\.out #' "$tmp/shared-tags.out"
    ok $? "umadv plan --ops: a tag two allocations share is followed by each one's ID, a tag of one alone"
else
    ok 0 "umadv plan --ops: shared tags # SKIP python3 not found"
fi

# ------------------------------------------------------------- errors

fails bad-option 2 "unknown option '--bugdet' for 'plan'; did you mean '--budget'?" \
    plan vgg16-bs256.umt --bugdet 16G
grep -q -F "umadv plan --help" "$tmp/bad-option.err"
ok $? "an unknown option points to umadv plan --help"
fails bad-budget 2 "invalid value '8X' for '--budget'" plan vgg16-bs256.umt --budget 8X
fails bad-percent 2 "invalid value '0%' for '--budget'" plan vgg16-bs256.umt --budget 0%
fails no-budget 2 "needs --budget" plan vgg16-bs256.umt
fails no-value 2 "option '--budget' of 'plan' needs a value" plan vgg16-bs256.umt --budget
fails bad-policy 2 "did you mean 'plan'?" plan vgg16-bs256.umt --budget 16G --policy paln
fails bad-iteration 2 "invalid value 'x' for '--iteration'" plan vgg16-bs256.umt -b 16G -i x
fails flag-value 2 "option '--json' of 'plan' takes no value" plan -b 16G --json=yes
fails two-traces 2 "takes one trace" plan a.umt b.umt --budget 16G
fails no-iteration 1 "has no iteration 7" plan vgg16-bs256.umt --budget 16G --iteration 7
fails small-budget 1 "the largest step needs 15.56 GiB" plan vgg16-bs256.umt --budget 8G
grep -q -F "try --budget" "$tmp/small-budget.err"
ok $? "a budget too small suggests one that fits"
fails missing 1 "no-such-trace.umt" plan no-such-trace.umt --budget 16G

# --timeline: the simulated iterations as a Chrome trace. The tables do
# not change; each policy is a track of its 44 steps; the plan track ends
# where the table says its iteration does.
run timeline plan vgg16-bs256.umt --budget 16G --policy oracle,plan --timeline "$tmp/tl.json"
run no-timeline plan vgg16-bs256.umt --budget 16G --policy oracle,plan
filter_timing "$tmp/timeline.out" >"$tmp/timeline.cut"
filter_timing "$tmp/no-timeline.out" >"$tmp/no-timeline.cut"
[ "$(rc_of timeline)" -eq 0 ] && [ ! -s "$tmp/timeline.err" ] &&
    cmp -s "$tmp/timeline.cut" "$tmp/no-timeline.cut"
ok $? "plan --timeline FILE prints the same tables" || diag "$tmp/timeline.err"
tracks=$(grep -c '"name": "process_name"' "$tmp/tl.json")
steps=$(grep -c '"ph": "X", "pid": 2, "tid": 1,' "$tmp/tl.json")
[ "$tracks" -eq 2 ] && [ "$steps" -eq 44 ] && grep -q '"plan, budget 16.00 GiB"' "$tmp/tl.json"
ok $? "one track per policy ($tracks), the plan's with its 44 steps ($steps)"
end=$(awk -F'"ts": |, "dur": |, "args"' '/"ph": "X", "pid": 2, "tid": 1,/ {
          e = $2 + $3; if (e > m) m = e } END { printf "%.2f", m / 1000 }' "$tmp/tl.json")
want=$(awk '$1 == "plan" { print $2 }' "$tmp/timeline.out")
[ -n "$want" ] && [ "$end" = "$want" ]
ok $? "the plan track ends at the table's ms/iter ($end ms, table $want)"
if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/tl.json"
    ok $? "the timeline is valid JSON"
else
    n=$((n + 1))
    echo "ok $n # SKIP no python3 to parse the timeline"
fi
fails timeline-dir 1 "cannot create the timeline $tmp/none/tl.json" \
    plan vgg16-bs256.umt --budget 16G --timeline "$tmp/none/tl.json"
fails timeline-small 1 "the largest step needs" \
    plan vgg16-bs256.umt --budget 8G --timeline "$tmp/small.json"
[ ! -e "$tmp/small.json" ]
ok $? "a plan that fails leaves no half-written timeline"
fails report-missing 1 "no-such-trace.umt" report no-such-trace.umt
fails report-none 2 "needs a TRACE" report

# Corrupt traces: an edited body breaks the checksum, an unknown version
# is refused on line 1; either way the reader says file:line: reason.
sed 's/^\(alloc id=1 .*size=\)\([0-9]*\)/\1999\2/' "$traces/vgg16-bs256.umt" >"$tmp/edited.umt"
sed '1s/.*/umadv-trace 99/' "$traces/vgg16-bs256.umt" >"$tmp/version.umt"
if cmp -s "$tmp/edited.umt" "$traces/vgg16-bs256.umt"; then
    ok 1 "sed edited the trace (the test itself is stale)"
fi
for c in edited version; do
    run "corrupt-$c" plan "$tmp/$c.umt" --budget 16G
    grep -q -E "^umadv: .*$c\.umt:[0-9]+: " "$tmp/corrupt-$c.err" &&
        [ "$(rc_of "corrupt-$c")" -eq 1 ]
    ok $? "a corrupt trace ($c) exits 1 with file:line: reason"
done
run corrupt-report report "$tmp/version.umt"
[ "$(rc_of corrupt-report)" -eq 1 ]
ok $? "umadv report on a corrupt trace exits 1"

fails bad-command 2 "unknown command 'paln'; did you mean 'plan'?" paln
fails bad-top 2 "unknown option '--verison'; did you mean '--version'?" --verison
fails no-command 2 "Usage: umadv COMMAND"
fails help-unknown 2 "unknown command 'nope'" help nope
fails bad-model 2 "unknown model 'vgg61'; did you mean 'vgg16'?" synth vgg61 -o "$tmp/x.umt"
fails no-output 2 "needs -o FILE" synth vgg16
fails bad-section 2 "invalid value '3M' for '--section-size'" synth vgg16 -s 3M -o "$tmp/x.umt"
fails bad-info 2 "unknown option '--cofnig' for 'info'; did you mean '--config'?" info --cofnig
fails unwritable 1 "no-such-dir" synth vgg16 -o "$tmp/no-such-dir/x.umt"

# ------------------------------------------------------------- the rest

run version --version
grep -q -E '^umadv [0-9]+\.[0-9]+\.[0-9]+ \(API [0-9]+\.[0-9]+\)$' "$tmp/version.out" &&
    [ "$(rc_of version)" -eq 0 ]
ok $? "umadv --version prints the release and API versions"

# No GPU is a normal answer: exit 0 and a devices line either way.
run info info
grep -q -E '^devices: ' "$tmp/info.out" && [ "$(rc_of info)" -eq 0 ]
ok $? "umadv info exits 0 and reports devices"
run info-c info -c
grep -q UMADV_BUDGET "$tmp/info-c.out" && grep -q UMADV_SECTION_SIZE "$tmp/info-c.out" &&
    [ "$(rc_of info-c)" -eq 0 ]
ok $? "umadv info -c prints the knobs"

# A synthetic trace written to stdout reads back and plans.
run synth-stdout synth vgg16 --batch 64 -o -
(cd "$tmp" && "$umadv" report - <"$tmp/synth-stdout.out" >"$tmp/synth-report.out" 2>&1)
ok $? "umadv synth -o - writes a trace that umadv report - reads"

# The shipped traces are what the script makes now, byte for byte.
mkdir "$tmp/traces"
if sh "$srcdir/tools/make-traces.sh" "$umadv" "$tmp/traces" >"$tmp/make-traces.err" 2>&1; then
    for f in "$tmp"/traces/*.umt; do
        b=${f##*/}
        cmp -s "$f" "$traces/$b"
        ok $? "data/traces/$b is up to date (make traces)"
        size=$(wc -c <"$f")
        [ "$size" -lt 2097152 ]
        ok $? "data/traces/$b stays under 2 MiB ($size bytes)"
    done
else
    ok 1 "tools/make-traces.sh runs"
    diag "$tmp/make-traces.err"
fi

tap_done
