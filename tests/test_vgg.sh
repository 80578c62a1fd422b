#!/bin/sh
# TAP: the VGG-16 example (examples/vgg/vgg_train, cuDNN) on a GPU, scaled
# down (32x32 or 64x64 images, channels divided by 8 or 4). The analytic
# gradients agree with finite differences; the loss falls on a fixed
# batch; with deterministic algorithms, the final weights are bitwise the
# same under oracle, demand, prefetch-all and plan at a budget below the
# footprint, and plan keeps to that budget. Split along the batch
# (--split), each layer in parts: the arithmetic of the largest step and
# of --split auto (no GPU); the loss falls with a remainder part; at a
# budget below the unsplit run's largest step, which umadv_plan refuses,
# the split run trains under every policy, bitwise alike. Skips the whole file when
# configure found no cuDNN (the example is not built), and the GPU checks
# when the program finds no GPU (exit 77); the command-line checks need none.
. "${top_srcdir:-.}/tests/tap.sh"
prog=$builddir/examples/vgg/vgg_train
if [ ! -x "$prog" ]; then
    echo "1..0 # SKIP cuDNN not found by configure: examples/vgg/vgg_train not built"
    exit 0
fi
unset UMADV_POLICY UMADV_BUDGET UMADV_MAX_MANAGED

small="--image-size 64 --width-scale 4 --batch 8 --iters 4 --profile-iter 1 --deterministic"

# train NAME [ENV=VALUE...] -- ARGS...: NAME.out, NAME.err, NAME.rc
train() {
    name=$1
    shift
    envs=""
    while [ "$1" != "--" ]; do
        envs="$envs $1"
        shift
    done
    shift
    env $envs "$prog" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}

field() { # NAME KEY: the first value after KEY
    awk -v k="$2" '$1 == k { print $2; exit }' "$tmp/$1.out"
}

summary() { # NAME KEY: KEY's value on the summary line
    awk -v k="$2" '$1 == "summary" { for (i = 2; i < NF; i++) if ($i == k) print $(i + 1) }' \
        "$tmp/$1.out"
}

losses() { # NAME
    awk '$1 == "iter" && $3 == "loss" { print $4 }' "$tmp/$1.out"
}

# ---- the command line (no GPU needed) -------------------------------

"$prog" --image-size 48 >"$tmp/usage.out" 2>"$tmp/usage.err"
rc=$?
[ "$rc" -eq 2 ] && grep -q -- "--image-size" "$tmp/usage.err" && [ ! -s "$tmp/usage.out" ]
ok $? "--image-size 48 (not a multiple of 32) is a usage error naming the flag (exit $rc)"

"$prog" --batch 0 >"$tmp/usage.out" 2>"$tmp/usage.err"
rc=$?
[ "$rc" -eq 2 ] && grep -q -- "--batch" "$tmp/usage.err"
ok $? "--batch 0 is a usage error naming the flag (exit $rc)"

"$prog" --frobnicate >"$tmp/usage.out" 2>"$tmp/usage.err"
rc=$?
[ "$rc" -eq 2 ] && grep -q -- "--frobnicate" "$tmp/usage.err"
ok $? "an unknown flag is a usage error naming it (exit $rc)"

# The activations are arithmetic: at 32x32, channels / 8, a sample's
# layer outputs are 2x8x32x32, 8x16x16, 2x16x16x16, 16x8x8, 3x32x8x8,
# 32x4x4, 3x64x4x4, 64x2x2, 3x64x2x2, 64x1x1, then 512, 512 and 1000.
"$prog" --image-size 32 --width-scale 8 --batch 4 --footprint >"$tmp/fp.out" 2>"$tmp/fp.err"
rc=$?
act=$(awk '$1 == "footprint" && $2 == "activations" { print $3 }' "$tmp/fp.out")
want=$(( (2*8*1024 + 8*256 + 2*16*256 + 16*64 + 3*32*64 + 32*16 + 3*64*16 + 64*4 + 3*64*4 +
          64 + 512 + 512 + 1000) * 4 * 4 ))
[ "$rc" -eq 0 ] && [ "$act" = "$want" ] && ! grep -q '^iter' "$tmp/fp.out"
ok $? "--footprint prints the footprint and trains nothing (activations $act, want $want)"

# Full size, the layer table against the published count: VGG-16 has
# 138,357,544 parameters, held three times (values, gradients, momentum).
"$prog" --footprint >"$tmp/fp16.out" 2>"$tmp/fp16.err"
rc=$?
weights=$(awk '$1 == "footprint" && $2 == "weights" { print $3 }' "$tmp/fp16.out")
[ "$rc" -eq 0 ] && [ "$weights" = $(( 138357544 * 3 * 4 )) ]
ok $? "--footprint at 224x224: 138,357,544 parameters, 3 copies ($weights bytes)"

"$prog" --split 0 >"$tmp/usage.out" 2>"$tmp/usage.err"
rc=$?
[ "$rc" -eq 2 ] && grep -q -- "--split" "$tmp/usage.err"
ok $? "--split 0 is a usage error naming the flag (exit $rc)"

"$prog" --batch 8 --split 9 >"$tmp/usage.out" 2>"$tmp/usage.err"
rc=$?
[ "$rc" -eq 2 ] && grep -q -- "--split.*at most --batch (8)" "$tmp/usage.err"
ok $? "--split beyond --batch is a usage error (exit $rc)"

largest() { # ARGS...: the footprint's largest step, "BYTES NAME"
    "$prog" --footprint "$@" 2>/dev/null |
        awk '$1 == "footprint" && $2 == "largest_step" { print $3, $4 }'
}

# At 224x224, batch 64: conv1_2's backward reads its input, output and
# output's gradient and writes its input's gradient (64x64x224x224 floats
# each), with weight, bias and weight gradient; in 4 parts each holds a
# quarter, and fc6's update (values, gradients, momentum of 25088x4096 +
# 4096) is the largest step, which no split makes smaller.
conv=$(( 4 * 64 * 64 * 224 * 224 * 4 + (36864 + 64 + 36864) * 4 ))
fc6=$(( 3 * (25088 * 4096 + 4096) * 4 ))
[ "$(largest --batch 64)" = "$conv conv1_2.backward" ] &&
    [ "$(largest --batch 64 --split 4)" = "$fc6 fc6.update" ]
ok $? "largest step: conv1_2.backward $conv bytes whole, fc6.update $fc6 in 4 parts"

# --split auto: the fewest parts whose largest step takes half the
# budget: at 4G, 2 (conv1_2's backward in halves, 1.64 GB); at 2G none
# does (fc6's update is 1.23 GB), so the fewest that reach fc6's: 3.
auto() { # BUDGET: the split --split auto chooses at batch 64
    env ${1:+UMADV_BUDGET=$1} "$prog" --footprint --batch 64 --split auto 2>/dev/null |
        awk '$1 == "split" { print $2 }'
}
[ "$(auto 4G)" = 2 ] && [ "$(auto 2G)" = 3 ] && [ "$(auto "")" = 1 ] &&
    [ "$(largest --batch 64 --split 3)" = "$fc6 fc6.update" ] &&
    [ "$(largest --batch 64 --split 2 | cut -d' ' -f2)" = conv1_2.backward ]
ok $? "--split auto: 2 parts at 4G, 3 at 2G (fc6.update's floor), 1 without a budget"

UMADV_BUDGET=lots "$prog" --footprint --split auto >"$tmp/auto.out" 2>"$tmp/auto.err"
rc=$?
[ "$rc" -eq 1 ] && grep -q 'UMADV_BUDGET=lots' "$tmp/auto.err"
ok $? "--split auto with a UMADV_BUDGET that is no size fails naming it (exit $rc)"

# ---- on the GPU -------------------------------------------------------

train grad -- --image-size 32 --width-scale 8 --batch 2 --check-grad
rc=$(cat "$tmp/grad.rc")
if [ "$rc" -eq 77 ]; then
    for what in "gradient check" "loss falls on a fixed batch" "oracle run" \
                "demand digest" "prefetch-all digest" "plan digest under a budget" \
                "plan within its budget" "plan's steps taken on their word" \
                "plan with partial declarations" "--trace for umadv plan" "split: loss falls with a remainder part" \
                "split oracle run" "unsplit refused by umadv_plan" "split demand digest" \
                "split prefetch-all digest" "split plan digest" "split plan within budget"; do
        n=$((n + 1))
        echo "ok $n # SKIP no CUDA device: $what"
    done
    tap_done
    exit
fi

[ "$rc" -eq 0 ] && grep -q '^grad_check .* mismatches: pass$' "$tmp/grad.out"
ok $? "analytic gradients agree with central finite differences (exit $rc)" ||
    { diag "$tmp/grad.out" 60; diag "$tmp/grad.err"; }

train fixed -- --image-size 32 --width-scale 8 --batch 8 --iters 8 --fixed-batch
rc=$(cat "$tmp/fixed.rc")
[ "$rc" -eq 0 ] && grep -q '^fixed_batch loss .* falls$' "$tmp/fixed.out"
ok $? "the loss falls on a fixed batch: $(losses fixed | tr '\n' ' ')" ||
    { diag "$tmp/fixed.out"; diag "$tmp/fixed.err"; }

train oracle UMADV_POLICY=oracle -- $small
rc=$(cat "$tmp/oracle.rc")
digest=$(field oracle digest)
[ "$rc" -eq 0 ] && echo "$digest" | grep -q '^0x[0-9a-f]\{16\}$'
ok $? "oracle trains and prints a digest of the weights ($digest, exit $rc)" ||
    diag "$tmp/oracle.err"
losses oracle >"$tmp/oracle.loss"

same_as_oracle() { # NAME
    losses "$1" >"$tmp/$1.loss"
    [ "$(cat "$tmp/$1.rc")" -eq 0 ] && [ "$(field "$1" digest)" = "$digest" ] &&
        cmp -s "$tmp/oracle.loss" "$tmp/$1.loss"
}

train demand UMADV_POLICY=demand -- $small
same_as_oracle demand
ok $? "demand: bitwise the oracle's losses and digest" || diag "$tmp/demand.err"

train prefetch UMADV_POLICY=prefetch-all -- $small
same_as_oracle prefetch
ok $? "prefetch-all: bitwise the oracle's losses and digest" || diag "$tmp/prefetch.err"

# Below the footprint: 75% of umadv's managed peak, as test_example.sh.
budget=$(( $(summary oracle managed_peak) * 3 / 4 ))
train plan UMADV_POLICY=plan UMADV_BUDGET=$budget UMADV_LOG=info -- $small --trace "$tmp/plan.umt"
same_as_oracle plan && ! grep -q 'without a plan' "$tmp/plan.err"
ok $? "plan at a budget of $budget bytes: planned, bitwise the oracle's losses and digest" ||
    diag "$tmp/plan.err"

peak=$(summary plan resident_peak)
[ -n "$peak" ] && [ "$peak" -le "$budget" ]
ok $? "plan's resident peak within the budget ($peak <= $budget)"

# Its steps say their declarations are complete (umadv_step_access_complete):
# no fault outside them, staging not withdrawn; without saying so, the
# profile evicts before each cuDNN kernel, and trains alike.
grep -q 'parameter scan: .* 0 evictions before them' "$tmp/plan.err" &&
    ! grep -q 'outside what it declared' "$tmp/plan.err" &&
    ! grep -q 'no staged evictions' "$tmp/plan.err"
ok $? "plan's steps, said complete, taken on their word: no eviction before a cuDNN kernel, no fault outside them, staging kept" ||
    diag "$tmp/plan.err"
train planp UMADV_POLICY=plan UMADV_BUDGET=$budget UMADV_LOG=info -- $small --declarations partial
same_as_oracle planp && grep -q 'parameter scan: .* [1-9][0-9]* evictions before them' "$tmp/planp.err"
ok $? "plan with --declarations partial (evictions before each cuDNN kernel): bitwise the oracle's losses and digest" ||
    diag "$tmp/planp.err"

# --trace: the profile, with measured durations (a timing pass's, or a
# first pass's that moved nothing, or two passes'), for umadv plan
"$builddir/tools/umadv/umadv" plan "$tmp/plan.umt" --budget "$budget" --policy plan \
    >"$tmp/replan.out" 2>"$tmp/replan.err" &&
    grep -Eq 'step durations from (a (timing|first) pass|two passes)' "$tmp/replan.out" &&
    grep -Eq '^  plan +[0-9]' "$tmp/replan.out"
ok $? "--trace saves the profiled iteration, timed: umadv plan simulates it" ||
    diag "$tmp/replan.err"

# ---- split along the batch --------------------------------------------

# 10 samples in 4 parts: 3, 3, 2 and 2 (two shapes of descriptors).
train splitfixed -- --image-size 32 --width-scale 8 --batch 10 --iters 8 --fixed-batch --split 4
rc=$(cat "$tmp/splitfixed.rc")
[ "$rc" -eq 0 ] && grep -q '^fixed_batch loss .* falls$' "$tmp/splitfixed.out" &&
    grep -q '^split 4 (parts of 3 and 2 samples)' "$tmp/splitfixed.out"
ok $? "split 4 with a remainder part: the loss falls: $(losses splitfixed | tr '\n' ' ')" ||
    { diag "$tmp/splitfixed.out"; diag "$tmp/splitfixed.err"; }

# 128x128, channels / 4, batch 32: conv1_2's backward touches 128 MB
# whole, 32 MB a part in 4; small sections (64K) keep umadv's step sizes
# near the declared bytes. The budget lies halfway between the split
# run's largest step and the unsplit one's, as umadv's planner counts
# them (it names the largest step when a budget of 1M refuses it: on an
# H100 its count of the split run's, 113.6 MiB, was above the program's
# own, which leaves out the blocks a part allocates whole).
net="--image-size 128 --width-scale 4 --batch 32 --iters 4 --profile-iter 1 --deterministic
     --workspace-limit 16M"
sec=UMADV_SECTION_SIZE=64K
planned_step() { # NAME: the largest step umadv_plan named in NAME's log, in bytes
    sed -n 's/.* touches \([0-9.]*\) \([KMG]\)iB at once.*/\1 \2/p' "$tmp/$1.err" | head -1 |
        awk '{ m = $2 == "K" ? 1024 : $2 == "M" ? 1048576 : 1073741824; printf "%.0f", $1 * m }'
}
train soracle UMADV_POLICY=oracle $sec -- $net --split 4
rc=$(cat "$tmp/soracle.rc")
sdigest=$(field soracle digest)
train stiny UMADV_POLICY=plan UMADV_BUDGET=1M $sec -- $net --split 4 --iters 2
train wtiny UMADV_POLICY=plan UMADV_BUDGET=1M $sec -- $net --iters 2
split_step=$(planned_step stiny)
whole_step=$(planned_step wtiny)
budget=$(( (${split_step:-0} + ${whole_step:-0}) / 2 ))
[ "$rc" -eq 0 ] && [ -n "$sdigest" ] && [ $((split_step + (4 << 20))) -lt "$budget" ]
ok $? "split oracle trains; largest step $split_step split, $whole_step whole: budget $budget" ||
    { diag "$tmp/soracle.out"; diag "$tmp/soracle.err"; }
losses soracle >"$tmp/soracle.loss"

train whole UMADV_POLICY=plan UMADV_BUDGET=$budget $sec -- $net --iters 2
grep -q 'umadv_plan: budget too small for a step' "$tmp/whole.err"
ok $? "unsplit at $budget bytes: umadv_plan refuses it (budget too small for a step)" ||
    diag "$tmp/whole.err"

same_as_split() { # NAME
    losses "$1" >"$tmp/$1.loss"
    [ "$(cat "$tmp/$1.rc")" -eq 0 ] && [ "$(field "$1" digest)" = "$sdigest" ] &&
        cmp -s "$tmp/soracle.loss" "$tmp/$1.loss"
}

for policy in demand prefetch-all plan; do
    train "s$policy" UMADV_POLICY=$policy UMADV_BUDGET=$budget $sec -- $net --split 4
    same_as_split "s$policy" && ! grep -q 'without a plan' "$tmp/s$policy.err"
    ok $? "split $policy at $budget bytes: bitwise the split oracle's losses and digest" ||
        diag "$tmp/s$policy.err"
done

# The iterations' lines split what moved by channel; their sums stay
# within umadv's totals, and plan stages at this budget.
iter_sum() { # NAME KEY: the sum of KEY over NAME's iteration lines
    awk -v k="$2" '$1 == "iter" { for (i = 3; i < NF; i++) if ($i == k) s += $(i + 1) }
                   END { printf "%.0f", s }' "$tmp/$1.out"
}
staged=$(iter_sum splan staged)
restored=$(iter_sum splan restored)
[ "$staged" -gt 0 ] && [ "$staged" -le "$(summary splan staged_bytes)" ] &&
    [ "$restored" -gt 0 ] && [ "$restored" -le "$(summary splan restored_bytes)" ]
ok $? "split plan's iterations staged $staged bytes and restored $restored, within the totals"

peak=$(summary splan resident_peak)
[ -n "$peak" ] && [ "$peak" -le "$budget" ]
ok $? "split plan's resident peak within the budget ($peak <= $budget)"

tap_done
