#!/bin/sh
# TAP: PyTorch DistributedDataParallel over NCCL under torchrun with umadv
# (umadv(7), DISTRIBUTED TRAINING), on the GPUs there (2 ranks with 2 or
# more, else 1): examples/ddp_train.py under the plan at 60% of its
# footprint per rank, by the explicit allocator (--lib) and by umadv run
# around torchrun, trains with native DDP's losses bit for bit, every
# gradient bucket marked not stageable before its collective (the start-up
# hook's guard under umadv run, the script's with --lib) and held on the
# GPU until its collective ends; a rank with a
# bad budget entry ends the job, which names the rank, instead of leaving
# the others in a collective. Skipped without torch, a CUDA device or
# NCCL.
. "${top_srcdir:-.}/tests/tap.sh"
tap_require "$umadv"
unset UMADV_POLICY UMADV_BUDGET UMADV_MAX_MANAGED UMADV_ROUTE_MALLOC UMADV_RUN_SUMMARY \
    UMADV_INJECT_LIBRARY UMADV_DEVICE UMADV_PROFILE_ITERATION NVTX_INJECTION64_PATH \
    LD_PRELOAD RANK LOCAL_RANK WORLD_SIZE
if nm -D "$builddir/.libs/libumadv_inject.so" 2>/dev/null | grep -q '__asan'; then
    echo "1..0 # SKIP sanitizer build: Python cannot load the libraries without the ASan runtime"
    exit 0
fi
gpus=$(python3 -c 'import sys, torch, torch.distributed as d
sys.exit(3) if not (torch.cuda.is_available() and d.is_nccl_available()) else print(torch.cuda.device_count())' 2>/dev/null) ||
    { echo "1..0 # SKIP no torch with a CUDA device and NCCL"; exit 0; }
ranks=$((gpus < 2 ? gpus : 2))
script=$srcdir/examples/ddp_train.py
lib=$builddir/.libs/libumadv.so
common="--model resnet18 --batch 16 --iters 8"

# job NAME [VAR=VALUE...] -- [PREFIX...]: torchrun of $ranks ranks, PREFIX before
# it (umadv run ...); each rank's document NAME-rankR.json; 300 s at most
job() {
    name=$1
    shift
    vars=
    while [ "$1" != -- ]; do
        vars="$vars $1"
        shift
    done
    shift
    # shellcheck disable=SC2086
    env $vars timeout -s KILL 300 "$@" python3 -m torch.distributed.run --standalone \
        --nproc-per-node "$ranks" "$script" $common --json "$tmp/$name-rank{rank}.json" \
        $route >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}
# field NAME RANK EXPR: a Python expression over a rank's document (as d)
field() {
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
        "$tmp/$1-rank$2.json" "$3"
}
# same NAME: every rank's losses are native's
same() {
    r=0
    while [ "$r" -lt "$ranks" ]; do
        [ "$(field "$1" "$r" 'd["losses"]')" = "$(field native "$r" 'd["losses"]')" ] || return 1
        r=$((r + 1))
    done
}
guarded() { # NAME: every rank marked and held buckets, and none missed
    r=0
    while [ "$r" -lt "$ranks" ]; do
        [ "$(field "$1" "$r" 'd.get("buckets_guarded", 0) > 0 and d["buckets_unguarded"] == 0 and d["bucket_holds"] > 0')" = True ] ||
            return 1
        r=$((r + 1))
    done
}

route=--native
job native --
route="--lib $lib"
job fp UMADV_POLICY=oracle --
[ "$(rc_of native)" -eq 0 ] && [ "$(rc_of fp)" -eq 0 ]
ok $? "$ranks-rank DDP trains natively and under umadv's oracle" ||
    { diag "$tmp/native.err"; diag "$tmp/fp.err"; }

peak=$(field fp 0 'max(d["managed_peak"], 1 << 20)' 2>/dev/null || echo 0)
budget=$((peak * 6 / 10 >> 20))M
list=$budget
[ "$ranks" -eq 2 ] && list=$budget,$budget
job lib UMADV_POLICY=plan UMADV_BUDGET=$list --
[ "$(rc_of lib)" -eq 0 ] && same lib && guarded lib
ok $? "--lib under the plan at $budget a rank (60%): native DDP's losses bit for bit, buckets guarded" ||
    { diag "$tmp/lib.err"; diag "$tmp/lib.out"; }

route=
job run -- "$umadv" run -q --budget "$list" --policy plan --
[ "$(rc_of run)" -eq 0 ] && same run && guarded run &&
    [ "$(field run 0 'd["route"]')" = umadv-run ]
ok $? "umadv run -- torchrun under the plan: native DDP's losses, the start-up hook guarding the buckets" ||
    { diag "$tmp/run.err"; diag "$tmp/run.out"; }

# the last rank's entry is not a size: the job must end, naming that rank
bad=$((ranks - 1))
list=6X
[ "$ranks" -eq 2 ] && list=$budget,6X
route="--lib $lib"
job bad UMADV_POLICY=plan UMADV_BUDGET=$list --
[ "$(rc_of bad)" -ne 0 ] && [ "$(rc_of bad)" -ne 137 ] &&
    grep -q "umadv\[rank $bad\]: error: UMADV_BUDGET=$list: " "$tmp/bad.err" &&
    grep -q "ddp_train.py\[rank $bad\]: no umadv context on GPU $bad" "$tmp/bad.err"
ok $? "a bad budget entry for rank $bad: the job ends (not killed), naming the rank and why" ||
    diag "$tmp/bad.err"

tap_done
