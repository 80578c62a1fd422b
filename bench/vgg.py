#!/usr/bin/env python3
"""examples/vgg/vgg_train (VGG-16 in C on cuDNN and cuBLAS, every buffer from
umadv) under every umadv policy, batch size and budget, side by side.

For the GPU machine. Per batch size, an oracle run without a budget first:
its managed peak is the footprint the percentage budgets are shares of,
and its time the reference. Budgets: 12G and 16G stand for the papers'
Titan X and P100, and 25, 50 and 75% of that managed peak; a budget above
the GPU's free memory (nvidia-smi, or --gpu-free) is skipped. Each
budget runs demand,
prefetch-all and plan, one process each, with --deterministic and
--split (default auto: the fewest parts whose largest step takes half the
budget, vgg_train's own choice); when that split is not 1, an oracle run
at the same split is the reference the digest is compared with (the
parts change the gradients' summation order, not the result across
policies). Per row: ms per iteration in the steady state (the median of
the iterations after the plan's first, profile-iter + 2 on), x oracle
(against the unsplit oracle), x bound, x cut, faults and bytes each way
per iteration (the same iterations' mean; every run counts the faults of
every iteration, UMADV_FAULT_PERIOD=1, each on the next iteration's line,
so the last iteration's are not known), umadv's resident and managed
peaks, whether the losses and digest equal the reference's, and the
profiling phase: the profiled iteration and the timing pass after it
(iterations profile-iter and profile-iter + 1) in plain iterations (the
unsplit oracle's steady ms; issue 11's target: at most 10).
vgg_train's steps say their declarations are complete
(umadv_step_access_complete) unless --declarations partial.

Bytes each way count both channels: in, what UVM fetched and what was
restored from pinned staging; out, what UVM evicted and what was staged
(dead data released without a copy counts in neither). The physical
bound of a budget: max(compute, the fewest bytes in the budget forces /
H2D rate, the fewest out / D2H rate), computed as bench/peers.py does
(benchlib.Bounds) on the profile the plan run saves (vgg_train --trace,
DIR/bBATCH-LABEL-plan.umt); compute is the faster of the unsplit oracle
and the oracle at the budget's split; the rates are --rates (GB/s;
default 47,45, the link probe's staged restore and evict rates measured
on the H100). x cut: against the cut bound (benchlib.cut_bound_ms: what
must be off the GPU at a step leaves before it and comes back after).
Without a saved profile the bound falls back to the bytes plan moved
(bound_from in the JSON says which).

  bench/vgg.py [--exe PATH] [--batches 128,256] [--budgets 12G,16G,25,50,75]
               [--policies demand,prefetch-all,plan] [--iters N] [--split auto|K] [--rates H2D,D2H] [--gpu-free SIZE]
               [--image-size N] [--workspace-limit SIZE] [--declarations complete|partial]
               [--out DIR]

Writes DIR/vgg.json and one log per run; prints each budget's rows, and
rewrites DIR/vgg.json, as soon as they are measured, so that a run cut
short by a time limit keeps what it measured. Exits 1 when a run's
losses or digest differ from its reference's.

The papers' figures, for bench/RESULTS.md beside ours (their hardware and
their baselines, not measured here):
- vDNN (Rhu et al., MICRO 2016): VGG-16 at batch 256 trains in the 12 GB
  of a Titan X with 18% performance loss against an unlimited GPU.
- ooc_cuDNN (Ito et al., 2019): 10-13% overhead against in-core runs;
  1.45x faster than plain Unified Memory and 1.42x faster than Unified
  Memory with prefetching.
- Layrub (Liu et al., 2018): 24.1% average performance loss.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

from benchlib import Bounds, run_command

GIB = float(1 << 30)
MOVED = ("fetched", "restored", "evicted", "staged")  # vgg_train's bytes per iteration
POLICIES = ("demand", "prefetch-all", "plan")
UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--exe", default="examples/vgg/vgg_train")
    p.add_argument("--batches", default="128,256")
    p.add_argument("--budgets", default="12G,16G,25,50,75",
                   help="sizes (12G) or percentages of the oracle's managed peak (25)")
    p.add_argument("--policies", default=",".join(POLICIES),
                   help="the budgeted policies to run (x bound needs plan)")
    p.add_argument("--iters", type=int, default=8)
    p.add_argument("--profile-iter", type=int, default=1)
    p.add_argument("--split", default="auto", help="auto or a number of parts")
    p.add_argument("--rates", default="47,45", help="H2D,D2H in GB/s")
    p.add_argument("--gpu-free", help="the GPU's free memory (default: nvidia-smi)")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--workspace-limit", default="2G",
                   help="vgg_train --workspace-limit: deterministic backward-filter "
                        "algorithms need more than its 512M default at batch 256")
    p.add_argument("--declarations", choices=("complete", "partial"), default="complete",
                   help="vgg_train --declarations: partial leaves the profile to find by "
                        "faults what each cuDNN kernel touches")
    p.add_argument("--out", default=os.environ.get("OUT", "bench-out"))
    p.add_argument("--timeout", type=int, default=900, help="seconds per run")
    args = p.parse_args()
    args.rates_bps = tuple(float(r) * 1e9 for r in args.rates.split(","))
    args.policies = tuple(args.policies.split(","))
    if not args.policies or set(args.policies) - set(POLICIES):
        p.error("--policies: a list of %s" % ", ".join(POLICIES))
    if len(args.rates_bps) != 2 or min(args.rates_bps) <= 0:
        p.error("--rates: two positive rates, H2D,D2H in GB/s")
    if args.iters < args.profile_iter + 3:
        p.error("--iters: at least --profile-iter + 3, for a steady state")
    return args


def parse_size(text):
    """'12G' -> bytes (binary units, as umadv reads sizes)."""
    m = re.match(r"^(\d+(?:\.\d+)?)([KMGT]?)i?B?$", text.strip(), re.I)
    if not m:
        raise ValueError("not a size: %r" % text)
    return int(float(m.group(1)) * UNITS[m.group(2).upper()])


def gpu_free(args):
    """Bytes free on the GPU: --gpu-free, or nvidia-smi; None if neither."""
    if args.gpu_free:
        return parse_size(args.gpu_free)
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.free",
                              "--format=csv,noheader,nounits", "-i",
                              os.environ.get("UMADV_DEVICE", "0")],
                             stdout=subprocess.PIPE, text=True, timeout=30).stdout
        return int(out.split()[0]) << 20
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        print("bench: no nvidia-smi and no --gpu-free: budgets unchecked against the "
              "GPU's free memory", file=sys.stderr)
        return None


# ---- one run of vgg_train -------------------------------------------------

def parse_run(text):
    """vgg_train's standard output -> dict: iterations, digest, summary."""
    run = {"iters": []}
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 6 and words[0] == "iter" and words[2] == "loss":
            kv = dict(zip(words[2::2], words[3::2]))
            run["iters"].append(dict({"loss": kv["loss"], "ms": float(kv["ms"])},
                                     **{k: int(kv.get(k, 0)) for k in MOVED + ("faults",)}))
        elif words[:1] == ["digest"]:
            run["digest"] = words[1]
        elif words[:1] == ["split"]:
            run["split"] = int(words[1])
        elif words[:1] == ["summary"]:
            run.update((k, v) for k, v in zip(words[1::2], words[2::2]))
    # The line of iteration k carries the faults of k - 1 (umadv counts an
    # iteration's at the next one's begin): moved back to their iteration;
    # the last one's are not known (None).
    counted = [i.pop("faults") for i in run["iters"]]
    for k, i in enumerate(run["iters"]):
        i["faults"] = counted[k + 1] if k + 1 < len(counted) else None
    return run


def vgg_train(args, name, batch, policy, budget, split, trace=None):
    """Run vgg_train (saving its profile to @trace if given); returns the
    parsed run, with 'error' when it failed and 'refused' when umadv_plan
    refused the budget."""
    argv = [args.exe, "--batch", str(batch), "--iters", str(args.iters),
            "--profile-iter", str(args.profile_iter), "--image-size", str(args.image_size),
            "--deterministic", "--workspace-limit", args.workspace_limit, "--split", str(split),
            "--declarations", args.declarations]
    if trace:
        argv += ["--trace", trace]
    # Count the faults of every iteration (umadv samples them otherwise),
    # in every run alike, as bench/policies.py does.
    env = {"UMADV_POLICY": policy, "UMADV_BUDGET": str(budget) if budget else None,
           "UMADV_FAULT_PERIOD": "1"}
    rc, out, err, _ = run_command(argv, os.path.join(args.out, name + ".log"), env,
                                  args.timeout)
    run = parse_run(out)
    if rc != 0 or "digest" not in run:
        lines = err.strip().splitlines() or ["no output"]
        run["error"] = "exit %s: %s" % (rc, lines[-1])
    m = re.search(r"umadv_plan: (.*): training goes on without a plan", err)
    if m:
        run["refused"] = m.group(1)
    return run


def split_for(args, batch, budget):
    """The split vgg_train takes at @budget (--footprint: no GPU)."""
    if args.split != "auto":
        return int(args.split)
    argv = [args.exe, "--footprint", "--batch", str(batch), "--image-size",
            str(args.image_size), "--split", "auto", "--workspace-limit", args.workspace_limit]
    env = dict(os.environ, UMADV_BUDGET=str(budget))
    out = subprocess.run(argv, env=env, stdout=subprocess.PIPE, text=True,
                         timeout=args.timeout).stdout
    m = re.search(r"^split (\d+)", out, re.M)
    if not m:
        sys.exit("bench: %s --footprint printed no split" % args.exe)
    return int(m.group(1))


# ---- rows -----------------------------------------------------------------

def steady(args, run):
    """The iterations after the plan's first: (median ms, {MOVED key and
    "faults": the mean})."""
    its = run["iters"][args.profile_iter + 2:]
    if not its:
        return None
    mean = {k: sum(i[k] for i in its) / len(its) for k in MOVED}
    counted = [i["faults"] for i in its if i["faults"] is not None]
    mean["faults"] = sum(counted) / len(counted) if counted else None
    return statistics.median(i["ms"] for i in its), mean


def profiling_ms(args, run):
    """The profiled iteration's ms and the timing pass's after it."""
    its = run["iters"]
    if len(its) < args.profile_iter + 2:
        return None, None
    return its[args.profile_iter]["ms"], its[args.profile_iter + 1]["ms"]


def bytes_in(mean):
    return mean["fetched"] + mean["restored"]


def bytes_out(mean):
    return mean["evicted"] + mean["staged"]


def bound_ms(oracle_ms, mean, rates):
    return max(oracle_ms, bytes_in(mean) / rates[0] * 1e3, bytes_out(mean) / rates[1] * 1e3)


def budget_bound(args, plan, trace, budget, compute_ms):
    """The budget's bounds: {"bound_ms", "cut_ms", "bound_from", "forced_in",
    "forced_out"}, from the fewest bytes @budget forces on the plan run's
    saved profile (@trace; benchlib.Bounds), else from plan's own bytes;
    None for a plan that failed or was refused (a step alone needs more)."""
    if "error" in plan or "refused" in plan:
        return None
    if os.path.exists(trace):
        b = Bounds(trace, compute_ms, args.rates_bps).at(budget)
        if b["bound_ms"] is not None:
            return {"bound_ms": b["bound_ms"], "cut_ms": b["cut_ms"],
                    "bound_from": "fewest bytes", "forced_in": b["min_in"],
                    "forced_out": b["min_out"]}
    mean = steady(args, plan)[1]
    return {"bound_ms": bound_ms(compute_ms, mean, args.rates_bps), "cut_ms": None,
            "bound_from": "plan's bytes", "forced_in": bytes_in(mean),
            "forced_out": bytes_out(mean)}


def row(args, ctx, policy, run, reference, bound):
    """One table row; @ctx: batch, budget label and bytes, split."""
    r = dict(ctx, policy=policy)
    if "error" in run:
        return dict(r, error=run["error"])
    ms, mean = steady(args, run)
    same = (run["digest"] == reference.get("digest") and
            [i["loss"] for i in run["iters"]] == [i["loss"] for i in reference["iters"]])
    r.update((k + "_per_iter", mean[k]) for k in MOVED)
    r.update(bound or {"bound_ms": None, "cut_ms": None})
    profiled, timed = profiling_ms(args, run)
    return dict(r, ms_per_iter=ms, x_oracle=ms / ctx["oracle_ms"],
                profiled_ms=profiled, timing_ms=timed,
                profiling_x_plain=(profiled + timed) / ctx["oracle_ms"] if profiled else None,
                x_bound=ms / r["bound_ms"] if r["bound_ms"] else None,
                x_cut=ms / r["cut_ms"] if r["cut_ms"] else None,
                faults_per_iter=mean["faults"], in_per_iter=bytes_in(mean),
                out_per_iter=bytes_out(mean),
                resident_peak=int(run.get("resident_peak", 0)),
                managed_peak=int(run.get("managed_peak", 0)),
                digest=run["digest"], digest_equal=same, refused=run.get("refused"))


def budget_list(args, footprint, free):
    """[(label, bytes, why skipped or None)] for the batch's footprint."""
    out = []
    for text in args.budgets.split(","):
        text = text.strip()
        if re.match(r"^\d+(\.\d+)?%?$", text):
            label, size = text.rstrip("%") + "%", int(footprint * float(text.rstrip("%")) / 100)
        else:
            label, size = text, parse_size(text)
        size = size >> 20 << 20
        why = None
        if free is not None and size > free:
            why = "above the GPU's %.1f GiB free" % (free / GIB)
        out.append((label, size, why))
    return out


def run_budget(args, batch, label, budget, oracle, references):
    """The rows of one budget: a reference oracle at its split, if new,
    then every policy."""
    split = split_for(args, batch, budget)
    tag = "b%d-%s" % (batch, label.rstrip("%"))
    if split not in references:
        references[split] = vgg_train(args, "b%d-oracle-split%d" % (batch, split), batch,
                                      "oracle", None, split)
    reference = references[split]
    trace = os.path.join(args.out, "%s-plan.umt" % tag)
    runs = {p: vgg_train(args, "%s-%s" % (tag, p), batch, p, budget, split,
                         trace if p == "plan" else None)
            for p in args.policies}
    oracle_ms = steady(args, oracle)[0]
    compute_ms = min(oracle_ms, steady(args, reference)[0])
    bound = budget_bound(args, runs.get("plan", {"error": "not run"}), trace, budget,
                         compute_ms)
    ctx = {"batch": batch, "budget_label": label, "budget": budget, "split": split,
           "oracle_ms": oracle_ms}
    rows = []
    if reference is not oracle:
        rows.append(row(args, ctx, "oracle", reference, reference, None))
    return rows + [row(args, ctx, p, runs[p], reference, bound) for p in args.policies]


def run_batch(args, batch, report):
    """The rows of @batch, handed to @report as they come."""
    oracle = vgg_train(args, "b%d-oracle" % batch, batch, "oracle", None, 1)
    if "error" in oracle:
        sys.exit("bench: the oracle run at batch %d failed (%s); see b%d-oracle.log"
                 % (batch, oracle["error"], batch))
    footprint = int(oracle["managed_peak"])
    oracle_ms = steady(args, oracle)[0]
    # vgg_train may split even this run (cuDNN's 2^31-element tensors)
    split = oracle.get("split", 1)
    ctx = {"batch": batch, "budget_label": "none", "budget": 0, "split": split,
           "oracle_ms": oracle_ms}
    report.batch(batch, footprint)
    report.rows([row(args, ctx, "oracle", oracle, oracle, None)])
    references = {split: oracle}
    for label, budget, why in budget_list(args, footprint, report.result["gpu_free"]):
        if why:
            report.rows([{"batch": batch, "budget_label": label, "budget": budget,
                          "skipped": why}])
        else:
            report.rows(run_budget(args, batch, label, budget, oracle, references))


# ---- output ---------------------------------------------------------------

HEAD = ("batch", "budget", "split", "policy", "ms/iter", "x oracle", "x bound", "x cut",
        "faults/it", "H2D GiB/it", "D2H GiB/it", "resident pk", "managed pk", "profiling",
        "digest")


def print_row(r):
    budget = r["budget_label"] if not r["budget"] else "%s %.1fG" % (
        r["budget_label"], r["budget"] / GIB)
    if "skipped" in r:
        print("%5d %-12s skipped: %s" % (r["batch"], budget, r["skipped"]))
        return
    if "error" in r:
        print("%5d %-12s %5d %-13s failed: %s" % (r["batch"], budget, r["split"], r["policy"],
                                                  r["error"]))
        return
    print("%5d %-12s %5d %-13s %9.1f %8.2f %8s %8s %10s %10.2f %10.2f %11.2f %10.2f %9s %6s%s" % (
        r["batch"], budget, r["split"], r["policy"], r["ms_per_iter"], r["x_oracle"],
        "-" if r["x_bound"] is None else "%.2f" % r["x_bound"],
        "-" if r["x_cut"] is None else "%.2f" % r["x_cut"],
        "-" if r["faults_per_iter"] is None else "%.1f" % r["faults_per_iter"],
        r["in_per_iter"] / GIB, r["out_per_iter"] / GIB, r["resident_peak"] / GIB,
        r["managed_peak"] / GIB,
        "-" if r["profiling_x_plain"] is None else "%.1fx" % r["profiling_x_plain"],
        "equal" if r["digest_equal"] else "DIFFER",
        "  (plan refused: %s)" % r["refused"] if r.get("refused") else ""))


class Report(object):
    """Rows printed and DIR/vgg.json written as each budget ends: a run
    stopped by a time limit keeps what it measured."""

    def __init__(self, args, free):
        self.path = os.path.join(args.out, "vgg.json")
        self.result = {"config": {k: v for k, v in vars(args).items()}, "gpu_free": free,
                       "batches": []}
        print("vgg_train VGG-16 %dx%d, %d iterations (steady: from %d), split %s; bound "
              "rates H2D %.0f GB/s D2H %.0f GB/s" % (
                  args.image_size, args.image_size, args.iters, args.profile_iter + 2,
                  args.split, args.rates_bps[0] / 1e9, args.rates_bps[1] / 1e9))
        print("%5s %-12s %5s %-13s %9s %8s %8s %8s %10s %10s %10s %11s %10s %9s %6s" % HEAD)
        print("(profiling: the profiled iteration and the timing pass, in plain iterations)")
        sys.stdout.flush()

    def batch(self, batch, footprint):
        self.result["batches"].append({"batch": batch, "footprint": footprint, "rows": []})
        print("# batch %d: footprint %.2f GiB" % (batch, footprint / GIB))

    def rows(self, rows):
        self.result["batches"][-1]["rows"] += rows
        for r in rows:
            print_row(r)
        sys.stdout.flush()
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.result, f, indent=1)
        os.replace(tmp, self.path)

    def differ(self):
        return any(r.get("digest_equal") is False
                   for b in self.result["batches"] for r in b["rows"])


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    report = Report(args, gpu_free(args))
    for b in args.batches.split(","):
        run_batch(args, int(b), report)
    if report.differ():
        sys.exit(1)


if __name__ == "__main__":
    main()
