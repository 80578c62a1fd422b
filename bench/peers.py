#!/usr/bin/env python3
"""umadv against what PyTorch users pick to fit a model into less GPU
memory (issue 11, item 5), per model and batch, all in one invocation.

For the GPU machine. Each run is a process of examples/torch_train.py
(its log and JSON kept in --out):
  native        plain PyTorch (--native): the reference time and losses
  save_on_cpu   torch.autograd.graph.save_on_cpu(pin_memory=True) around
                the forward (--peer save_on_cpu): its peak GPU memory
                (torch.cuda.max_memory_allocated) and the bytes its hooks
                move each way
  checkpoint    torch.utils.checkpoint.checkpoint_sequential over the
                model's stages in sqrt(n) segments (--peer checkpoint);
                "not applicable" where the forward is no chain of stages
  footprint     a short umadv oracle run: the managed peak (what the
                budgets are shares of) and the trace the bound is
                computed on
  budgets       one process per budget and policy, UMADV_BUDGET=B:
                oracle, plan, prefetch-all and demand, each profiling
                for itself, each from the same initial weights; the
                budgets are --budgets: "soc" for save_on_cpu's peak
                (when it ran), percentages of the footprint, in whole MiB
Budgets emulate a smaller GPU: torch_train.py never lets umadv hold more
managed memory than 80% of what the card has free (UMADV_MAX_MANAGED).
--loader makes every run train as with a data loader (torch_train.py
--loader: a batch of its own each iteration, copied from pinned host
memory into new tensors), peers and umadv alike.

Rounds (--rounds N, default 1): every timed process (native, the peers,
each budget's policies) runs N times, round after round, each round in
the same order, so that a machine whose speed drifts over minutes (a
launch-bound model's native time moved 31.6 -> 43.2 ms between two
rounds on an H200, 2026-11-30) slows all methods of a round alike;
with N > 1 the logs are named PREFIX-rK-METHOD. The footprint run and
the budgets come from the first round. A row's ms/iter is then the
median of its rounds', its ratios (x native, x phys, x cut, x UVM) the
medians of each round's own ratios (the bounds over that round's
native time), its bytes the medians, its memory held and faults the
largest of any round, its losses identical only when every round's
are; ms_rounds and x_native_rounds in the JSON keep every round's.
The issue's headline ratio, save_on_cpu's time over plan's at
save_on_cpu's own peak, is printed per round and as their median
(soc_over_plan, soc_over_plan_rounds in the JSON).

Columns. ms/iter: the mean of the steady-state iterations
(torch_train.py; with rounds, the median of the rounds'). x native: over
native PyTorch's. x phys: over the
physical bound at the memory the row holds (its budget; a peer's peak):
max(compute, in / H2D bandwidth, out / D2H bandwidth), compute being
native PyTorch's ms/iter, in and out the fewest bytes that memory
forces per iteration (benchlib.min_traffic on the footprint trace: the
optimal residency, never the bytes a plan chose to move), the bandwidths
pinned memcpy's: --pinned-gbps H2D,D2H (bench/evict_channels measures
them: staged-evict's copy and restore-copy's rates), else the trace's
link record: the link probe's staged channel (stage_restore_bw,
stage_evict_bw: pinned copies each way) where it was measured, the UVM
fetch and evict rates as a stand-in where not (the table says which;
the stand-in makes the bound looser). x cut: over a stricter bound at
the same rates (benchlib.cut_bound_ms): while a step runs, the data held
across it that the memory cannot hold beside it (the iteration's data
written before it and read after it, and the weights and optimizer
state) is off the GPU: what was on it earlier in the iteration left
after that and before the step, and what is read again in the iteration
comes back after the step, so those bytes cross the link one way and
then the other, not both at once as max(...) assumes (a network's
forward evicts, its backward fetches); taken over two steps, the way
out before the first, the steps between, the way back after the
second. Both bounds hold, so x cut is over the larger. x UVM: over today's
bound, max(oracle ms, plan's fetched / fetch bw, plan's evicted / evict
bw) with the link probe's UVM rates (bench/torch_policies.py's). held:
the GPU memory the row held: PyTorch's peak allocated (native, peers),
umadv's resident peak (policies). out / in: GiB per iteration to the
host and back (save_on_cpu: what its hooks packed and unpacked; umadv:
evicted and fetched bytes). faults: GPU fault groups of the last
counted replayed iteration (umadv only). losses: every iteration's
loss bit for bit against native's (save_on_cpu should be identical;
checkpointing recomputes and may not be: reported, not hidden).

Largest batch under a cap (--cap-gib, unless --skip-cap): per model,
native with set_per_process_memory_fraction(cap / total), save_on_cpu
and checkpoint under the same fraction, and umadv (plan, UMADV_BUDGET =
the cap); each probe a fresh process of --cap-iters iterations (an
out-of-memory must not poison the next), time-boxed by --cap-timeout.
--cap-methods picks some of them, --cap-only runs the search alone.
Batches are multiples of --cap-step: doubled from --cap-start while they
train, then bisected between the last that trained and the first that
did not, down to one step; a probe that fails for any reason counts as
not training (the reason is kept, and how it ended: "killed by SIGKILL"
is most often the kernel's out-of-memory killer); --cap-max stops the
doubling. The host's memory bounds save_on_cpu and umadv too: the
former ends as out of memory before it pins more than the host can
spare (torch_train.py's HostGuard), umadv's staging pool pins no more
than that and migrates the rest (umadv(7), UMADV_STAGE).

  bench/peers.py [--lib PATH] [--models resnet50,vgg16,gpt2]
                 [--batches 64,256] [--budgets soc,25,50,75] [--iters N]
                 [--pinned-gbps H2D,D2H] [--cap-gib 16] [--skip-cap | --cap-only]
                 [--cap-methods native,save_on_cpu,checkpoint,umadv]
                 [--rounds N] [--timeout S] [--out DIR]

Writes DIR/peers.json (every number and command line) and a log per
process; prints one table per model last. Exits 1 when a run needed
for a table gave nothing; out of memory and not applicable are results.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from benchlib import (Bounds, bound_ms, command_line, last_error, moved_bytes, run_command,
                      status_text)

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "examples", "torch_train.py")
POLICIES = ("oracle", "plan", "prefetch-all", "demand")
PEERS = ("save_on_cpu", "checkpoint")
CAP_METHODS = ("native", "save_on_cpu", "checkpoint", "umadv")
EXIT_OUT_OF_MEMORY = 3   # torch_train.py
EXIT_NOT_APPLICABLE = 4
FOOTPRINT_ITERS = 4      # the profile, the timing pass and a replay
GIB = float(1 << 30)
MIB = 1 << 20


class Failure(Exception):
    """A run a table needs gave no result: exit 1."""


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", default=os.environ.get("UMADV_LIBRARY", ".libs/libumadv.so"))
    p.add_argument("--models", default="resnet50,vgg16,gpt2",
                   help="torch_train.py --model names (gpt2: the torch.nn GPT-2-small shape)")
    p.add_argument("--batches", default="64,256")
    p.add_argument("--seq-len", type=int, default=128, help="gpt2's tokens per sequence")
    p.add_argument("--budgets", default="soc,25,50,75",
                   help="percentages of the footprint, and soc: save_on_cpu's peak")
    p.add_argument("--iters", type=int, default=10, help="iterations per run")
    p.add_argument("--loader", action="store_true",
                   help="every run trains as with a data loader: a batch of its own each "
                   "iteration, copied from pinned host memory (torch_train.py --loader)")
    p.add_argument("--policies", default=",".join(POLICIES),
                   help="umadv policies run at each budget, one process each (default: all; "
                   "oracle gives the UVM-rate bound column)")
    p.add_argument("--pinned-gbps", metavar="H2D,D2H",
                   help="pinned memcpy GB/s each way for the physical bound (default: the "
                   "trace's UVM rates, as a stand-in)")
    p.add_argument("--cap-gib", type=float, default=16.0)
    p.add_argument("--skip-cap", action="store_true", help="no largest-batch search")
    p.add_argument("--cap-only", action="store_true",
                   help="the largest-batch search alone (no table runs)")
    p.add_argument("--cap-methods", default=",".join(CAP_METHODS),
                   help="which methods the search tries (of %s)" % ",".join(CAP_METHODS))
    p.add_argument("--cap-iters", type=int, default=6,
                   help="iterations a probe must train (umadv: the profile, the timing pass, "
                   "then replays)")
    p.add_argument("--cap-step", type=int, default=8, help="batches searched: multiples of it")
    p.add_argument("--cap-start", type=int, default=32)
    p.add_argument("--cap-max", type=int, default=8192)
    p.add_argument("--cap-timeout", type=int, default=300, help="seconds per probe")
    p.add_argument("--rounds", type=int, default=1,
                   help="every timed process this many times, round after round (medians)")
    p.add_argument("--timeout", type=int, default=600, help="seconds per run")
    p.add_argument("--out", default=os.environ.get("OUT", "bench-out"))
    p.add_argument("--script", default=SCRIPT, help=argparse.SUPPRESS)  # tests: a stand-in
    args = p.parse_args()
    try:
        args.models = args.models.split(",")
        args.batches = [int(b) for b in args.batches.split(",")]
        words = args.budgets.split(",") if args.budgets else []
        args.soc_budget = "soc" in words
        args.budgets = [int(x) for x in words if x != "soc"]
        args.pinned = (tuple(float(x) * 1e9 for x in args.pinned_gbps.split(","))
                       if args.pinned_gbps else None)
    except ValueError:
        p.error("--batches: whole numbers; --budgets: soc and whole numbers; "
                "--pinned-gbps: two numbers")
    if args.pinned is not None and (len(args.pinned) != 2 or min(args.pinned) <= 0):
        p.error("--pinned-gbps: H2D,D2H, both above 0")
    if not all(0 < pct <= 100 for pct in args.budgets) or min(args.batches) < 1:
        p.error("--budgets: percentages in (0, 100]; --batches: at least 1")
    if args.iters < FOOTPRINT_ITERS + 3 or args.cap_iters < FOOTPRINT_ITERS:
        p.error("--iters: at least %d (steady-state iterations after the profile); "
                "--cap-iters: at least %d" % (FOOTPRINT_ITERS + 3, FOOTPRINT_ITERS))
    args.policies = args.policies.split(",")
    if not args.policies or not set(args.policies) <= set(POLICIES):
        p.error("--policies: of %s" % ",".join(POLICIES))
    args.cap_methods = args.cap_methods.split(",")
    if not set(args.cap_methods) <= set(CAP_METHODS) or (args.cap_only and args.skip_cap):
        p.error("--cap-methods: of %s; --cap-only and --skip-cap exclude each other" %
                ",".join(CAP_METHODS))
    if args.cap_step < 1 or args.cap_start < 1 or args.cap_max < args.cap_start:
        p.error("--cap-step, --cap-start: at least 1; --cap-max: at least --cap-start")
    if args.rounds < 1:
        p.error("--rounds: at least 1")
    return args


# ---- runs ---------------------------------------------------------------

def torch_train(args, name, model, batch, extra, budget=None, timeout=None):
    """One torch_train.py process: {"rc", "doc" (its --json, None if
    none), "command", "log"}."""
    result = os.path.join(args.out, name + ".json")
    if os.path.exists(result):
        os.remove(result)  # a file left by an earlier run is no result
    argv = [sys.executable, args.script, "--lib", args.lib, "--model", model,
            "--batch", str(batch), "--json", result] + list(extra)
    if model == "gpt2":
        argv += ["--seq-len", str(args.seq_len)]
    if args.loader:
        argv += ["--loader"]
    env = {"UMADV_BUDGET": str(budget) if budget else None}
    log = os.path.join(args.out, name + ".log")
    rc, stdout, err, line = run_command(argv, log, env, timeout or args.timeout)
    doc = None
    try:
        with open(result) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        pass
    return {"rc": rc, "doc": doc, "command": line, "log": log,
            "first_line": stdout.split("\n", 1)[0], "error": last_error(err) if rc else ""}


def outcome(run):
    """What a peer's run came to: "ok", "out of memory", "not applicable"
    or "failed"."""
    if run["rc"] == 0 and run["doc"] and run["doc"].get("native"):
        return "ok"
    return {EXIT_OUT_OF_MEMORY: "out of memory",
            EXIT_NOT_APPLICABLE: "not applicable"}.get(run["rc"], "failed")


def why_not(run):
    """Why a probe did not train, in words: its outcome, and for a failure
    how it ended and the last line it wrote on standard error."""
    what = outcome(run)
    return what if what != "failed" else "failed (%s)%s" % (status_text(run["rc"]), said(run))


def said(run):
    """": " and the last line @run's standard error gave, or nothing."""
    return ": " + run["error"] if run["error"] else ""


def need(run, what):
    """@run's document, or Failure naming @what and its log."""
    if run["rc"] != 0 or run["doc"] is None:
        raise Failure("%s failed (%s)%s; see %s" % (what, status_text(run["rc"]), said(run),
                                                    run["log"]))
    return run["doc"]


def native_runs(args, model, batch, prefix):
    """Native PyTorch and its peers: {method: run}."""
    iters = ["--iters", str(args.iters)]
    runs = {"native": torch_train(args, prefix + "-native", model, batch, ["--native"] + iters)}
    if outcome(runs["native"]) == "failed":
        raise Failure("%s native failed (%s)%s; see %s" % (
            prefix, status_text(runs["native"]["rc"]), said(runs["native"]),
            runs["native"]["log"]))
    for peer in PEERS:
        runs[peer] = torch_train(args, "%s-%s" % (prefix, peer), model, batch,
                                 ["--peer", peer] + iters)
    return runs


def footprint_run(args, model, batch, prefix):
    """umadv's managed peak, and the trace the bound is computed on."""
    trace = os.path.join(args.out, prefix + ".umt")
    run = torch_train(args, prefix + "-footprint", model, batch,
                      ["--umadv", "--iters", str(FOOTPRINT_ITERS), "--policies", "oracle",
                       "--trace", trace])
    doc = need(run, prefix + " footprint")
    if not os.path.exists(trace):
        raise Failure("%s footprint saved no trace; see %s" % (prefix, run["log"]))
    return doc["runs"][0]["managed_peak"], trace, run


def budget_list(args, footprint, soc):
    """[(label, bytes)]: save_on_cpu's peak (when it ran), then the
    percentages of the footprint, whole MiB."""
    out = []
    if soc is not None and args.soc_budget:
        out.append(("save_on_cpu peak", soc // MIB * MIB))
    for pct in args.budgets:
        out.append(("%d%%" % pct, footprint * pct // 100 // MIB * MIB))
    return out


# ---- bounds -------------------------------------------------------------

def ratio(a, b):
    return a / b if a is not None and b else None


# ---- rows ---------------------------------------------------------------

def native_row(method, run, native, bounds):
    """The row of native PyTorch or a peer."""
    row = {"method": method, "budget_label": "-", "outcome": outcome(run),
           "command": run["command"]}
    if row["outcome"] != "ok":
        doc = run["doc"] or {}
        row["why"] = (doc.get("not_applicable") or doc.get("out_of_memory") or
                      (run["error"] + "; " if run["error"] else "") + "see " + run["log"])
        return row
    r = run["doc"]["native"]
    held = r.get("peak_allocated")
    row.update(ms_per_iter=r["ms_per_iter"], held=held, losses=r["losses"],
               out_bytes=r.get("to_host_bytes_per_iter", 0 if method != "save_on_cpu" else None),
               in_bytes=r.get("from_host_bytes_per_iter", 0 if method != "save_on_cpu" else None),
               faults=None, peak_reserved=r.get("peak_reserved"), segments=r.get("segments"))
    row["x_native"] = ratio(r["ms_per_iter"], native["ms_per_iter"])
    row["identical"] = r["losses"] == native["losses"]
    if held is not None:
        row.update(bounds.at(held))
        row["x_phys"] = ratio(r["ms_per_iter"], row["bound_ms"])
        row["x_cut"] = ratio(r["ms_per_iter"], row["cut_ms"])
    return row


def policy_rows(args, label, budget, by, native, bounds, commands):
    """The rows of one budget's processes (@by: policy -> its run in
    torch_train.py's JSON; @commands: policy -> command line), oracle
    kept for the JSON."""
    oracle, plan = by.get("oracle", {}), by.get("plan", {})
    uvm = None
    if "ms_per_iter" in oracle and "ms_per_iter" in plan:
        uvm = bound_ms(oracle["ms_per_iter"], plan["fetched_bytes_per_iter"],
                       plan["evicted_bytes_per_iter"], bounds.uvm)
    phys = bounds.at(budget)
    rows = []
    for policy in args.policies:
        r = by.get(policy)
        row = dict(phys, method=policy, budget_label=label, budget=budget,
                   command=commands.get(policy), uvm_bound_ms=uvm)
        if r is None or "ms_per_iter" not in r:
            row.update(outcome="refused", why=(r or {}).get("skipped", "did not run"))
            rows.append(row)
            continue
        row.update(outcome="ok", ms_per_iter=r["ms_per_iter"], held=r["resident_peak"],
                   out_bytes=moved_bytes(r, "evicted", "staged"),
                   in_bytes=moved_bytes(r, "fetched", "restored"),
                   faults=r.get("faults_counted"), losses=r["losses"],
                   x_native=ratio(r["ms_per_iter"], native["ms_per_iter"]),
                   identical=r["losses"] == native["losses"],
                   x_phys=ratio(r["ms_per_iter"], phys["bound_ms"]),
                   x_cut=ratio(r["ms_per_iter"], phys["cut_ms"]),
                   x_uvm=ratio(r["ms_per_iter"], uvm))
        if policy == "oracle":  # no budget binds it: no bound to compare with
            row.update(x_phys=None, x_uvm=None)
        rows.append(row)
    return rows


def budget_runs(args, model, batch, prefix, label, budget):
    """One process per policy at @budget, as a user runs one policy: each
    profiles, plans and replays on its own. (In one process, a policy
    after oracle replayed oracle's guessed profile, and plan's first
    iterations re-profiled inside the measured ones: 1133 ms against
    177-190 steady, H100, 2026-11-24.) Returns ({policy: its run},
    {policy: command line})."""
    by, commands = {}, {}
    tag = "soc" if label.startswith("save_on_cpu") else label[:-1]
    for policy in args.policies:
        run = torch_train(args, "%s-%s-%s" % (prefix, tag, policy), model, batch,
                          ["--umadv", "--iters", str(args.iters), "--policies", policy], budget)
        doc = need(run, "%s %s at %s" % (prefix, policy, label))
        by.update({r["policy"]: r for r in doc["runs"]})
        commands[policy] = run["command"]
    return by, commands


def measure(args, model, batch):
    """Every run of one model and batch, --rounds times: its entry of
    peers.json."""
    prefix = "%s-bs%d" % (model, batch)
    rounds, natives = [], []
    for k in range(args.rounds):
        tag = prefix if args.rounds == 1 else "%s-r%d" % (prefix, k + 1)
        runs = native_runs(args, model, batch, tag)
        if outcome(runs["native"]) != "ok":
            if k == 0:
                return {"model": model, "batch": batch, "command": runs["native"]["command"],
                        "skipped": "native PyTorch: %s" % outcome(runs["native"]), "rows": []}
            raise Failure("%s native: %s in round %d, not in round 1; see %s" % (
                prefix, outcome(runs["native"]), k + 1, runs["native"]["log"]))
        native = runs["native"]["doc"]["native"]
        natives.append(native["ms_per_iter"])
        if k == 0:
            footprint, trace, fp_run = footprint_run(args, model, batch, prefix)
            first = Bounds(trace, native["ms_per_iter"], args.pinned)
            device_line = runs["native"]["first_line"]
        bounds = first.computing(native["ms_per_iter"])
        rows = [native_row(m, runs[m], native, bounds) for m in ("native",) + PEERS]
        if k == 0:
            soc = rows[1].get("held") if rows[1]["outcome"] == "ok" else None
            budgets = budget_list(args, footprint, soc)
        for label, budget in budgets:
            by, commands = budget_runs(args, model, batch, tag, label, budget)
            rows += policy_rows(args, label, budget, by, native, bounds, commands)
        rounds.append(rows)
    soc_plan = soc_over_plan(rounds)
    return {"model": model, "batch": batch, "footprint": footprint, "trace": trace,
            "footprint_command": fp_run["command"], "device_line": device_line,
            "compute_ms": statistics.median(natives), "pinned_bw": first.pinned,
            "uvm_bw": first.uvm, "rates": first.rates, "budgets": budgets,
            "rounds": args.rounds, "soc_over_plan_rounds": soc_plan,
            "soc_over_plan": median_of(soc_plan), "rows": merge_rounds(rounds)}


# ---- rounds -------------------------------------------------------------

# A row's keys that are the median of its rounds' (a ratio: of each
# round's own ratio).
MEDIAN_KEYS = ("ms_per_iter", "x_native", "x_phys", "x_cut", "x_uvm", "bound_ms", "cut_ms",
               "uvm_bound_ms", "out_bytes", "in_bytes")


def median_of(values):
    """The median of @values that are not None; None if none are."""
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def largest_of(values):
    known = [v for v in values if v is not None]
    return max(known) if known else None


def merge_rounds(rounds):
    """One row per method and budget from @rounds (each round's rows, in
    the same order): see Rounds in the opening comment."""
    return [merged_row([rows[i] for rows in rounds]) for i in range(len(rounds[0]))]


def merged_row(group):
    row = dict(group[0])
    kinds = [r["outcome"] for r in group]
    if len(set(kinds)) > 1:
        row.update(outcome="failed", why="the rounds disagree: %s" % ", ".join(kinds))
        return row
    row["commands"] = [r.get("command") for r in group]
    if row["outcome"] != "ok":
        return row
    for key in MEDIAN_KEYS:
        row[key] = median_of([r.get(key) for r in group])
    row.update(ms_rounds=[r["ms_per_iter"] for r in group],
               x_native_rounds=[r["x_native"] for r in group],
               held=largest_of([r["held"] for r in group]),
               faults=largest_of([r["faults"] for r in group]),
               identical=all(r["identical"] for r in group))
    return row


def soc_over_plan(rounds):
    """Per round, save_on_cpu's ms/iter over plan's at save_on_cpu's peak
    (issue 11's target: at least 2); [] where either did not run."""
    out = []
    for rows in rounds:
        soc = [r for r in rows if r["method"] == "save_on_cpu" and r["outcome"] == "ok"]
        plan = [r for r in rows if r["method"] == "plan" and r["outcome"] == "ok" and
                r["budget_label"] == "save_on_cpu peak"]
        if soc and plan:
            out.append(soc[0]["ms_per_iter"] / plan[0]["ms_per_iter"])
    return out


# ---- the largest batch under a cap ------------------------------------------

def cap_probe(args, model, method, batch):
    """Does @batch train --cap-iters iterations under the cap by @method?
    (trained, why, command line)"""
    name = "%s-cap-%s-bs%d" % (model, method, batch)
    iters = ["--iters", str(args.cap_iters)]
    cap = ["--cap-gib", repr(args.cap_gib)]
    if method == "umadv":
        budget = int(args.cap_gib * GIB)
        run = torch_train(args, name, model, batch, ["--umadv", "--policies", "plan"] + iters,
                          budget, args.cap_timeout)
    else:
        peer = [] if method == "native" else ["--peer", method]
        run = torch_train(args, name, model, batch, ["--native"] + peer + cap + iters,
                          None, args.cap_timeout)
    if run["rc"] is None:
        return False, "timed out", run["command"]
    if method == "umadv":
        r = ((run["doc"] or {}).get("runs") or [{}])[0]
        if run["rc"] == 0 and "ms_per_iter" in r:
            if r["resident_peak"] > budget:
                return False, "resident peak %d over the cap" % r["resident_peak"], run["command"]
            return True, "trained", run["command"]
        if "skipped" in r:
            return False, r["skipped"], run["command"]
        return False, why_not(run), run["command"]
    return outcome(run) == "ok", why_not(run), run["command"]


class MethodNotApplicable(Exception):
    """A probe said the method does not apply to the model: no search."""


def largest_batch(probe, start, step, limit):
    """The largest multiple of @step that @probe(batch) -> (trained, why,
    command) trains, assuming every smaller one trains too: doubled from
    @start, then bisected. Returns (batch, 0 if none, None if not
    applicable; whether the doubling stopped at @limit; [(batch, trained,
    why, command)] in the order probed)."""
    tried = []

    def trains(k):
        result = tuple(probe(k * step))
        tried.append((k * step,) + result)
        if result[1] == "not applicable":
            raise MethodNotApplicable()
        return result[0]

    lo, hi = 0, max(1, start // step)
    try:
        if trains(hi):
            lo, hi = hi, None
            while hi is None:
                if lo * 2 * step > limit:
                    return lo * step, True, tried
                lo, hi = (lo * 2, None) if trains(lo * 2) else (lo, lo * 2)
        else:
            while hi > 1 and lo == 0:
                if trains(hi // 2):
                    lo = hi // 2
                else:
                    hi //= 2
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if trains(mid) else (lo, mid)
    except MethodNotApplicable:
        return None, False, tried
    return lo * step, False, tried


def cap_search(args, model):
    """The largest batch of @model under the cap, by every method."""
    out = {}
    for method in args.cap_methods:
        found, limited, tried = largest_batch(
            lambda b, m=method: cap_probe(args, model, m, b),
            args.cap_start, args.cap_step, args.cap_max)
        out[method] = {"largest_batch": found, "hit_cap_max": limited,
                       "probes": [{"batch": b, "trained": ok, "why": why, "command": line}
                                  for b, ok, why, line in tried]}
        print("cap %s %s: %s (%d probes)" % (model, method, "not applicable" if found is None
                                             else found, len(tried)), flush=True)
    return out


# ---- output -------------------------------------------------------------

def cell(value, fmt, none="-"):
    return none if value is None else fmt % value


def print_model(model, entries, cap, args):
    """One model's table: every batch, then the largest batches."""
    print("\n== %s" % model)
    for e in [e for e in entries if "skipped" in e]:
        print("batch %d: skipped: %s" % (e["batch"], e["skipped"]))
    entries = [e for e in entries if "skipped" not in e]
    for e in entries:
        print("batch %d: footprint %.2f GiB, compute (native) %.1f ms; bound rates %.1f / %.1f "
              "GB/s (%s)" % (e["batch"], e["footprint"] / GIB, e["compute_ms"],
                             e["pinned_bw"][0] / 1e9, e["pinned_bw"][1] / 1e9, e["rates"]))
    if entries:
        print_rows(entries)
    for e in entries:
        print_rounds(e)
    if cap:
        print("largest batch under %.0f GiB (multiples of %d): %s" % (
            args.cap_gib, args.cap_step, ", ".join(
                "%s %s" % (m, cap_cell(cap[m])) for m in CAP_METHODS if m in cap)))


def print_rows(entries):
    print("%-6s %-13s %-17s %9s %8s %7s %7s %7s %8s %8s %8s %7s %7s" % (
        "batch", "method", "budget", "ms/iter", "x native", "x phys", "x cut", "x UVM", "held GiB",
        "out GiB", "in GiB", "faults", "losses"))
    for e in entries:
        for r in e["rows"]:
            if r["method"] == "oracle":
                continue
            head = "%-6d %-13s %-17s" % (e["batch"], r["method"], budget_cell(r))
            if r["outcome"] != "ok":
                print("%s %s: %s" % (head, r["outcome"], r["why"]))
                continue
            print("%s %9.1f %8s %7s %7s %7s %8s %8s %8s %7s %7s" % (
                head, r["ms_per_iter"], cell(r["x_native"], "%.2f"), cell(r.get("x_phys"), "%.2f"),
                cell(r.get("x_cut"), "%.2f"), cell(r.get("x_uvm"), "%.2f"), gib_cell(r["held"]), gib_cell(r["out_bytes"]),
                gib_cell(r["in_bytes"]),
                cell(r["faults"], "%d"), "yes" if r["identical"] else "NO"))


def budget_cell(r):
    if r["budget_label"] == "-":
        return "-"
    return "%s %.2fG" % (r["budget_label"].replace("save_on_cpu peak", "soc peak"),
                         r["budget"] / GIB)


def print_rounds(e):
    """Under the table: each round's ms/iter (x native) when there were
    several, and save_on_cpu over plan at its peak."""
    if e.get("rounds", 1) > 1:
        print("batch %d, per round: ms/iter (x native of the round)" % e["batch"])
        for r in e["rows"]:
            if r["method"] != "oracle" and r["outcome"] == "ok":
                print("  %-13s %-17s %s" % (r["method"], budget_cell(r), "  ".join(
                    "%.1f (%.2f)" % (ms, x) for ms, x in zip(r["ms_rounds"],
                                                             r["x_native_rounds"]))))
    if e.get("soc_over_plan") is not None:
        print("batch %d: save_on_cpu / plan at save_on_cpu's peak: %.2f%s" % (
            e["batch"], e["soc_over_plan"], "" if len(e["soc_over_plan_rounds"]) < 2 else
            " (median of %s)" % ", ".join("%.2f" % x for x in e["soc_over_plan_rounds"])))


def gib_cell(n):
    return "?" if n is None else "%.2f" % (n / GIB)


def cap_cell(c):
    if c["largest_batch"] is None:
        return "not applicable"
    return ("%d+" if c["hit_cap_max"] else "%d") % c["largest_batch"]


def device():
    """The GPU and its driver as nvidia-smi names them, for the record."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    return out or "unknown (no nvidia-smi)"


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    result = {"config": {k: v for k, v in vars(args).items()},
              "command": command_line([sys.executable] + sys.argv), "device": device(),
              "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "models": {}}
    try:
        for model in args.models:
            entries = ([] if args.cap_only else
                       [measure(args, model, batch) for batch in args.batches])
            cap = None if args.skip_cap else cap_search(args, model)
            result["models"][model] = {"batches": entries, "cap": cap}
    except Failure as e:
        write(args, result)
        sys.exit("bench: %s" % e)
    write(args, result)
    print("\n%s; started %s; %s" % (result["device"], result["started"], result["command"]))
    for model, m in result["models"].items():
        print_model(model, m["batches"], m["cap"], args)
    print("x phys: over max(native ms, fewest bytes in / H2D, out / D2H) at the memory held; "
          "x cut: over the larger of that and the cut bound (benchlib.cut_bound_ms: what must "
          "leave before a step and return after it, one way and then the other); "
          "x UVM: over max(oracle ms, plan's bytes / the UVM rates)")


def write(args, result):
    with open(os.path.join(args.out, "peers.json"), "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
