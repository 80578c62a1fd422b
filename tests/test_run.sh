#!/bin/sh
# TAP: umadv run without a GPU (umadv-run(1)). The program's arguments
# reach it as given; its exit status comes back (128+N for signal N,
# 127 not found, 126 not executable); signals sent to umadv reach it;
# bad options and bad UMADV_* values stop umadv before the program starts;
# the options set the knobs over the environment; the injection library,
# NVTX injection and the Python hook are put in place (not preloaded under
# Python); summary records are read back and printed. The GPU half is
# tests/test_run_gpu.sh.
. "${top_srcdir:-.}/tests/tap.sh"
tap_require "$umadv"
inject=$builddir/.libs/libumadv_inject.so
[ -f "$inject" ] || { echo "Bail out! $inject is not built"; exit 1; }
unset UMADV_POLICY UMADV_BUDGET UMADV_MAX_MANAGED UMADV_ROUTE_MALLOC UMADV_RUN_SUMMARY \
    UMADV_INJECT_LIBRARY UMADV_ITERATION_RANGE UMADV_PROFILE_ITERATION NVTX_INJECTION64_PATH \
    LD_PRELOAD PYTHONPATH

# A sanitizer build's library cannot be preloaded into sh (the ASan
# runtime must come first): its runs keep the program's environment bare.
preload=yes
if nm -D "$inject" 2>/dev/null | grep -q '__asan'; then
    preload=no
fi
np=""
[ "$preload" = no ] && np=--no-preload

skip() { # WHAT
    n=$((n + 1))
    echo "ok $n # SKIP $1"
}

# run NAME ARGS...: umadv run ARGS; NAME.out, .err, .rc
run() {
    name=$1
    shift
    "$umadv" run $np "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
}

# ---- arguments and exit statuses -----------------------------------

run args -q -- sh -c 'printf "[%s]\n" "$0" "$@"' prog "a b" "" --budget -q " lead" 'x"y'
printf '[%s]\n' prog "a b" "" --budget -q " lead" 'x"y' >"$tmp/args.want"
[ "$(rc_of args)" -eq 0 ] && cmp -s "$tmp/args.want" "$tmp/args.out"
ok $? "arguments reach the program as given: spaces, empty, leading dashes, quotes" ||
    diag "$tmp/args.out"

run noddash -q printf '%s\n' --budget 1G -q
[ "$(rc_of noddash)" -eq 0 ] && [ "$(tr '\n' ' ' <"$tmp/noddash.out")" = "--budget 1G -q " ]
ok $? "without --, options after PROGRAM are the program's"

run dashprog -q -- --no-such-program
[ "$(rc_of dashprog)" -eq 127 ] && grep -q -- "--no-such-program: command not found" \
    "$tmp/dashprog.err"
ok $? "after --, a leading dash names the program (127: not found)"

run exit0 -q -- true
run exit3 -q -- sh -c 'exit 3'
[ "$(rc_of exit0)" -eq 0 ] && [ "$(rc_of exit3)" -eq 3 ]
ok $? "the program's exit status comes back (0, 3)"

run term -q -- sh -c 'kill -TERM $$'
run kill -q -- sh -c 'kill -KILL $$'
[ "$(rc_of term)" -eq 143 ] && [ "$(rc_of kill)" -eq 137 ]
ok $? "a program ended by a signal gives 128+N (TERM $(rc_of term), KILL $(rc_of kill))"

run missing -q -- umadv-no-such-program-here
check_fails missing 127 "umadv-no-such-program-here: command not found" "a program not in PATH"
run missingpath -q -- ./no/such/file
check_fails missingpath 127 "./no/such/file: no such file" "a path to nothing"
printf '#!/bin/sh\necho ran\n' >"$tmp/noexec.sh"
chmod 644 "$tmp/noexec.sh"
run noexec -q -- "$tmp/noexec.sh"
check_fails noexec 126 "noexec.sh: not executable" "a file without execute permission"
run dir -q -- "$tmp"
check_fails dir 126 "is a directory" "a directory"
printf 'echo "no #! line: $1"\n' >"$tmp/plain.sh"
chmod 755 "$tmp/plain.sh"
run plain -q -- "$tmp/plain.sh" arg
[ "$(rc_of plain)" -eq 0 ] && [ "$(cat "$tmp/plain.out")" = "no #! line: arg" ]
ok $? "a script without a #! line runs under sh, as a shell runs it"
printf '\177ELF\002\000\000junk' >"$tmp/badelf"
chmod 755 "$tmp/badelf"
run badelf -q -- "$tmp/badelf"
check_fails badelf 126 "badelf: cannot run: Exec format error" "a binary the kernel cannot run"

# ---- signals ---------------------------------------------------------

# forwarded SIG: the program traps SIG, says so and exits 7; umadv run
# gets SIG from a process (this shell) once the program is ready.
forwarded() {
    sig=$1
    rm -f "$tmp/sig.out"
    "$umadv" run $np -q -- sh -c "trap 'echo got $sig; exit 7' $sig; echo ready; while :; do sleep 0.05; done" \
        >"$tmp/sig.out" 2>"$tmp/sig.err" &
    pid=$!
    tries=0
    while ! grep -q ready "$tmp/sig.out" 2>/dev/null && [ $tries -lt 600 ]; do
        sleep 0.05
        tries=$((tries + 1))
    done
    kill -"$sig" "$pid"
    wait "$pid"
    rc=$?
    [ "$rc" -eq 7 ] && grep -q "got $sig" "$tmp/sig.out"
    ok $? "SIG$sig sent to umadv run reaches the program (exit $rc)" || diag "$tmp/sig.err"
}
forwarded TERM
forwarded USR1
# A shell cannot trap a signal ignored when it started (POSIX): under
# nohup, SIGHUP is, and the program would never exit.
if sh -c 'trap "exit 0" HUP; kill -HUP $$; exit 1' 2>/dev/null; then
    forwarded HUP
else
    ok 0 "# SKIP SIGHUP is ignored here (nohup?): a shell cannot trap it"
fi

# ---- options and knobs -----------------------------------------------

run badsize --budget 8Q -- sh -c 'echo started'
check_fails badsize 2 "invalid value '8Q' for '--budget': not a size" "--budget 8Q"
run badpolicy --policy sideways -- sh -c 'echo started'
check_fails badpolicy 2 "invalid value 'sideways' for '--policy': not one of" "--policy sideways"
run badopt --frobnicate -- true
check_fails badopt 2 "unknown option '--frobnicate' for 'run'" "an unknown option"
run noprog --budget 1G
check_fails noprog 2 "'run' needs a program" "no program"
UMADV_POLICY=sideways run badenv -- sh -c 'echo started'
check_fails badenv 2 "UMADV_POLICY=sideways" "a bad UMADV_POLICY, before the program starts"
UMADV_ROUTE_MALLOC=perhaps run badenv2 -- sh -c 'echo started'
check_fails badenv2 2 "UMADV_ROUTE_MALLOC=perhaps" "a bad UMADV_ROUTE_MALLOC"

UMADV_BUDGET=1G UMADV_LOOKAHEAD=3 run knobs -q --budget 2G --policy demand --managed-malloc \
    --iteration-range step --profile-iteration 4 -- \
    sh -c 'echo "$UMADV_BUDGET $UMADV_POLICY $UMADV_ROUTE_MALLOC $UMADV_ITERATION_RANGE $UMADV_PROFILE_ITERATION $UMADV_LOOKAHEAD"'
[ "$(cat "$tmp/knobs.out")" = "2G demand 1 step 4 3" ]
ok $? "options set their knobs over the environment, other knobs pass through ($(cat "$tmp/knobs.out"))"

# ---- the injection -----------------------------------------------------

run env -q -- sh -c 'echo "$NVTX_INJECTION64_PATH|$UMADV_INJECT_LIBRARY|${PYTHONPATH%%:*}"'
[ "$(cat "$tmp/env.out")" = "$inject|$inject|$srcdir/src/inject/python" ]
ok $? "NVTX injection, the hook's library and PYTHONPATH point at this build" ||
    diag "$tmp/env.out"

if [ "$preload" = yes ]; then
    LD_PRELOAD=libmine.so PYTHONPATH=/mine run preload -q -- sh -c 'echo "$LD_PRELOAD|$PYTHONPATH"'
    [ "$(cat "$tmp/preload.out")" = "$inject:libmine.so|$srcdir/src/inject/python:/mine" ]
    ok $? "the injection library is preloaded first, the user's LD_PRELOAD and PYTHONPATH kept" ||
        diag "$tmp/preload.err"
    "$umadv" run -q --no-preload -- sh -c 'echo "[$LD_PRELOAD]"' >"$tmp/nopre.out" 2>&1
    [ "$(cat "$tmp/nopre.out")" = "[]" ]
    ok $? "--no-preload leaves LD_PRELOAD alone"
else
    skip "sanitizer build: the injection library cannot be preloaded into sh"
    skip "sanitizer build: --no-preload"
fi

# Without a GPU umadv has no context: every interposed call reaches CUDA
# and fails as it does without umadv.
alloc=$builddir/tests/run_alloc
tap_require "$alloc"
if [ "$preload" = yes ] && "$alloc" | grep -q '^cudaMalloc 0$'; then
    skip "a GPU here: tests/test_run_gpu.sh routes for real"
elif [ "$preload" = yes ]; then
    "$alloc" >"$tmp/alloc.want" 2>&1
    run alloc -q --managed-malloc -- "$alloc"
    cmp -s "$tmp/alloc.want" "$tmp/alloc.out" && grep -q "the program runs on plain CUDA" "$tmp/alloc.err"
    ok $? "no context: cudaMalloc & co. reach CUDA and fail as without umadv, which says so" ||
        { diag "$tmp/alloc.out"; diag "$tmp/alloc.err"; }
else
    skip "sanitizer build: the injection library cannot be preloaded"
fi

NVTX_INJECTION64_PATH=/other/tool.so run nvtx -q -- sh -c 'echo "$NVTX_INJECTION64_PATH"'
[ "$(cat "$tmp/nvtx.out")" = /other/tool.so ] && grep -q "names another tool" "$tmp/nvtx.err"
ok $? "a user's NVTX tool stays, with a warning that iteration ranges go unseen"

nm -D --defined-only "$inject" | awk '$2 == "T" { print $3 }' | sort >"$tmp/exports"
printf '%s\n' InitializeInjection InitializeInjectionNvtx2 cudaFree cudaFreeAsync \
    cudaIpcGetMemHandle cudaMemPoolExportPointer cudaMalloc cudaMallocAsync cudaMallocManaged \
    umadv_inject_exit umadv_inject_torch_malloc umadv_inject_torch_free \
    umadv_inject_iteration umadv_inject_launch umadv_inject_libumadv_path \
    cudaLaunchKernel cudaLaunchKernel_ptsz cudaLaunchKernelExC cudaLaunchKernelExC_ptsz \
    cudaLaunchCooperativeKernel cudaLaunchCooperativeKernel_ptsz __cudaLaunchKernel \
    __cudaLaunchKernel_ptsz cudaGraphLaunch cudaGraphLaunch_ptsz | sort >"$tmp/exports.want"
cmp -s "$tmp/exports.want" "$tmp/exports"
ok $? "the injection library exports its entry points and nothing else" || diag "$tmp/exports"

if command -v python3 >/dev/null 2>&1; then
    mkdir -p "$tmp/py/user" "$tmp/py/torch"
    echo 'print("user sitecustomize")' >"$tmp/py/user/sitecustomize.py"
    printf 'class cuda:\n    @staticmethod\n    def is_available():\n        return False\n' \
        >"$tmp/py/torch/__init__.py"
    PYTHONPATH=$tmp/py/user:$tmp/py run py -q -- python3 -c '
import os, sys, torch
print("torch imported")
print("preload [%s]" % os.environ.get("LD_PRELOAD", ""))
print("finders left %d" % sum(type(f).__name__ == "_TorchFinder" for f in sys.meta_path))'
    printf '%s\n' "user sitecustomize" "torch imported" "preload []" "finders left 0" \
        >"$tmp/py.want"
    [ "$(rc_of py)" -eq 0 ] && cmp -s "$tmp/py.want" "$tmp/py.out"
    ok $? "python: the user's sitecustomize runs, torch imports, nothing preloaded" ||
        { diag "$tmp/py.out"; diag "$tmp/py.err"; }

    # A rank of a distributed job whose hook cannot install umadv says which
    # rank it is (a torch with CUDA whose pluggable allocator fails).
    mkdir -p "$tmp/pyr/torch"
    printf '%s
' 'class _Memory:' '    @staticmethod' \
        '    def CUDAPluggableAllocator(*args):' '        raise RuntimeError("no allocator")' \
        'class cuda:' '    memory = _Memory' '    @staticmethod' '    def is_available():' \
        '        return True' >"$tmp/pyr/torch/__init__.py"
    RANK=3 LOCAL_RANK=1 PYTHONPATH=$tmp/pyr run pyr -q -- python3 -c 'import torch'
    [ "$(rc_of pyr)" -eq 0 ] &&
        grep -q "^umadv\[rank 3\]: cannot put umadv's allocator under PyTorch" "$tmp/pyr.err"
    ok $? "python: a rank whose hook cannot install umadv names its rank" || diag "$tmp/pyr.err"
else
    skip "no python3: the start-up hook"
    skip "no python3: the start-up hook's rank"
fi

# A per-rank budget reaches every rank as given; a bad entry is a usage error.
run rankb -q --budget 8G,4G -- sh -c 'echo "$UMADV_BUDGET"'
run rankbad -q --budget 8G,4X -- true
[ "$(rc_of rankb)" -eq 0 ] && [ "$(cat "$tmp/rankb.out")" = 8G,4G ] && [ "$(rc_of rankbad)" -eq 2 ] &&
    grep -q "invalid value '8G,4X' for '--budget': entry 1 (\"4X\") of the per-rank list" \
        "$tmp/rankbad.err"
ok $? "--budget takes a per-rank list, checked entry by entry" || diag "$tmp/rankbad.err"

# ---- the summary -------------------------------------------------------

record='umadv-run-summary 1
pid 4242
policy plan
budget 8589934592
iterations 10
ms_per_iteration 12.500
replayed_iterations 7
ms_per_replayed_iteration 11.250
plan ok
gpu_peak_used 3221225472
resident_peak 2147483648
managed_peak 4294967296
gpu_faults 12
bytes_to_gpu 1073741824
bytes_to_host 536870912
plans 2
profiles 1
profile_end_ms 120.300
plan_ms 12.500
replay_start_ms 3.140
routed_mallocs 3
routed_managed 2
unrouted 0
a_key_from_the_future 1
end'
export record
run summary -- sh -c 'printf "%s\n" "$record" >>"$UMADV_RUN_SUMMARY"; echo done'
cat >"$tmp/summary.want" <<'WANT'
umadv run: sh (pid 4242): policy plan, budget 8.00 GiB
  iterations 10, 12.500 ms/iteration (7 replaying the plan: 11.250 ms/iteration); plan: ok
  peak GPU memory 3.00 GiB (umadv resident peak 2.00 GiB, managed peak 4.00 GiB)
  faults 12; to GPU 1.00 GiB, to host 0.50 GiB; plans 2 (re-plans 1); profiled iterations 1
  umadv's own calls: ending profiles 120.3 ms, planning 12.5 ms, starting replays 3.1 ms
  allocations: 3 cudaMalloc routed, 2 cudaMallocManaged managed, 0 left to CUDA
WANT
[ "$(rc_of summary)" -eq 0 ] && [ "$(cat "$tmp/summary.out")" = done ] &&
    cmp -s "$tmp/summary.want" "$tmp/summary.err"
ok $? "a summary record is read back and printed on stderr, unknown keys skipped" ||
    diag "$tmp/summary.err"

run two -- sh -c 'printf "%s\n" "$record" >>"$UMADV_RUN_SUMMARY"; printf "%s\n" "$record" >>"$UMADV_RUN_SUMMARY"'
[ "$(grep -c '^umadv run: sh (pid 4242)' "$tmp/two.err")" -eq 2 ]
ok $? "every process's record is printed"

ranked=$(printf '%s\n' "$record" | sed 's/^pid 4242$/pid 4242\nrank 1/')
export ranked
run ranked -- sh -c 'printf "%s\n" "$ranked" >>"$UMADV_RUN_SUMMARY"'
grep -q '^umadv run: sh (pid 4242, rank 1): policy plan, budget 8.00 GiB$' "$tmp/ranked.err"
ok $? "a rank's record says which rank it is" || diag "$tmp/ranked.err"

older=$(printf '%s\n' "$record" | sed '/^profile_end_ms /d; /^plan_ms /d; /^replay_start_ms /d')
export older
run older -- sh -c 'printf "%s\n" "$older" >>"$UMADV_RUN_SUMMARY"'
grep -q '^umadv run: sh (pid 4242)' "$tmp/older.err" && ! grep -q "umadv's own calls" "$tmp/older.err"
ok $? "a record without the phase times (an older library) prints no line of them" ||
    diag "$tmp/older.err"

own=$(printf '%s\n' "$record" | sed 's/^iterations 10$/iterations 0\niterations_by program/')
export own
run own -- sh -c 'printf "%s\n" "$own" >>"$UMADV_RUN_SUMMARY"'
grep -q "iterations: the program marks its own through umadv's API" "$tmp/own.err"
ok $? "a program that marks its own iterations is said so" || diag "$tmp/own.err"

run none -- true
grep -q "umadv run: true never used umadv" "$tmp/none.err"
ok $? "a program that never used umadv is said so"

run cut -- sh -c 'printf "umadv-run-summary 1\npolicy plan\n" >>"$UMADV_RUN_SUMMARY"'
grep -q "line 2: a malformed or unfinished record" "$tmp/cut.err"
ok $? "an unfinished record is reported with its line" || diag "$tmp/cut.err"

run bad -- sh -c 'printf "umadv-run-summary 1\nbudget lots\nend\n" >>"$UMADV_RUN_SUMMARY"'
grep -q "line 2: a malformed or unfinished record" "$tmp/bad.err"
ok $? "a value of the wrong type is reported with its line" || diag "$tmp/bad.err"

run quiet -q -- sh -c 'echo "[${UMADV_RUN_SUMMARY:-}]"'
[ "$(cat "$tmp/quiet.out")" = "[]" ] && [ ! -s "$tmp/quiet.err" ]
ok $? "--quiet: no summary file, nothing printed"

run keep --summary "$tmp/kept" -- sh -c 'printf "%s\n" "$record" >>"$UMADV_RUN_SUMMARY"'
[ -f "$tmp/kept" ] && [ "$(head -n 1 "$tmp/kept")" = "umadv-run-summary 1" ] &&
    grep -q "pid 4242" "$tmp/keep.err"
ok $? "--summary FILE keeps the records and prints them"

long=$tmp/$(printf '%0250d' 0)
mkdir -p "$long"
run longsum --summary "$long/s" -- sh -c 'echo started'
check_fails longsum 1 "longer than 255 bytes" "a summary path the library would refuse, before the program starts,"

# in a directory of its own: other runs (a parallel make check, CI) make
# and remove their own temporary files in the shared one meanwhile
mkdir -p "$tmp/tmpdir"
(TMPDIR=$tmp/tmpdir && export TMPDIR && run tmpgone -- true)
[ "$(rc_of tmpgone)" -eq 0 ] && [ -z "$(ls -A "$tmp/tmpdir")" ]
ok $? "the temporary summary file is removed"

tap_done
