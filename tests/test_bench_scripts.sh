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
# or managed bytes left. bench/sim_vs_exec.py over fake_mlp_train.py
# (fake_torch_train.py with --torch) and tests/bench/fake_umadv.py, a
# stand-in for umadv plan --json: the trace each budget's process saves
# is the one simulated, at that budget; measured over simulated time and
# bytes, flagged beyond 15% and 1%; a budget the simulator refuses; a
# failed run. Then over the real umadv plan and a trace mlp_train
# recorded: its numbers reported unchanged, its refusal recognised.
# bench/peers.py over fake_torch_train.py: native, save_on_cpu and
# checkpoint runs, a footprint run keeping the trace, one process per
# budget (save_on_cpu's peak and shares of the footprint); ratios to
# native, to the physical bound (fewest bytes from the trace over the
# pinned rates, or the UVM rates as a stand-in) and to the UVM-rate
# bound; losses unlike native's flagged; not applicable shown; the
# largest batch under a cap found exactly, one process per probe; a run
# that fails exits 1; --loader passed to every run; --rounds: every timed
# process once a round, medians of the rows and of each round's ratios,
# save_on_cpu over plan at its peak per round. benchlib.min_traffic (the bound's fewest bytes) on
# a trace with dead data, and on a recorded ResNet-50 trace against the
# real umadv plan (never above its policies, near plan). bench/vgg.py
# over tests/bench/fake_vgg_train.py: an unsplit oracle per batch, budgets
# as sizes and shares of its managed peak, one above the free memory
# skipped, vgg_train's own --split auto per budget with an oracle at that
# split as the digest's reference, steady-state medians, the bound from
# plan's bytes over --rates, a digest unlike the reference's flagged (exit
# 1), and umadv_plan's refusal of an unsplit budget shown (no bound).
# bench/ddp.py
# over tests/bench/fake_ddp_train.py under tests/bench/fake_torchrun.py:
# the footprint the largest rank's, the budget a per-rank UMADV_BUDGET
# list, the job's time its slowest rank's, scaling efficiency, --share's
# two processes at half the budget against one alone, losses unlike
# native DDP's failing the bench, a world larger than the GPUs skipped,
# a failing rank failing the bench with its rank named.
# Skipped without python3.
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

# plan 125 ms against oracle 100; migrated and staged bytes together:
# bound max(100, 2.5 GiB / 50 GB/s, 1.5 GiB / 10 GB/s) = 161.06
[ "$(field plan 50 x_oracle)" = 1.25 ] &&
    awk -v b="$(field plan 50 bound_ms)" 'BEGIN { exit !(b > 161.06 && b < 161.07) }' &&
    [ "$(field plan 50 fetched_per_iter)" = $((5 << 29)) ] &&
    [ "$(field plan 50 phys_ms)" = None ] && grep -q ' x phys ' "$tmp/table"
ok $? "x oracle against the same process's oracle; the bound from the link record, staged bytes in" ||
    diag "$tmp/table"

# The stand-in logs umadv's error as the planner does; the row gives it.
case $(field prefetch-all 20 too_small) in
"step 3 (fc1.backward) touches 1.00 GiB at once, more than the budget of 819.00 MiB"*) true ;;
*) false ;;
esac && grep -q 'prefetch-all *refused: step 3 (fc1.backward)' "$tmp/table"
ok $? "a policy umadv refused is shown as refused, with umadv's reason"

[ "$(field demand 50 bitwise_identical)" = False ] && [ "$(field plan 50 bitwise_identical)" = True ]
ok $? "a checksum that differs from oracle's is flagged, an equal one is not"

# A real trace (mlp_train's, H200): the physical and cut bounds at 75% of
# the stand-in's 4 GiB, from the fewest bytes the budget forces.
FAKE_TRACE=$srcdir/data/traces/h200-mlp16-bs32768.umt python3 "$srcdir/bench/policies.py" \
    --exe "$srcdir/tests/bench/fake_mlp_train.py" --budgets 75 --out "$tmp/outr" \
    >"$tmp/tabler" 2>"$tmp/errr"
python3 -c '
import json, sys
r = {x["policy"]: x for x in json.load(open(sys.argv[1]))["rows"]}
p, o = r["plan"], r["oracle"]
sys.exit(not (p["phys_ms"] >= 100 and p["cut_ms"] >= p["phys_ms"] and
              abs(p["x_phys"] - 125 / p["phys_ms"]) < 1e-9 and o["x_phys"] is None))' \
    "$tmp/outr/policies.json"
ok $? "on a real trace: x phys and x cut from the budget's fewest bytes" || diag "$tmp/errr"

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


# ---- bench/peers.py ---------------------------------------------------

fake_torch=$srcdir/tests/bench/fake_torch_train.py
FAKE_CAP=native=100,save_on_cpu=260,checkpoint=333,umadv=1000 python3 "$srcdir/bench/peers.py" \
    --script "$fake_torch" --lib /dev/null --models resnet50,vgg16,gpt2 --batches 64 \
    --budgets soc,25,50 --pinned-gbps 50,25 --cap-step 1 --cap-max 512 --out "$tmp/peers" \
    >"$tmp/peers.table" 2>"$tmp/peers.err"
ok $? "peers.py runs over the stand-in" || diag "$tmp/peers.err"

# pfield NAME MODEL METHOD BUDGET_LABEL KEY: KEY of a row of NAME/peers.json
pfield() {
    python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
rows = [r for e in doc["models"][sys.argv[2]]["batches"] for r in e["rows"]
        if r["method"] == sys.argv[3] and r["budget_label"] == sys.argv[4]]
print(rows[0].get(sys.argv[5]) if rows else "missing")' "$tmp/$1/peers.json" "$2" "$3" "$4" "$5"
}

# near VALUE LO HI: LO < VALUE < HI
near() { awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x > lo && x < hi) }'; }

log=$tmp/peers/resnet50-bs64
budget_logs() { # one process per policy at each budget
    for p in oracle plan prefetch-all demand; do
        grep -q "^\\\$ env UMADV_BUDGET=1610612736 .*--policies $p\$" "$log-soc-$p.log" &&
            grep -q "^\\\$ env UMADV_BUDGET=2147483648 .*--policies $p\$" "$log-50-$p.log" ||
            return 1
    done
}
grep -q -- '--native --iters 10$' "$log-native.log" &&
    grep -q -- '--peer save_on_cpu --iters 10$' "$log-save_on_cpu.log" &&
    grep -q -- '--peer checkpoint --iters 10$' "$log-checkpoint.log" &&
    grep -q -- "--policies oracle --trace $log.umt\$" "$log-footprint.log" &&
    budget_logs && [ "$(pfield peers resnet50 plan 50% budget)" = $((2 << 30)) ]
ok $? "a process per peer, a footprint run with its trace, one per budget and policy: soc peak and 50%"

# plan at 50% (2 GiB): 300 ms, native 30; the trace forces 1 GiB each way
# at 2 GiB: bound max(30, 1 GiB / 50 GB/s, 1 GiB / 25 GB/s) = 42.95 ms;
# UVM bound max(oracle 40, 2.5 GiB / 50 GB/s, 2.5 GiB / 10 GB/s) = 268.4 ms
[ "$(pfield peers resnet50 plan 50% x_native)" = 10.0 ] &&
    [ "$(pfield peers resnet50 plan 50% min_in)" = $((1 << 30)).0 ] &&
    near "$(pfield peers resnet50 plan 50% bound_ms)" 42.949 42.950 &&
    near "$(pfield peers resnet50 plan 50% x_phys)" 6.9849 6.9850 &&
    near "$(pfield peers resnet50 plan 50% x_uvm)" 1.1175 1.1178 &&
    near "$(pfield peers resnet50 plan 50% x_cut)" 6.9849 6.9850 &&
    grep -q '^64  *plan  *50% 2.00G  *300.0  *10.00  *6.98  *6.98  *1.12  *2.00  *2.50  *2.50  *0  *yes$' \
        "$tmp/peers.table"
ok $? "x native, x the physical bound (the trace's fewest bytes, pinned rates), x the UVM bound"

# save_on_cpu: 300 ms at its 1.5 GiB peak, where the trace forces 2 GiB
# each way: bound 2 GiB / 25 GB/s = 85.9 ms; its hooks moved 2 GiB each way
near "$(pfield peers resnet50 save_on_cpu - x_phys)" 3.4924 3.4925 &&
    [ "$(pfield peers resnet50 plan 'save_on_cpu peak' min_out)" = $((2 << 30)).0 ] &&
    grep -q '^64  *save_on_cpu  *-  *300.0  *10.00  *3.49  *3.49  *-  *1.50  *2.00  *2.00  *-  *yes$' \
        "$tmp/peers.table" && [ "$(pfield peers resnet50 native - x_phys)" = 1.0 ]
ok $? "peers: GPU memory held, bytes each way, the bound at the memory they hold"

# 25% (1 GiB): a step of the trace alone needs 1.5 GiB: no bound
[ "$(pfield peers resnet50 plan 25% bound_ms)" = None ] &&
    grep -q '^64  *plan  *25% 1.00G  *300.0  *10.00  *-  *-  *1.12 ' "$tmp/peers.table"
ok $? "a budget below a step's bytes has no physical bound"

[ "$(pfield peers vgg16 checkpoint - identical)" = False ] &&
    [ "$(pfield peers resnet50 checkpoint - identical)" = True ] &&
    [ "$(pfield peers vgg16 demand 50% identical)" = False ] &&
    [ "$(pfield peers vgg16 plan 50% identical)" = True ] &&
    grep -q '^64  *checkpoint  *-  *40.0 .* NO$' "$tmp/peers.table" &&
    [ "$(pfield peers gpt2 checkpoint - outcome)" = "not applicable" ] &&
    grep -q '^64  *checkpoint  *-  *not applicable: ' "$tmp/peers.table"
ok $? "losses unlike native's are flagged (checkpoint, demand); not applicable is shown"

[ "$(pfield peers resnet50 prefetch-all 50% out_bytes)" = $((1 << 30)) ] &&
    [ "$(pfield peers resnet50 prefetch-all 50% in_bytes)" = 805306368.0 ] &&
    [ "$(pfield peers resnet50 plan 50% out_bytes)" = 2684354560.0 ]
ok $? "bytes each way count pinned staging with UVM migrations"

# cap FIELD MODEL METHOD: the largest batch search's FIELD
cap() {
    python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["models"][sys.argv[2]]["cap"][sys.argv[3]]
print(json.dumps(c[sys.argv[4]]))' "$tmp/$1/peers.json" "$2" "$3" "$4"
}
probes=$(cap peers resnet50 native probes | python3 -c '
import json, sys; print(" ".join("%d%s" % (p["batch"], "+" if p["trained"] else "-")
                                for p in json.load(sys.stdin)))')
[ "$(cap peers resnet50 native largest_batch)" = 100 ] &&
    [ "$(cap peers resnet50 save_on_cpu largest_batch)" = 260 ] &&
    [ "$(cap peers resnet50 checkpoint largest_batch)" = 333 ] &&
    [ "$(cap peers resnet50 umadv largest_batch)" = 512 ] &&
    [ "$(cap peers resnet50 umadv hit_cap_max)" = true ] &&
    [ "$(cap peers gpt2 checkpoint largest_batch)" = null ] &&
    [ "$probes" = "32+ 64+ 128- 96+ 112- 104- 100+ 102- 101-" ] &&
    [ "$(ls "$tmp"/peers/resnet50-cap-native-bs*.log | wc -l)" -eq 9 ] &&
    grep -q -- '--native --cap-gib 16.0 --iters 6$' "$tmp/peers/resnet50-cap-native-bs101.log" &&
    grep -q '^\$ env UMADV_BUDGET=17179869184 .*--umadv --policies plan --iters 6$' \
        "$tmp/peers/resnet50-cap-umadv-bs512.log" &&
    grep -q '^largest batch under 16 GiB (multiples of 1): native 100, save_on_cpu 260, checkpoint 333, umadv 512+$' \
        "$tmp/peers.table"
ok $? "the largest batch under the cap, exactly, one process per probe ($probes)"

python3 "$srcdir/bench/peers.py" --script "$fake_torch" --lib /dev/null --models resnet50 \
    --batches 64 --budgets 50 --policies plan --skip-cap --loader --out "$tmp/peers-loader" \
    >"$tmp/peers-loader.table" 2>&1
runs=$(ls "$tmp"/peers-loader/*.log | wc -l)
[ "$runs" -ge 4 ] && [ "$(grep -l -- ' --loader' "$tmp"/peers-loader/*.log | wc -l)" -eq "$runs" ]
ok $? "--loader reaches every run, peers and umadv alike ($runs runs)" || diag "$tmp/peers-loader.table"

# --rounds 3 on a machine that drifts (round 2 all twice as slow, round 3
# 1.5x and plan 3x more): medians of the rows, ratios the medians of each
# round's own (the bound over that round's native time)
FAKE_ROUNDS=1,2,1.5 FAKE_ROUND_PLAN=1,1,3 python3 "$srcdir/bench/peers.py" --script "$fake_torch" \
    --lib /dev/null --models resnet50 --batches 64 --budgets soc,50 --policies oracle,plan \
    --pinned-gbps 50,25 --skip-cap --rounds 3 --out "$tmp/peers-rounds" \
    >"$tmp/peers-rounds.table" 2>&1
ok $? "peers.py --rounds 3 runs over the stand-in" || diag "$tmp/peers-rounds.table"

rlog=$tmp/peers-rounds/resnet50-bs64
ls "$rlog"-r1-native.log "$rlog"-r2-save_on_cpu.log "$rlog"-r3-soc-plan.log "$rlog"-r3-50-plan.log \
    "$rlog"-footprint.log >/dev/null 2>&1 && [ "$(ls "$tmp"/peers-rounds/*.log | wc -l)" -eq 22 ] &&
    [ "$(pfield peers-rounds resnet50 native - ms_rounds)" = "[30.0, 60.0, 45.0]" ]
ok $? "--rounds: every timed process once a round (its log -rK-), the footprint once"

[ "$(pfield peers-rounds resnet50 plan 'save_on_cpu peak' ms_rounds)" = "[300.0, 600.0, 1350.0]" ] &&
    [ "$(pfield peers-rounds resnet50 plan 'save_on_cpu peak' ms_per_iter)" = 600.0 ] &&
    [ "$(pfield peers-rounds resnet50 plan 'save_on_cpu peak' x_native)" = 10.0 ] &&
    [ "$(pfield peers-rounds resnet50 plan 50% x_phys)" = 10.0 ] &&
    [ "$(pfield peers-rounds resnet50 native - ms_per_iter)" = 45.0 ] &&
    grep -q '^64  *plan  *soc peak 1.50G  *600.0  *10.00 ' "$tmp/peers-rounds.table" &&
    grep -q '^  plan  *soc peak 1.50G  *300.0 (10.00)  600.0 (10.00)  1350.0 (30.00)$' \
        "$tmp/peers-rounds.table"
ok $? "--rounds: ms/iter the median of the rounds', x native and x phys of each round's own"

python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))["models"]["resnet50"]["batches"][0]
assert e["rounds"] == 3 and e["soc_over_plan"] == 1.0, e["soc_over_plan"]
assert [round(x, 3) for x in e["soc_over_plan_rounds"]] == [1.0, 1.0, 0.333], e
' "$tmp/peers-rounds/peers.json" &&
    grep -q "^batch 64: save_on_cpu / plan at save_on_cpu's peak: 1.00 (median of 1.00, 1.00, 0.33)$" \
        "$tmp/peers-rounds.table" &&
    grep -q "^batch 64: save_on_cpu / plan at save_on_cpu's peak: 1.00$" "$tmp/peers.table" &&
    ! grep -q "per round" "$tmp/peers.table"
ok $? "save_on_cpu over plan at its peak: per round and their median; one round, one figure"

(cd "$srcdir/bench" && python3 -c '
from peers import merged_row
ok = {"method": "save_on_cpu", "outcome": "ok", "ms_per_iter": 1.0, "x_native": 1.0,
      "held": 1, "faults": None, "identical": True, "command": "a"}
r = merged_row([ok, dict(ok, outcome="out of memory", command="b")])
assert r["outcome"] == "failed" and "the rounds disagree: ok, out of memory" in r["why"], r
r = merged_row([ok, dict(ok, held=3, identical=False, ms_per_iter=3.0)])
assert r["held"] == 3 and r["identical"] is False and r["ms_per_iter"] == 2.0, r
print("ok")') >"$tmp/rounds.out" 2>&1 &&
    ! python3 "$srcdir/bench/peers.py" --script "$fake_torch" --rounds 0 >/dev/null 2>&1
ok $? "--rounds: rounds that disagree fail the row; held the largest, losses all rounds'; 0 refused" ||
    diag "$tmp/rounds.out"

FAKE_CAP=native=100,umadv=50 python3 "$srcdir/bench/peers.py" --script "$fake_torch" \
    --lib /dev/null --models vgg16 --cap-only --cap-methods native,umadv --cap-start 200 \
    --out "$tmp/peers-cap" >"$tmp/peers-cap.table" 2>&1
grep -q '^largest batch under 16 GiB (multiples of 8): native 96, umadv 48$' \
    "$tmp/peers-cap.table" && ! ls "$tmp"/peers-cap/*native.log "$tmp"/peers-cap/*save_on_cpu* \
    >/dev/null 2>&1 && [ "$(cap peers-cap vgg16 native largest_batch)" = 96 ]
ok $? "--cap-only --cap-methods: the search alone, those methods, halving from above"

# torch_train.py's guard of save_on_cpu's pinned memory, without torch:
# the host's spare memory read every GiB packed (and before a larger
# tensor) past what an earlier iteration packed; less than twice what may
# come before the next reading ends the run as out of memory.
cat >"$tmp/meminfo" <<'EOF'
MemTotal:       131072000 kB
MemFree:          100000 kB
MemAvailable:   65536000 kB
EOF
(cd "$srcdir/examples" && python3 -c '
import sys
from torch_train import HOST_CHECK_BYTES as G, HostGuard, HostOutOfMemory, host_spare
assert host_spare(sys.argv[1]) == (65536000 - 131072000 // 16) * 1024, host_spare(sys.argv[1])
assert host_spare(sys.argv[1] + ".none") is None
spare, reads = [5 * G], []
def read():
    reads.append(1)
    return spare[0]
g = HostGuard(read)
for _ in range(2048):
    g.check(1 << 20)          # 2 GiB in 1 MiB tensors: read twice
assert len(reads) == 2, reads
spare[0] = 2 * G - 1
for _ in range(1023):
    g.check(1 << 20)          # below the next GiB: not read
try:
    g.check(1 << 20)
    raise SystemExit("not refused")
except HostOutOfMemory as e:
    assert "out of memory on the host" in str(e) and "3.00 GiB packed" in str(e), e
g.iteration_begins()
spare[0], reads = 0, []
for _ in range(3072):
    g.check(1 << 20)          # up to what the last iteration packed: the cache serves, not read
assert not reads, reads
g.iteration_begins()
spare[0] = 7 * G
try:
    g.check(4 * G)            # past it, a 4 GiB tensor needs 8 spare
    raise SystemExit("a large tensor not refused")
except HostOutOfMemory:
    pass
spare[0] = None
g.check(4 * G)                # not known: not refused
print("ok")' "$tmp/meminfo") >"$tmp/guard.out" 2>&1
ok $? "save_on_cpu's host guard: reads every GiB, refuses what the host cannot spare" ||
    diag "$tmp/guard.out"

FAKE_KILL=umadv=40 python3 "$srcdir/bench/peers.py" --script "$fake_torch" \
    --lib /dev/null --models vgg16 --cap-only --cap-methods umadv --cap-start 64 \
    --out "$tmp/peers-kill" >"$tmp/peers-kill.table" 2>&1
[ "$(cap peers-kill vgg16 umadv largest_batch)" = 40 ] &&
    cap peers-kill vgg16 umadv probes | grep -q '"why": "failed (killed by SIGKILL)"'
ok $? "a probe killed by a signal (the OOM killer's) does not train, and says how it ended" ||
    diag "$tmp/peers-kill.table"

# The search alone, against every largest batch from 0 to 300, starts
# above and below it, steps of 1 and 8: it finds exactly the multiple.
(cd "$srcdir/bench" && python3 -c '
from peers import largest_batch
bad = []
for top in range(301):
    for start in (1, 8, 32, 1000):
        for step in (1, 8):
            found, limited, tried = largest_batch(lambda b: (b <= top, "", ""), start, step, 4096)
            if found != top // step * step or limited:
                bad.append((top, start, step, found))
print(bad[:5])
raise SystemExit(bool(bad))') >"$tmp/search.out" 2>&1
ok $? "the search finds the largest batch for any largest, start and step" ||
    diag "$tmp/search.out"

# X and Y, 1 GiB each, in 1 GiB: X read, Y read, X overwritten. X is
# dead from its read to its overwrite (dropped free for Y); Y goes out
# for the overwrite and comes back: 1 GiB each way, not 2 out.
cat >"$tmp/dead.umt" <<'EOF'
umadv-trace 1
trace section_size=1073741824 allocs=2 steps=3 accesses=3
alloc id=0 base=0x0 size=1073741824 kind=weight
alloc id=1 base=0x0 size=1073741824 kind=weight
step id=0 iter=0 kind=kernel dur_ns=1
  a alloc=0 first=0 count=1 mode=r faults=0
step id=1 iter=0 kind=kernel dur_ns=1
  a alloc=1 first=0 count=1 mode=r faults=0
step id=2 iter=0 kind=kernel dur_ns=1
  a alloc=0 first=0 count=1 mode=w faults=0
EOF
(cd "$srcdir/bench" && python3 -c '
import sys
from benchlib import min_traffic, read_trace
moved = min_traffic(read_trace(sys.argv[1]), 1 << 30)
print(moved)
raise SystemExit(moved != (1 << 30, 1 << 30))' "$tmp/dead.umt") >"$tmp/dead.out" 2>&1
ok $? "the fewest bytes: dead data leaves free, an overwrite fetches nothing" ||
    diag "$tmp/dead.out"

# On a trace PyTorch ResNet-50 recorded: the fewest bytes never exceed
# what umadv plan's policies move at the same budget, and come close to
# the plan's (Belady's residency, sections of one size but the last).
if [ -x "$umadv" ]; then
    (cd "$srcdir/bench" && python3 -c '
import json, subprocess, sys
from benchlib import min_traffic, read_trace
trace = sys.argv[2]
bad = []
for budget in (2905604096, 4294967296):
    low_in, low_out = min_traffic(read_trace(trace), budget)
    doc = json.loads(subprocess.run([sys.argv[1], "plan", trace, "--budget", str(budget),
                                     "--iteration", "0", "--json"], capture_output=True,
                                    check=True, text=True).stdout)
    sims = {p["policy"]: p for p in doc["budgets"][0]["policies"]}
    print(budget, low_in, low_out, {k: (v["fetched_bytes"], v["evicted_bytes"])
                                     for k, v in sims.items()})
    for policy in ("plan", "prefetch-all"):
        if not low_in <= sims[policy]["fetched_bytes"]:
            bad.append((budget, policy, "fetched"))
    for policy in ("plan", "prefetch-all", "demand"):
        if not low_out <= sims[policy]["evicted_bytes"]:
            bad.append((budget, policy, "evicted"))
    if not low_in > 0.9 * sims["plan"]["fetched_bytes"]:
        bad.append((budget, "plan", "far"))
print(bad)
raise SystemExit(bool(bad))' "$umadv" "$srcdir/data/traces/h200-resnet50-bs64.umt") \
        >"$tmp/lowest.out" 2>&1
    ok $? "the fewest bytes of a real trace: below every umadv plan policy's, near plan's" ||
        diag "$tmp/lowest.out"
else
    ok 0 "# SKIP $umadv is not built"
fi

python3 "$srcdir/bench/peers.py" --script "$fake_torch" --lib /dev/null --models resnet50 \
    --batches 64 --budgets 50 --skip-cap --out "$tmp/peers-uvm" >"$tmp/peers-uvm.table" 2>&1
# stand-in rates: bound max(30, 1 GiB / 50 GB/s, 1 GiB / 10 GB/s) = 107.37 ms
near "$(pfield peers-uvm resnet50 plan 50% x_phys)" 2.7939 2.7940 &&
    grep -q 'GB/s (stand-in: the trace.s UVM fetch and evict rates)' "$tmp/peers-uvm.table" &&
    ! ls "$tmp"/peers-uvm/*cap* >/dev/null 2>&1 && [ -e "$tmp/peers-uvm/resnet50-bs64-50-plan.log" ] &&
    ! ls "$tmp"/peers-uvm/resnet50-bs64-soc* >/dev/null 2>&1
ok $? "without --pinned-gbps the UVM rates stand in; --skip-cap probes nothing; no soc budget"

python3 "$srcdir/bench/peers.py" --script "$fake_torch" --lib /dev/null --models resnet50 \
    --batches 64 --budgets 50 --policies plan --skip-cap --out "$tmp/peers-plan" \
    >"$tmp/peers-plan.table" 2>&1
[ -e "$tmp/peers-plan/resnet50-bs64-50-plan.log" ] &&
    ! ls "$tmp"/peers-plan/resnet50-bs64-50-demand* "$tmp"/peers-plan/resnet50-bs64-50-oracle* \
        >/dev/null 2>&1 &&
    [ -n "$(pfield peers-plan resnet50 plan 50% x_phys)" ] &&
    [ "$(pfield peers-plan resnet50 demand 50% x_phys)" = missing ]
ok $? "--policies plan: one umadv process at the budget, its row alone" || diag "$tmp/peers-plan.table"
! python3 "$srcdir/bench/peers.py" --script "$fake_torch" --lib /dev/null --policies plan,bogus \
    --skip-cap --out "$tmp/peers-bad" >/dev/null 2>"$tmp/peers-bad.err" &&
    grep -q -- "--policies: of oracle,plan,prefetch-all,demand" "$tmp/peers-bad.err"
ok $? "--policies with an unknown policy is refused, naming the choices" || diag "$tmp/peers-bad.err"

python3 "$srcdir/bench/peers.py" --script /nonexistent --lib /dev/null --models resnet50 \
    --batches 64 --skip-cap --out "$tmp/peers-fail" >"$tmp/peers-fail.table" 2>"$tmp/peers-fail.err"
[ $? -eq 1 ] &&
    grep -q "^bench: resnet50-bs64 native failed (exit 2): .*can't open file '/nonexistent'" \
        "$tmp/peers-fail.err" &&
    [ ! -s "$tmp/peers-fail.table" ]
ok $? "a run that fails exits 1 and says which, with the last line it wrote on standard error" ||
    diag "$tmp/peers-fail.err"

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


# ---- bench/sim_vs_exec.py ---------------------------------------------

# sve NAME [ENV=VALUE...] -- ARGS...: the script into $tmp/NAME, over
# fake_mlp_train.py unless ARGS say otherwise; NAME.table, .err, .rc
sve() {
    name=$1
    shift
    # "--" becomes the script and its defaults, in place (each word goes
    # round to the end once): env ENV... python3 sim_vs_exec.py ... ARGS...
    i=$#
    while [ "$i" -gt 0 ]; do
        word=$1
        shift
        if [ "$word" = -- ]; then
            set -- "$@" python3 "$srcdir/bench/sim_vs_exec.py" \
                --exe "$srcdir/tests/bench/fake_mlp_train.py" --out "$tmp/$name"
        else
            set -- "$@" "$word"
        fi
        i=$((i - 1))
    done
    env "$@" >"$tmp/$name.table" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}

sfield() { # NAME PCT POLICY KEY: in NAME/sim_vs_exec.json
    row_value "$tmp/$1/sim_vs_exec.json" "$4" budget_pct="$2" policy="$3"
}

# budget_value NAME PCT KEY: KEY of the budget PCT of NAME/sim_vs_exec.json
budget_value() {
    python3 -c '
import json, sys
b = [b for b in json.load(open(sys.argv[1]))["budgets"] if str(b["budget_pct"]) == sys.argv[2]]
print(json.dumps(b[0][sys.argv[3]]) if b else "missing")' "$tmp/$1/sim_vs_exec.json" "$2" "$3"
}

fake_umadv=$srcdir/tests/bench/fake_umadv.py
sve sv -- --umadv "$fake_umadv" --budgets 20,50
[ "$(cat "$tmp/sv.rc")" -eq 0 ] && grep -q '^4 of 8 rows agree$' "$tmp/sv.table"
ok $? "sim_vs_exec.py runs over the stand-ins, exit 0 with rows that disagree" ||
    diag "$tmp/sv.err"

# Each budget's process profiles (oracle first), saves the trace, and that
# file is simulated under the process's budget, iteration 0.
trace50=$tmp/sv/mlp-50.umt
grep -q -- "--policies oracle,demand,prefetch-all,plan --save-trace $trace50\$" \
    "$tmp/sv/mlp-50.log" &&
    budget_value sv 50 executor_command |
    grep -q 'UMADV_BUDGET=2147483648 .*UMADV_REPROFILE_FAULTS=0 ' &&
    budget_value sv 50 executor_command | grep -q -- '-u UMADV_LOOKAHEAD ' &&
    [ "$(budget_value sv 50 simulator_commands)" = \
      "[\"$fake_umadv plan $trace50 --budget 2147483648 --iteration 0 --json\"]" ]
ok $? "one process per budget saves the trace it replays; that trace is simulated at its budget"

# Against fake_umadv.py's table: plan 125 ms measured, 120 simulated,
# 2 GiB fetched against 2 GiB + 10 MiB (0.49%): it agrees.
awk -v x="$(sfield sv 50 plan x_sim)" 'BEGIN { exit !(x > 1.04166 && x < 1.04167) }' &&
    [ "$(sfield sv 50 plan flags)" = "[]" ] && [ "$(sfield sv 50 oracle flags)" = "[]" ] &&
    grep -q '^50% 2.00G  *plan  *120.0  *125.0  *1.042  *2.010  *2.000  *1.000  *1.000 .* ok$' \
        "$tmp/sv.table"
ok $? "measured over simulated time; bytes within 1% agree"

[ "$(sfield sv 50 prefetch-all flags)" = "['TIME']" ] &&
    [ "$(sfield sv 50 demand flags)" = "['BYTES']" ] &&
    grep -q '^50% 2.00G  *prefetch-all .* TIME$' "$tmp/sv.table" &&
    grep -q '^50% 2.00G  *demand .* BYTES$' "$tmp/sv.table"
ok $? "time off by 25% is flagged TIME, 3 GiB evicted against none BYTES"

[ "$(sfield sv 20 demand refused_by)" = simulator ] &&
    [ "$(sfield sv 20 demand flags)" = "['REFUSED']" ] &&
    [ "$(sfield sv 20 prefetch-all refused_by)" = both ] &&
    [ "$(sfield sv 20 prefetch-all flags)" = "[]" ] &&
    [ "$(sfield sv 20 oracle x_sim)" = 1.0 ] &&
    grep -q -- '--budget 100% --iteration 0 --json --policy oracle' \
        "$tmp/sv/mlp-20.plan-oracle.log"
ok $? "a budget the simulator refuses: REFUSED where the executor ran, oracle simulated alone"

sve svt -- --umadv "$fake_umadv" --torch resnet50 --lib /dev/null \
    --script "$srcdir/tests/bench/fake_torch_train.py" --budgets 50
[ "$(cat "$tmp/svt.rc")" -eq 0 ] && [ "$(sfield svt 50 plan x_sim)" = 2.5 ] &&
    [ "$(sfield svt 50 plan flags)" = "['TIME', 'BYTES']" ] &&
    grep -q -- '--batch 64 --umadv --iters 8 --policies oracle,demand,prefetch-all,plan --trace' \
        "$tmp/svt/resnet50-50.log"
ok $? "--torch: torch_train.py's JSON against the simulation" || diag "$tmp/svt.err"

# The real command on a trace mlp_train recorded: the script's command
# line is one umadv plan takes, and it reports the simulation unchanged.
mlp_trace=$srcdir/data/traces/h200-mlp16-bs32768.umt
if [ -x "$umadv" ]; then
    sve svr FAKE_TRACE="$mlp_trace" -- --umadv "$umadv" --budgets 20,75
    "$umadv" plan "$mlp_trace" --budget 3221225472 --iteration 0 --json >"$tmp/direct.json"
    python3 -c '
import json, sys
direct = {r["policy"]: r for r in json.load(open(sys.argv[1]))["budgets"][0]["policies"]}
rows = [r for r in json.load(open(sys.argv[2]))["rows"] if r["budget_pct"] == 75]
keys = ("ms_per_iter", "fetched_bytes", "evicted_bytes", "faults", "fault_bytes")
same = [all(r["sim"][k] == direct[r["policy"]][k] for k in keys) for r in rows]
sys.exit(not (len(rows) == 4 and all(same) and direct["plan"]["fetched_bytes"] > 0))' \
        "$tmp/direct.json" "$tmp/svr/sim_vs_exec.json"
    ok $? "umadv plan on a real trace: the script's numbers are the command's own" ||
        diag "$tmp/svr.err"
    case $(sfield svr 20 plan sim) in
    "{'refused': 'budget 819.00 MiB is too small: the largest step needs 2.13 GiB"*) true ;;
    *) false ;;
    esac && [ "$(sfield svr 20 oracle flags)" = "['TIME']" ]
    ok $? "umadv plan's refusal of a budget below the largest step is recognised"
else
    ok 0 "# SKIP $umadv is not built"
    ok 0 "# SKIP $umadv is not built"
fi

# ---- bench/vgg.py -------------------------------------------------------

fake_vgg=$srcdir/tests/bench/fake_vgg_train.py
FAKE_DIFFER=demand python3 "$srcdir/bench/vgg.py" --exe "$fake_vgg" --batches 16 \
    --budgets 12G,512M,25 --gpu-free 2G --rates 1,2 --out "$tmp/vgg" \
    >"$tmp/vgg.table" 2>"$tmp/vgg.err"
echo $? >"$tmp/vgg.rc"
[ -s "$tmp/vgg/vgg.json" ] && tail -1 "$tmp/vgg.table" | grep -q '^ *16 25% .* plan '
ok $? "vgg.py runs over the stand-in: JSON written, the table last" || diag "$tmp/vgg.err"

vfield() { # [DIR] LABEL POLICY KEY: in DIR/vgg.json (default vgg)
    [ $# -eq 4 ] && { dir=$1; shift; } || dir=vgg
    python3 -c '
import json, sys
rows = [r for b in json.load(open(sys.argv[1]))["batches"] for r in b["rows"]
        if r["budget_label"] == sys.argv[2] and r.get("policy", "-") == sys.argv[3]]
print(rows[0].get(sys.argv[4]) if rows else "missing")' "$tmp/$dir/vgg.json" "$@"
}

# Footprint 1 GiB (batch 16): 25% is 256 MiB; the largest step, 512 MiB
# whole, takes half the budget in 2 parts at 512M and in 4 at 256M.
[ "$(vfield 25% plan budget)" = $((256 << 20)) ] && [ "$(vfield 25% plan split)" = 4 ] &&
    [ "$(vfield 512M plan split)" = 2 ] && [ "$(vfield 12G - skipped)" = "above the GPU's 2.0 GiB free" ] &&
    grep -q -- '--split 1 --declarations complete$' "$tmp/vgg/b16-oracle.log" &&
    grep -q -- '^\$ env UMADV_BUDGET=268435456 UMADV_FAULT_PERIOD=1 UMADV_POLICY=plan .*--split 4 --declarations complete --trace .*/b16-25-plan.umt$' \
        "$tmp/vgg/b16-25-plan.log" &&
    grep -q -- '^\$ env -u UMADV_BUDGET UMADV_FAULT_PERIOD=1 UMADV_POLICY=oracle .*--split 2 --declarations complete$' \
        "$tmp/vgg/b16-oracle-split2.log"
ok $? "budgets as sizes and shares; --split auto per budget, its oracle as reference; 12G skipped"

# Steady state: iterations 3 on, 125 ms but one 900 (the median ignores
# it); plan moves 2 GiB in (1.5 fetched, 0.5 restored), 1 GiB out (0.5
# evicted, 0.5 staged). The bound, from the profile the plan run saved:
# at 256 MiB the fewest bytes are 128 MiB each way, max(100, 128 MiB / 1
# GB/s, 128 MiB / 2 GB/s) = 134.22 ms; at 512 MiB nothing moves: 100.
[ "$(vfield 25% plan ms_per_iter)" = 125.0 ] && [ "$(vfield 25% plan x_oracle)" = 1.25 ] &&
    near "$(vfield 25% plan bound_ms)" 134.21 134.22 &&
    [ "$(vfield 25% plan bound_from)" = "fewest bytes" ] &&
    [ "$(vfield 25% demand forced_in)" = $((1 << 27)).0 ] &&
    [ "$(vfield 512M plan bound_ms)" = 100.0 ] && [ -s "$tmp/vgg/b16-25-plan.umt" ] &&
    [ "$(vfield 25% plan in_per_iter)" = $((2 << 30)).0 ] &&
    [ "$(vfield 25% plan staged_per_iter)" = $((1 << 29)).0 ] &&
    [ "$(vfield 25% demand faults_per_iter)" = 1000.0 ] &&
    [ "$(vfield 25% plan profiling_x_plain)" = 20.0 ] && [ "$(vfield 25% plan profiled_ms)" = 1000.0 ]
ok $? "steady-state medians, x oracle, both channels' bytes, faults moved back to their iteration (not the timing pass's), the bound from the fewest bytes the budget forces on the plan run's profile, the profiling phase in plain iterations"

[ "$(cat "$tmp/vgg.rc")" -eq 1 ] && [ "$(vfield 25% demand digest_equal)" = False ] &&
    [ "$(vfield 25% plan digest_equal)" = True ] && grep -q ' demand .* DIFFER$' "$tmp/vgg.table"
ok $? "a digest unlike the same split's oracle is flagged, and the script exits 1"

python3 "$srcdir/bench/vgg.py" --exe "$fake_vgg" --batches 16 --budgets 25 --split 1 \
    --gpu-free 2G --out "$tmp/vgg1" >"$tmp/vgg1.table" 2>"$tmp/vgg1.err"
rc=$?
[ "$rc" -eq 0 ] && [ "$(vfield vgg1 25% plan refused)" = "budget too small for a step" ] &&
    [ "$(vfield vgg1 25% plan bound_ms)" = None ] &&
    grep -q 'plan refused: budget too small for a step' "$tmp/vgg1.table"
ok $? "unsplit below the largest step: umadv_plan's refusal is shown, no bound (exit $rc)" ||
    diag "$tmp/vgg1.err"

python3 "$srcdir/bench/vgg.py" --exe "$fake_vgg" --batches 16 --budgets 25 \
    --policies demand,prefetch-all --declarations partial --gpu-free 2G --out "$tmp/vggp" \
    >"$tmp/vggp.table" 2>"$tmp/vggp.err"
rc=$?
python3 "$srcdir/bench/vgg.py" --exe "$fake_vgg" --policies demand,none --out "$tmp/vggq" \
    >/dev/null 2>"$tmp/vggq.err"
rcq=$?
[ "$rc" -eq 0 ] && [ "$(vfield vggp 25% plan policy)" = missing ] &&
    [ "$(vfield vggp 25% demand bound_ms)" = None ] &&
    [ "$(vfield vggp 25% prefetch-all ms_per_iter)" != missing ] &&
    [ "$(vfield vggp 25% prefetch-all profiling_x_plain)" = 40.0 ] &&
    grep -q -- '--declarations partial$' "$tmp/vggp/b16-25-demand.log" &&
    [ "$rcq" -eq 2 ] && grep -q -- '--policies: a list of demand, prefetch-all, plan' "$tmp/vggq.err"
ok $? "--policies runs those only (no plan: no bound); an unknown one is refused; --declarations reaches vgg_train" ||
    diag "$tmp/vggp.err"

# A bench stopped by a time limit keeps what it measured: 512M's rows
# printed and in vgg.json before the plan run at 25% hangs.
FAKE_HANG=plan:$((256 << 20)) timeout 8 python3 "$srcdir/bench/vgg.py" --exe "$fake_vgg" \
    --batches 16 --budgets 512M,25 --gpu-free 2G --out "$tmp/vggk" >"$tmp/vggk.table" \
    2>"$tmp/vggk.err"
rc=$?
[ "$rc" -eq 124 ] && [ "$(vfield vggk 512M plan ms_per_iter)" = 125.0 ] &&
    [ "$(vfield vggk 25% plan policy)" = missing ] &&
    grep -q '^ *16 512M .* plan ' "$tmp/vggk.table" && grep -q '^# batch 16: footprint 1.00 GiB$' "$tmp/vggk.table"
ok $? "killed mid-way, vgg.py has printed and saved every budget it finished (exit $rc)" ||
    diag "$tmp/vggk.table"

# Failures: no result is exit 1 with the reason, never a table.
sve svf -- --umadv "$fake_umadv" --budgets 50 --exe false
sve svj FAKE_PLAN_BREAK=json -- --umadv "$fake_umadv" --budgets 50
[ "$(cat "$tmp/svf.rc")" -eq 1 ] &&
    grep -q '^bench: mlp-footprint failed (exit 1)' "$tmp/svf.err" &&
    [ "$(cat "$tmp/svj.rc")" -eq 1 ] && grep -q 'no umadv-plan JSON' "$tmp/svj.err" &&
    [ ! -s "$tmp/svj.table" ] && [ ! -e "$tmp/svj/sim_vs_exec.json" ]
ok $? "a run or a simulation that fails exits 1 and says which"

# ---- bench/ddp.py ------------------------------------------------------

# ddp NAME [VAR=VALUE...] -- ARGS: bench/ddp.py over the stand-ins
ddp() {
    name=$1
    shift
    while [ "$1" != -- ]; do
        export "${1?}"
        shift
    done
    shift
    python3 "$srcdir/bench/ddp.py" --script "$srcdir/tests/bench/fake_ddp_train.py" \
        --link-script "$srcdir/tests/bench/fake_link_share.py" --launcher "python3 $srcdir/tests/bench/fake_torchrun.py --standalone" --iters 4 \
        --out "$tmp/$name" "$@" >"$tmp/$name.table" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
    unset FAKE_DIFFER FAKE_FAIL_RANK
}

# dfield NAME EXPR: a Python expression over NAME/ddp.json (as d)
dfield() {
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
        "$tmp/$1/ddp.json" "$2"
}

ddp dd -- --visible 2 --share --routes lib,run \
    --umadv "$srcdir/tests/bench/fake_umadv_launch.py"
[ "$(cat "$tmp/dd.rc")" -eq 0 ]
ok $? "ddp.py runs over the stand-ins, 1 and 2 GPUs, both routes and --share" || diag "$tmp/dd.err"

# footprints 4 GiB at 1 GPU, 4.5 GiB at 2 (rank 1's): 50% per rank in whole MiB
grep -q '^# UMADV_BUDGET=2048M UMADV_POLICY=plan' "$tmp/dd/plan-lib-1.log" &&
    grep -q '^# UMADV_BUDGET=2304M,2304M UMADV_POLICY=plan' "$tmp/dd/plan-lib-2.log" &&
    grep -q '^# UMADV_BUDGET= UMADV_POLICY=oracle' "$tmp/dd/fp-2.log" &&
    [ "$(dfield dd 'd["rows"][1]["footprint"]')" = $((9 << 29)) ]
ok $? "the footprint is the largest rank's; the budget a per-rank UMADV_BUDGET list"

# native 100 -> 125 ms, umadv 150 -> 201 (rank 1's 201 is the job's)
[ "$(dfield dd 'd["rows"][1]["lib"]["ms_per_iter"]')" = 201.0 ] &&
    [ "$(dfield dd 'd["rows"][1]["native"]["efficiency"]')" = 0.8 ] &&
    [ "$(dfield dd 'round(d["rows"][1]["lib"]["efficiency"], 4)')" = 0.7463 ] &&
    [ "$(dfield dd 'd["rows"][1]["native"]["samples_per_s"]')" = 128.0 ] &&
    grep -q '^   2 native .* 0.80       -         -       -         -         -              -        -$' "$tmp/dd.table" &&
    grep -q '^   2 lib .* 0.75 .* identical        7 (3.0)        2$' "$tmp/dd.table" &&
    grep -q '^   1 lib .* identical        3 (1.5)        1$' "$tmp/dd.table"
ok $? "ms/iteration of the slowest rank, samples/s, scaling efficiency from 1 GPU; evictions that waited for a hold, summed over the ranks, and the longest rank's wait; the most profiled iterations of any rank" ||
    diag "$tmp/dd.table"

# the run route: umadv run --budget LIST --policy plan -- torchrun ...
grep -q "^\$ .*fake_umadv_launch.py run -q --budget 2304M,2304M --policy plan -- .*fake_torchrun.py" \
    "$tmp/dd/plan-run-2.log" && ! grep -q -- "--lib" "$tmp/dd/plan-run-2.log" &&
    [ "$(dfield dd 'd["rows"][1]["run"]["ms_per_iter"], d["rows"][1]["run"]["identical"]')" = \
        "(201.0, True)" ] && grep -q '^   2 run .* identical  ' "$tmp/dd.table"
ok $? "--routes run: umadv run's options around torchrun, the script without --lib" ||
    diag "$tmp/dd/plan-run-2.log"

# each rank's bound from its trace (1 GiB each way at 2 GiB: 107.4 ms;
# above 2.5 GiB nothing moves: the native time), the job's over the largest
[ "$(dfield dd 'round(d["rows"][0]["bounds_ms"]["0"], 1)')" = 107.4 ] &&
    [ "$(dfield dd 'd["rows"][1]["bounds_ms"]')" = "{'0': 125.0, '1': 125.0}" ] &&
    [ "$(dfield dd 'round(d["rows"][0]["lib"]["x_phys"], 3)')" = 1.397 ] &&
    [ "$(dfield dd 'round(d["rows"][1]["lib"]["x_phys"], 3), d["rows"][1]["lib"]["ranks"][1]["x_phys"]')" = \
        "(1.608, 1.608)" ] &&
    [ "$(dfield dd 'round(d["rows"][1]["lib"]["x_phys_vs_1"], 3)')" = 1.151 ] &&
    grep -q '^   2 lib .* 1.61     1.151 ' "$tmp/dd.table" &&
    grep -q '^target, lib on 2 GPUs, bound on its link alone: x phys 1.151 of its 1-GPU ratio: outside 10%$' \
        "$tmp/dd.table"
ok $? "x physical bound per rank and per job, and on 2 GPUs against 1 (the target)" ||
    diag "$tmp/dd.table"

# the bound on a shared link: each rank's rates scaled by together over
# alone (fake_link_share.py: D2H halved on both GPUs, H2D 0.9 and 0.8);
# at 50% (2.25 GiB) the 2-GPU bound is compute's either way
[ "$(dfield dd 'd["rows"][1]["link_share"]')" = "[[0.9, 0.5], [0.8, 0.5]]" ] &&
    [ "$(dfield dd 'd["rows"][1]["shared_bounds_ms"]')" = "{'0': 125.0, '1': 125.0}" ] &&
    [ "$(dfield dd 'd["rows"][0]["link_share"], d["rows"][0]["shared_bounds_ms"] == d["rows"][0]["bounds_ms"]')" = \
        "([[1.0, 1.0]], True)" ] &&
    [ "$(dfield dd 'open(sys.argv[1].replace("ddp.json", "link-2.json")).read().count("\"gpus\": [0, 1]")')" = 1 ] &&
    grep -q '^   2 lib .* 1.61     1.151    1.61     1.151 identical' "$tmp/dd.table" &&
    grep -q '^target, lib on 2 GPUs, bound on the link shared: x phys 1.151 of its 1-GPU ratio: outside 10%$' \
        "$tmp/dd.table" &&
    grep -q '^link shared by 2 GPUs: H2D x0.90/0.80, D2H x0.50/0.50 of each alone' "$tmp/dd.table"
ok $? "the link each rank shares: bench/link_share.py over GPUs 0,1, its ratios, a bound unchanged where compute bounds it" ||
    diag "$tmp/dd.table"

# at 45% (2073 MiB a rank at 2 GPUs) the ranks' bound alone is still
# compute's (125 ms; 0.95 GiB out at 10 GB/s is 102.1), on the shared
# link twice the transfer time: 204.3 ms, x shared 201 / 204.3
ddp dshare -- --visible 2 --pct 45
[ "$(cat "$tmp/dshare.rc")" -eq 0 ] &&
    [ "$(dfield dshare 'd["rows"][1]["bounds_ms"]')" = "{'0': 125.0, '1': 125.0}" ] &&
    [ "$(dfield dshare 'sorted(round(b, 1) for b in d["rows"][1]["shared_bounds_ms"].values())')" = \
        "[204.3, 204.3]" ] &&
    [ "$(dfield dshare 'round(d["rows"][1]["lib"]["x_phys_shared"], 3)')" = 0.984 ] &&
    grep -q '^target, lib on 2 GPUs, bound on its link alone: x phys 1.612 of its 1-GPU ratio: outside 10%$' \
        "$tmp/dshare.table" &&
    grep -q '^target, lib on 2 GPUs, bound on the link shared: x phys 0.986 of its 1-GPU ratio: within 10%$' \
        "$tmp/dshare.table"
ok $? "a bound the shared link's rates raise: x shared and its target against 1 GPU" ||
    diag "$tmp/dshare.table"

# alone 150 ms at 4 GiB; two at 2 GiB each, 240 ms each: 66.7 samples/s together
[ "$(dfield dd 'd["share"]["alone_budget"], d["share"]["shared_budget"]')" = \
    "($((4 << 30)), $((2 << 30)))" ] &&
    [ "$(dfield dd 'd["share"]["shared_ms"]')" = "[240.0, 240.0]" ] &&
    [ "$(dfield dd 'round(d["share"]["shared_samples_per_s"], 2)')" = 66.67 ] &&
    [ "$(dfield dd 'd["share"]["identical"]')" = True ] &&
    grep -q '^# UMADV_BUDGET=2048M, 2 process(es) on GPU 0' "$tmp/dd/share-two.log" &&
    grep -q 'two at once (2.00G each) 240.0 and 240.0 ms, 66.7 samples/s together' \
        "$tmp/dd.table"
ok $? "--share: two processes on one GPU at half the budget each, against one alone"

ddp ddiff FAKE_DIFFER=1 -- --visible 2
[ "$(cat "$tmp/ddiff.rc")" -eq 1 ] && grep -q ' DIFFER  ' "$tmp/ddiff.table" &&
    [ "$(dfield ddiff 'd["rows"][1]["lib"]["identical"]')" = False ] &&
    [ "$(dfield ddiff 'd["rows"][0]["lib"]["identical"]')" = True ] &&
    grep -q "^bench: losses differ from native DDP.s (GPUs and routes \['2 lib'\])" "$tmp/ddiff.err"
ok $? "a rank's losses unlike native DDP's are flagged, and the bench fails"

ddp dlink -- --visible 2 --link-script "$tmp/no-such-link-script.py"
[ "$(cat "$tmp/dlink.rc")" -eq 1 ] && grep -q "^bench: .*no-such-link-script.py --gpus 0,1 failed (exit 2)" \
    "$tmp/dlink.err" && [ ! -e "$tmp/dlink/ddp.json" ]
ok $? "a link measurement that fails fails the bench, naming its command" || diag "$tmp/dlink.err"

# --repeats 3: 1 and 2 GPUs three times in turn; rank 1's 2-GPU plan time
# 201, 251, 181 ms against a bound of 125 and the 1-GPU ratio 1.397:
# target ratios 1.151, 1.437, 1.037, median 1.151
ddp drep -- --visible 2 --repeats 3
[ "$(cat "$tmp/drep.rc")" -eq 0 ] && [ -s "$tmp/drep/plan-lib-2-r3.log" ] &&
    [ -s "$tmp/drep/link-2-r2.json" ] && [ "$(dfield drep 'len(d["repeats"])')" = 3 ] &&
    [ "$(dfield drep '[round(x, 3) for x in d["targets"][0]["ratios"]], round(d["targets"][0]["median"], 3)')" = \
        "([1.151, 1.437, 1.037], 1.151)" ] &&
    [ "$(dfield drep 'd["rows"] == d["repeats"][0]')" = True ] &&
    [ "$(grep -c '^repeat [123] of 3$' "$tmp/drep.table")" = 3 ] &&
    grep -q '^target over 3 repeats, lib on 2 GPUs, bound on its link alone: median x phys 1.151 of its 1-GPU ratio (1.037-1.437): outside 10%$' \
        "$tmp/drep.table"
ok $? "--repeats: every world size in turn, each repeat's files apart, the target the median of the repeats' ratios" ||
    diag "$tmp/drep.table"

ddp dvis -- --visible 1
[ "$(cat "$tmp/dvis.rc")" -eq 0 ] && grep -q '^2 GPUs: skipped, 1 visible' "$tmp/dvis.table" &&
    [ "$(dfield dvis 'd["skipped_gpus"]')" = "[2]" ] && [ ! -e "$tmp/dvis/fp-2.log" ]
ok $? "a world larger than the GPUs there is skipped, and said so"

ddp dfail FAKE_FAIL_RANK=1 -- --visible 2
[ "$(cat "$tmp/dfail.rc")" -eq 1 ] && grep -q '^bench: fp-2 failed (exit 2' "$tmp/dfail.err" &&
    grep -q 'fake_ddp_train.py\[rank 1\]: no umadv context on GPU 1' "$tmp/dfail.err" &&
    [ ! -e "$tmp/dfail/ddp.json" ]
ok $? "a rank that fails fails the bench, naming the rank" || diag "$tmp/dfail.err"

# ---- bench/unmodified.py ------------------------------------------------

# fake_plain_train.py: native 100 ms; profiled, 1000 ms at iteration 1
# (a trace of 3 GiB peak: 50% is 1.5 GiB); under umadv run 306 ms from
# iteration 4; torch_train.py's route 300 ms (fake_torch_train.py).
unmod() { # NAME [ENV...] -- [OPTIONS]: NAME.table, .err, .rc, NAME/unmodified.json
    name=$1
    shift
    while [ "$1" != "--" ]; do export "${1?}"; shift; done
    shift
    python3 "$srcdir/bench/unmodified.py" --umadv "$srcdir/tests/bench/fake_umadv_launch.py" \
        --plain "$srcdir/tests/bench/fake_plain_train.py" \
        --route "$srcdir/tests/bench/fake_torch_train.py" --lib /nonexistent --iters 8 \
        --steady-from 4 --out "$tmp/$name" "$@" >"$tmp/$name.table" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
    unset FAKE_WANT_BUDGET FAKE_DIFFER
}
ufield() { # NAME PYTHON-EXPRESSION over d, NAME/unmodified.json
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
        "$tmp/$1/unmodified.json" "$2"
}

unmod um FAKE_WANT_BUDGET=1610612736 --
[ "$(cat "$tmp/um.rc")" -eq 0 ] && [ "$(ufield um 'd["budget"]')" = 1610612736 ] &&
    [ "$(ufield um 'd["runs"]["native"]["ms_per_iter"]')" = 100.0 ] &&
    [ "$(ufield um 'd["profile_adds_iterations"]')" = 9.0 ] &&
    [ "$(ufield um 'd["runs"]["run"]["ms_per_iter"]')" = 306.0 ] &&
    [ "$(ufield um 'round(d["run_x_route"], 3)')" = 1.02 ] &&
    [ "$(ufield um 'd["run_target_met"]')" = True ] && [ "$(ufield um 'd["losses_identical"]')" = True ] &&
    tail -1 "$tmp/um.table" | grep -q 'profiling adds 9.0 native iterations; run x route 1.020 (target 1.05: met)'
ok $? "unmodified.py: 50% of the profile's footprint, profiling's cost, run against the route" ||
    diag "$tmp/um.err"

unmod udiff FAKE_WANT_BUDGET=2147483648 FAKE_DIFFER=1 -- --budget 2G
[ "$(cat "$tmp/udiff.rc")" -eq 1 ] && [ "$(ufield udiff 'd["losses_identical"]')" = False ] &&
    grep -q "^bench: run's losses differ from native's" "$tmp/udiff.err"
ok $? "unmodified.py --budget 2G: losses unlike native's fail the bench" || diag "$tmp/udiff.err"

unmod ubad FAKE_WANT_BUDGET=1 -- --budget 150%
[ "$(cat "$tmp/ubad.rc")" -eq 2 ] && grep -q -- '--budget: a size' "$tmp/ubad.err"
ok $? "unmodified.py: a budget above 100% is a usage error" || diag "$tmp/ubad.err"

# ---- bench/timeline_breakdown.py ----------------------------------------

# Iteration 3 of a hand-made UMADV_TIMELINE: a 10 ms step; a wait from 2 to
# 6 ms; a restore of 200 MB from 1 to 5 ms (50 GB/s); a staging out of 360
# MB from 0 to 8 ms (45 GB/s). Iteration 2 only has a step.
cat >"$tmp/tl.json" <<'EOF_TL'
{"displayTimeUnit":"ms","traceEvents":[
{"name":"process_name","ph":"M","pid":1,"args":{"name":"umadv replay (measured)"}},
{"name":"step","ph":"X","pid":1,"tid":1,"ts":0,"dur":1000,"args":{"iteration":2,"step":0}},
{"name":"step","ph":"X","pid":1,"tid":1,"ts":20000,"dur":10000,"args":{"iteration":3,"step":0}},
{"name":"wait: fetch in flight","ph":"X","pid":1,"tid":2,"ts":22000,"dur":4000,"args":{"iteration":3,"step":0}},
{"name":"restore from staging","ph":"X","pid":1,"tid":3,"ts":21000,"dur":4000,"args":{"iteration":3,"step":0,"bytes":200000000}},
{"name":"stage out","ph":"X","pid":1,"tid":4,"ts":20000,"dur":8000,"args":{"iteration":3,"step":0,"bytes":360000000}}
],"otherData":{"spans":5,"dropped_spans":0}}
EOF_TL
python3 "$srcdir/bench/timeline_breakdown.py" "$tmp/tl.json" --last 1 --bucket 5 \
    --json "$tmp/tl.out.json" >"$tmp/tl.table" 2>"$tmp/tl.err"
[ $? -eq 0 ] && grep -q '^iteration 3: 10.0 ms$' "$tmp/tl.table" &&
    grep -q 'fetch lane  *restore from staging  *1  *4.00 ms .* 50.0 GB/s$' "$tmp/tl.table" &&
    grep -q 'eviction lane  *stage out  *1  *8.00 ms .* 45.0 GB/s$' "$tmp/tl.table" &&
    grep -q '^ *0  *100%  *60%  *80%  *100%$' "$tmp/tl.table" &&
    grep -q '^ *5  *100%  *20%  *0%  *60%$' "$tmp/tl.table" &&
    ! grep -q '^iteration 2' "$tmp/tl.table"
ok $? "timeline_breakdown.py: an iteration's calls, rates and waits, and its buckets" ||
    { diag "$tmp/tl.table"; diag "$tmp/tl.err"; }

# --fit: restores of 100 and 300 MB alone, 0.1 ms + bytes / 50 GB/s; of
# 100 and 200 MB beside one 400 MB stage-out, 0.2 ms + bytes / 25 GB/s.
cat >"$tmp/tl-fit.json" <<'EOF_TL'
{"displayTimeUnit":"ms","traceEvents":[
{"name":"restore from staging","ph":"X","pid":1,"tid":3,"ts":0,"dur":2100,"args":{"iteration":4,"step":0,"bytes":100000000}},
{"name":"restore from staging","ph":"X","pid":1,"tid":3,"ts":10000,"dur":6100,"args":{"iteration":4,"step":1,"bytes":300000000}},
{"name":"restore from staging","ph":"X","pid":1,"tid":3,"ts":20000,"dur":4200,"args":{"iteration":4,"step":2,"bytes":100000000}},
{"name":"restore from staging","ph":"X","pid":1,"tid":3,"ts":30000,"dur":8200,"args":{"iteration":4,"step":3,"bytes":200000000}},
{"name":"stage out","ph":"X","pid":1,"tid":4,"ts":20000,"dur":20000,"args":{"iteration":4,"step":2,"bytes":400000000}}
]}
EOF_TL
python3 "$srcdir/bench/timeline_breakdown.py" "$tmp/tl-fit.json" --fit --json "$tmp/tl-fit.out.json" \
    >"$tmp/tl-fit.table" 2>&1
grep -q 'fit fetch lane: restore from staging .*alone 2 calls: 0.100 ms + bytes / 50.0 GB/s; beside 2 calls: 0.200 ms + bytes / 25.0 GB/s$' \
    "$tmp/tl-fit.table" && grep -q 'fit eviction lane: stage out .*too few sizes' "$tmp/tl-fit.table" &&
    python3 -c 'import json, sys; f = json.load(open(sys.argv[1]))["fit"]
sys.exit(f["fetch lane: restore from staging"]["all"][0] != 4)' "$tmp/tl-fit.out.json"
ok $? "timeline_breakdown.py --fit: each lane call's fixed cost and rate, alone and beside the other lane" ||
    diag "$tmp/tl-fit.table"

# --gaps: steps of 10 us at 0, 30 and 100 us; a stage-out from 32 to 120
# us covers the second step (8 of its 10 us), the gap after it and the
# last step; the first gap (10 to 30 us) has none; a stall (no bytes) is
# no lane call.
cat >"$tmp/tl-gaps.json" <<'EOF_TL'
{"displayTimeUnit":"ms","traceEvents":[
{"name":"step","ph":"X","pid":1,"tid":1,"ts":0,"dur":10,"args":{"iteration":5,"step":0}},
{"name":"step","ph":"X","pid":1,"tid":1,"ts":30,"dur":10,"args":{"iteration":5,"step":1}},
{"name":"step","ph":"X","pid":1,"tid":1,"ts":100,"dur":10,"args":{"iteration":5,"step":2}},
{"name":"stage out","ph":"X","pid":1,"tid":4,"ts":32,"dur":88,"args":{"iteration":5,"step":1,"bytes":4000000}},
{"name":"stalled: no room yet","ph":"X","pid":1,"tid":3,"ts":0,"dur":30,"args":{"iteration":5,"step":0}}
]}
EOF_TL
python3 "$srcdir/bench/timeline_breakdown.py" "$tmp/tl-gaps.json" --gaps --json "$tmp/tl-gaps.out.json" \
    >"$tmp/tl-gaps.table" 2>&1
grep -q '^  the application: 3 steps, 0.030 ms in them; 2 gaps between them, 0.080 ms (median 40.0 us)$' \
    "$tmp/tl-gaps.table" &&
    grep -q '^  eviction lane: stage out  *2  *0.020  *10.0 |  *1  *0.060  *60.0$' "$tmp/tl-gaps.table" &&
    grep -q '^  none  *1  *0.010  *10.0 |  *1  *0.020  *20.0$' "$tmp/tl-gaps.table" &&
    python3 -c 'import json, sys; g = json.load(open(sys.argv[1]))["5"]["gaps"]
sys.exit(g["by"]["none"]["gaps"][0] != 1 or len(g["by"]) != 2)' "$tmp/tl-gaps.out.json"
ok $? "timeline_breakdown.py --gaps: the application's time in and between its steps, by the lane call under way" ||
    diag "$tmp/tl-gaps.table"

echo '{"traceEvents":[{"name":"x","ph":"X","tid":9,"ts":0,"dur":1,"args":{}}]}' >"$tmp/tl-bad.json"
python3 "$srcdir/bench/timeline_breakdown.py" "$tmp/tl-bad.json" >/dev/null 2>"$tmp/tl-bad.err"
[ $? -eq 1 ] && grep -q 'not a umadv replay timeline' "$tmp/tl-bad.err"
ok $? "timeline_breakdown.py: a file that is not a replay timeline is refused, named"

# ---- bench/census_diff.py -------------------------------------------------

# Two census lines of one process: iteration 8 (plan) and 18 (oracle); a
# function only 8's line names (cudaThreadExchangeStreamCaptureMode), one
# only 18's (cudaFuncSetAttribute); another line in between is no census.
cat >"$tmp/census.log" <<'EOF_CENSUS'
umadv: info: call census, iteration 8: the application's threads made 20233 CUDA calls, 51.000 ms in all (runtime 20000, 50.000 ms; driver calls outside them 233, 1.000 ms) to 4 functions; by time: cudaLaunchKernel 1782, 41.000 ms (23.01 us each); cudaGetDevice 18000, 8.000 ms (0.44 us each); cudaThreadExchangeStreamCaptureMode 218, 1.000 ms (4.59 us each); cuLaunchKernel 233, 1.000 ms (4.29 us each)
umadv: info: executor: iteration 8: 130.0 ms
umadv: info: call census, iteration 18: the application's threads made 20217 CUDA calls, 24.500 ms in all (runtime 19984, 23.500 ms; driver calls outside them 233, 1.000 ms) to 4 functions; by time: cudaLaunchKernel 1782, 13.000 ms (7.30 us each); cudaGetDevice 18000, 10.000 ms (0.56 us each); cuLaunchKernel 233, 1.000 ms (4.29 us each); cudaFuncSetAttribute 202, 0.500 ms (2.48 us each)
EOF_CENSUS
python3 "$srcdir/bench/census_diff.py" "$tmp/census.log" 8 18 --json "$tmp/census.json" \
    >"$tmp/census.table" 2>"$tmp/census.err"
[ $? -eq 0 ] &&
    sed -n 2p "$tmp/census.table" | grep -q '^cudaLaunchKernel  *1782  *41.000  *1782  *13.000  *+28.000$' &&
    sed -n 4p "$tmp/census.table" | grep -q '^cudaGetDevice  *18000  *8.000  *18000  *10.000  *-2.000$' &&
    grep -q '^cudaThreadExchangeStreamCaptureMode  *218  *1.000  *-  *-  *-$' "$tmp/census.table" &&
    grep -q '^cudaFuncSetAttribute  *-  *-  *202  *0.500  *-$' "$tmp/census.table" &&
    grep -q '^all (4 and 4 functions)  *20233  *51.000  *20217  *24.500  *+26.500$' "$tmp/census.table" &&
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
sys.exit(d["rows"][0]["function"] != "cudaLaunchKernel" or d["totals"]["b_ms"] != 24.5)' "$tmp/census.json"
ok $? "census_diff.py: two iterations' calls side by side, by their difference; a function one line leaves out shown as such" ||
    { diag "$tmp/census.table"; diag "$tmp/census.err"; }

python3 "$srcdir/bench/census_diff.py" "$tmp/census.log" 8 9 >/dev/null 2>"$tmp/census-bad.err"
[ $? -eq 1 ] && grep -q 'has no call census line for iteration 9 (it has 8, 18)' "$tmp/census-bad.err"
ok $? "census_diff.py: an iteration the log has no census line for is refused, named" ||
    diag "$tmp/census-bad.err"

# benchlib.cut_bound_ms: T (1 GiB) written at step 0, read at step 2; step 1
# reads P (1 GiB); 1 GiB of memory: T is off the GPU while step 1 runs, so
# it left before (1 GiB / 25 GB/s, 42.95 ms; 10 ms of compute), step 1
# runs (10 ms) and T comes back after (1 GiB / 50 GB/s, 21.47 ms; 10 ms):
# 74.42 ms. Read at step 1 as well, T never has to leave: the bound is the
# compute, 30 ms.
cut() { # T's modes at steps 0, 1, 2 (as a Python list)
    PYTHONPATH=$srcdir/bench python3 -c '
import sys, benchlib
modes = eval(sys.argv[1])
g = 1 << 30
t = {"section_size": g, "link": {}, "durations": [1, 1, 1],
     "allocs": {0: (g, None, None), 1: (g, 0, 2)},
     "steps": [(j, [(1, 0, 1, m)] if m else []) for j, m in enumerate(modes)]}
t["steps"][1][1].append((0, 0, 1, "r"))
print("%.2f" % benchlib.cut_bound_ms(t, 2 * g if modes[1] else g, 30.0, (50e9, 25e9)))' "$1"
}
[ "$(cut '["w", "", "r"]')" = 74.42 ] && [ "$(cut '["w", "r", "r"]')" = 30.00 ]
ok $? "the cut bound: data live across a step it does not fit beside leaves before and returns after"

# Persistent data (weights, optimizer state) counts too: P (1 GiB, never
# freed) read at the steps given; step 1 writes and reads T (1 GiB, born
# and freed there); 1 GiB of memory. Read at steps 0 and 2, P is off
# while step 1 runs, left after step 0 and is back for step 2: 74.42 ms
# (the bound before it counted persistent data: 30). Read only at step 0,
# it returns in the next iteration, only its way out counts: 42.95 + 10 +
# 10. Read only at step 2, it may have been off since the iteration
# before: 10 + 10 + 21.47.
cut_held() { # the steps that read P (a Python list)
    PYTHONPATH=$srcdir/bench python3 -c '
import sys, benchlib
reads = eval(sys.argv[1])
g = 1 << 30
t = {"section_size": g, "link": {}, "durations": [1, 1, 1],
     "allocs": {0: (g, None, None), 1: (g, 1, 1)},
     "steps": [(j, [(0, 0, 1, "r")] if j in reads else []) for j in range(3)]}
t["steps"][1][1].append((1, 0, 1, "rw"))
print("%.2f" % benchlib.cut_bound_ms(t, g, 30.0, (50e9, 25e9)))' "$1"
}
[ "$(cut_held '[0, 2]')" = 74.42 ] && [ "$(cut_held '[0]')" = 62.95 ] &&
    [ "$(cut_held '[2]')" = 41.47 ] && [ "$(cut_held '[]')" = 30.00 ]
ok $? "the cut bound: persistent data held across a step leaves after its use in the iteration and returns for its next use in it" ||
    diag "$(cut_held '[0, 2]') $(cut_held '[0]') $(cut_held '[2]') $(cut_held '[]')"

# Two steps apart: A (1 GiB) written at step 0 and read at step 3 is off
# the GPU while steps 1 and 2 run (each has 1 GiB of its own, the whole
# memory). One step's cut gives 74.42 ms (42.95 out before step 1, its 10,
# 21.47 back after it beside step 2's 10); the pair (1, 2) counts both
# steps between the way out and the way back: 32.95 + 10 + 20 + 21.47.
PYTHONPATH=$srcdir/bench python3 -c '
import benchlib
g = 1 << 30
t = {"section_size": g, "link": {}, "durations": [1, 1, 1, 1],
     "allocs": {0: (g, 0, 3), 1: (g, 1, 1), 2: (g, 2, 2)},
     "steps": [(0, [(0, 0, 1, "w")]), (1, [(1, 0, 1, "rw")]), (2, [(2, 0, 1, "rw")]),
               (3, [(0, 0, 1, "r")])]}
print("%.2f" % benchlib.cut_bound_ms(t, g, 40.0, (50e9, 25e9)))' > "$tmp/cut-pair" 2>&1
[ "$(cat "$tmp/cut-pair")" = 84.42 ]
ok $? "the cut bound: the way out before one step and the way back after a later one, the steps between run in between" ||
    diag "$(cat "$tmp/cut-pair")"

tap_done
