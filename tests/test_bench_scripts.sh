#!/bin/sh
# TAP: the benchmark scripts without a GPU, over stand-ins that print or
# write what the real programs do, with made-up numbers.
# bench/policies.py over tests/bench/fake_mlp_train.py: one process per
# budget with every policy in it, budgets as shares of the footprint,
# ratios to that process's oracle and to the bound from the trace's link
# record, a policy umadv refused shown as such, and a loss or checksum
# that differs from oracle's flagged. bench/torch_policies.py over
# tests/bench/fake_torch_train.py: the same arithmetic for PyTorch runs,
# losses compared with native PyTorch's. bench/longrun.py over
# tests/bench/fake_longrun_{mlp,torch}.py: its table, its JSON, and its
# verdict failing on weights unlike oracle's, a block over its budget,
# or managed bytes left. Skipped without python3.
. "${top_srcdir:-.}/tests/tap.sh"
if ! command -v python3 >/dev/null 2>&1; then
    echo "1..0 # SKIP no python3"
    exit 0
fi

python3 "$srcdir/bench/policies.py" --exe "$srcdir/tests/bench/fake_mlp_train.py" \
    --budgets 20,50 --out "$tmp/out" >"$tmp/table" 2>"$tmp/err"
ok $? "policies.py runs over the stand-in" || diag "$tmp/err"

# row_value FILE KEY FIELD=VALUE...: KEY of the first row of FILE's
# "rows" whose FIELDs read VALUE
row_value() {
    python3 -c '
import json, sys
want = dict(a.split("=", 1) for a in sys.argv[3:])
rows = [r for r in json.load(open(sys.argv[1]))["rows"]
        if all(str(r.get(k)) == v for k, v in want.items())]
print(rows[0].get(sys.argv[2]) if rows else "missing")' "$@"
}

field() { # POLICY PCT KEY: in policies.json
    row_value "$tmp/out/policies.json" "$3" policy="$1" budget_pct="$2"
}

runs=$(grep -c '^\$ ' "$tmp/out"/budget-*.log | awk -F: '{ n += $2 } END { print n }')
[ "$(ls "$tmp/out"/budget-*.log | wc -l)" -eq 2 ] && [ "$runs" -eq 2 ] &&
    grep -q -- '--policies oracle,demand,prefetch-all,plan' "$tmp/out/budget-50.log"
ok $? "one process per budget, all four policies in it"

# 4 GiB footprint: 50% is 2 GiB, 20% 819 MiB (rounded down to MiB).
[ "$(field plan 50 budget)" = $((2 << 30)) ] && [ "$(field plan 20 budget)" = $((819 << 20)) ]
ok $? "budgets are shares of the managed peak, in whole MiB"

# plan 125 ms against oracle 100; bound max(100, 2 GiB / 50 GB/s, 1 GiB / 10 GB/s) = 107.4
[ "$(field plan 50 x_oracle)" = 1.25 ] &&
    awk -v b="$(field plan 50 bound_ms)" 'BEGIN { exit !(b > 107.37 && b < 107.38) }'
ok $? "x oracle against the same process's oracle; the bound from the link record"

[ "$(field prefetch-all 20 too_small)" = "budget too small" ] &&
    grep -q 'prefetch-all *refused: budget too small' "$tmp/table"
ok $? "a policy umadv refused is shown as refused"

[ "$(field demand 50 bitwise_identical)" = False ] && [ "$(field plan 50 bitwise_identical)" = True ]
ok $? "a checksum that differs from oracle's is flagged, an equal one is not"

# ---- bench/torch_policies.py ----------------------------------------

python3 "$srcdir/bench/torch_policies.py" --script "$srcdir/tests/bench/fake_torch_train.py" \
    --budgets 50 --out "$tmp/torch" >"$tmp/torch.table" 2>"$tmp/torch.err"
ok $? "torch_policies.py runs over the stand-in" || diag "$tmp/torch.err"

tfield() { # MODEL POLICY KEY: in torch_policies.json
    row_value "$tmp/torch/torch_policies.json" "$3" model="$1" policy="$2"
}

[ "$(tfield resnet50 plan budget)" = $((2 << 30)) ] &&
    grep -q -- '--policies oracle,demand,prefetch-all,plan' "$tmp/torch/resnet50-50.log" &&
    grep -q -- '--trace' "$tmp/torch/resnet50-footprint.log"
ok $? "per model: a footprint run that keeps the trace, then one process at 50% (2 GiB)"

# plan 300 ms, oracle 40; bound max(40, 2.5 GiB / 50 GB/s, 2.5 GiB / 10 GB/s) = 268.4
[ "$(tfield resnet50 plan x_oracle)" = 7.5 ] &&
    awk -v x="$(tfield resnet50 plan x_bound)" 'BEGIN { exit !(x > 1.1175 && x < 1.1178) }'
ok $? "x oracle, and x bound from the recorded link (plan $(tfield resnet50 plan x_bound))"

[ "$(tfield vgg16 demand identical)" = False ] && [ "$(tfield vgg16 plan identical)" = True ] &&
    grep -q 'vgg16 .* demand .* NO$' "$tmp/torch.table"
ok $? "losses that differ from native PyTorch's are flagged"


# ---- bench/longrun.py -------------------------------------------------

# longrun NAME [ENV=VALUE...]: the long run over the stand-ins into
# $tmp/NAME; NAME.table, NAME.rc
longrun() {
    name=$1
    shift
    env "$@" python3 "$srcdir/bench/longrun.py" --mlp "$srcdir/tests/bench/fake_longrun_mlp.py" \
        --torch-script "$srcdir/tests/bench/fake_longrun_torch.py" --lib /dev/null \
        --iters 10 --budget-change 3 --out "$tmp/$name" >"$tmp/$name.table" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}

lfield() { # NAME WORKLOAD POLICY KEY: in NAME/longrun.json
    row_value "$tmp/$1/longrun.json" "$4" workload="$2" policy="$3"
}

longrun lr
[ "$(cat "$tmp/lr.rc")" -eq 0 ] && grep -q '^long run: every run complete' "$tmp/lr.table" &&
    grep -q "^budgets: every block's resident peak within" "$tmp/lr.table"
ok $? "longrun.py runs both workloads over the stand-ins and passes them" || diag "$tmp/lr.err"

grep -q -- '--budget-change 3' "$tmp/lr/mlp.log" && grep -q -- '--policies oracle,demand,prefetch-all,plan' "$tmp/lr/mlp.log" &&
    grep -q -- '--umadv' "$tmp/lr/torch.log" && grep -q -- '--budget-seed 1' "$tmp/lr/torch.log"
ok $? "each workload is one process with every policy, the budget changes and the seed"

[ "$(lfield lr mlp plan iterations)" = 10 ] && [ "$(lfield lr mlp plan refused)" = 1 ] &&
    grep -q '^mlp  *plan  *10 3 (1.00-1.25 GiB), 1 refused  *100.0  *yes  *0  *0 B$' "$tmp/lr.table"
ok $? "a row per policy: iterations, budgets set and refused, ms/iter, bitwise, managed left"

longrun sum FAKE_BREAK=checksum
[ "$(cat "$tmp/sum.rc")" -eq 1 ] && [ "$(lfield sum mlp demand bitwise_equal)" = False ] &&
    [ "$(lfield sum mlp plan bitwise_equal)" = True ] && grep -q 'FAILED' "$tmp/sum.table"
ok $? "weights unlike oracle's fail the long run"

longrun over FAKE_BREAK=over
[ "$(cat "$tmp/over.rc")" -eq 1 ] && [ "$(lfield over mlp plan blocks_over)" = 1 ] &&
    grep -q '^budgets: OVER in mlp plan (1 blocks)' "$tmp/over.table"
ok $? "a block over its budget fails the long run, named apart from bitwise equality"

longrun left FAKE_BREAK=left
[ "$(cat "$tmp/left.rc")" -eq 1 ] && [ "$(lfield left mlp plan managed_left)" = $((8 << 20)) ]
ok $? "managed bytes left at exit fail the long run"

longrun params FAKE_BREAK=params
[ "$(cat "$tmp/params.rc")" -eq 1 ] && [ "$(lfield params resnet50 prefetch-all bitwise_equal)" = False ]
ok $? "PyTorch parameters unlike oracle's fail the long run"

tap_done
