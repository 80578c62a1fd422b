#!/bin/sh
# TAP: bench/host_split.py over tests/bench/fake_perf.py (no perf, no
# GPU): each thread's and library's CPU over the window's iterations (the
# window's span over the median of the same last part of the run's
# times), the roles (the process's first thread, PyTorch's autograd
# thread, the others), rows under --min left out of the table and kept in
# the JSON, runs side by side, --from moving both the window and the
# iterations' part, and a clear error (exit 1) for a perf that fails, a
# report without samples, a run's JSON that is not torch_train.py's and a
# run not written NAME=DATA:JSON. Skipped without python3.
. "${top_srcdir:-.}/tests/tap.sh"
if ! command -v python3 >/dev/null 2>&1; then
    echo "1..0 # SKIP no python3"
    exit 0
fi
split="python3 $srcdir/bench/host_split.py --perf $srcdir/tests/bench/fake_perf.py"

# the last 40% of ten iterations: 10, 10, 12, 8 (median 10 ms); the window
# 1 s: 100 iterations
echo '{"runs": [{"times": [50, 50, 50, 50, 50, 50, 10, 10, 12, 8]}]}' >"$tmp/plan.json"
echo '{"native": {"times": [50, 50, 50, 50, 50, 50, 10, 10, 12, 8]}}' >"$tmp/native.json"

$split plan=a.data:"$tmp/plan.json" --json "$tmp/split.json" >"$tmp/out" 2>"$tmp/err"
ok $? "host_split.py runs over the stand-in" || diag "$tmp/err"

# value ROW COLUMN: the table's ROW (its name up to two spaces) in COLUMN
value() {
    awk -v r="$1" -v c="$2" 'substr($0, 1, length(r) + 2) == r "  " { print $(NF - c + 1) }' \
        "$tmp/out"
}
[ "$(value 'main: libtorch_cpu' 1)" = "2.00" ] && [ "$(value 'main: libcuda' 1)" = "1.00" ] &&
    [ "$(value 'main: kernel' 1)" = "0.50" ] && [ "$(value 'main, all' 1)" = "3.50" ]
ok $? "the first thread's libraries: ms over 100 iterations" || diag "$tmp/out"

[ "$(value 'autograd: libumadv' 1)" = "0.75" ] && [ "$(value 'autograd: libtorch_cpu' 1)" = "0.70" ] &&
    [ "$(value 'iteration, ms' 1)" = "10.0" ]
ok $? "pt_autograd_0 is the autograd thread; the iteration the last part's median" ||
    diag "$tmp/out"

! grep -q "autograd: rest\|other: libcuda" "$tmp/out" &&
    python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
assert abs(r["iterations"] - 100) < 1e-9, r["iterations"]
assert abs(r["ms"]["other"]["libcuda"] - 0.025) < 1e-9
assert abs(r["ms"]["autograd"]["rest"] - 0.025) < 1e-9
assert "libcuda" not in r["ms"]["main"] or abs(r["ms"]["main"]["libcuda"] - 1.0) < 1e-9
' "$tmp/split.json"
ok $? "rows under --min out of the table, in the JSON; a later thread is another's" ||
    diag "$tmp/out"

$split native=a.data:"$tmp/native.json" plan=b.data:"$tmp/plan.json" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 0 ] && head -n 1 "$tmp/out" | grep -q "native *plan$" &&
    [ "$(value 'main, all' 2)" = "3.50" ] && [ "$(value 'main, all' 1)" = "3.50" ]
ok $? "two runs side by side, --native's JSON read as --umadv's" || diag "$tmp/out"

$split plan=a.data:"$tmp/plan.json" --from 0 >"$tmp/out" 2>"$tmp/err"
[ "$(value 'iteration, ms' 1)" = "50.0" ] && [ "$(value 'main: libtorch_cpu' 1)" = "10.00" ]
ok $? "--from 0: every iteration's median (50 ms), 20 iterations in the window" ||
    diag "$tmp/out"

# fails RUN PATTERN: the run exits 1 and says PATTERN
fails() {
    $split "$1" >"$tmp/fail" 2>&1
    [ $? -eq 1 ] && grep -q "$2" "$tmp/fail"
}
fails plan=missing.data:"$tmp/plan.json" "missing.data: No such file"
ok $? "a perf that fails: exit 1 with its words" || diag "$tmp/fail"
fails plan=empty.data:"$tmp/plan.json" "empty.data: no samples"
ok $? "a report without samples: exit 1" || diag "$tmp/fail"
echo '{"runs": []}' >"$tmp/bad.json"
fails plan=a.data:"$tmp/bad.json" "bad.json: not a torch_train.py --json document"
ok $? "a JSON that is not torch_train.py's: exit 1 naming it" || diag "$tmp/fail"
fails plan-a.data "not NAME=PERF_DATA:RUN_JSON"
ok $? "a run not written NAME=DATA:JSON: exit 1" || diag "$tmp/fail"

tap_done
