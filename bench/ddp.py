#!/usr/bin/env python3
"""PyTorch DistributedDataParallel with and without umadv, on 1 and 2 GPUs,
and two jobs sharing one GPU under half a budget each (--share).

For the GPU machine. Per world size N of --gpus, under torchrun
(examples/ddp_train.py, one process per GPU):
  * a footprint run on umadv's allocator under oracle: each rank's
    managed peak, the largest of them the footprint F(N);
  * native DDP (PyTorch's allocator);
  * umadv plan at --pct percent of F(N) per rank, given as a per-rank
    UMADV_BUDGET list (one entry per local rank), by each route of
    --routes: lib (ddp_train.py --lib: the explicit allocator) and run
    (`umadv run -- torchrun ...`: the start-up hook, unmodified script).
Reported: ms/iteration (the slowest rank's median), samples/s, the
scaling efficiency from 1 GPU to N (ms at 1 over ms at N: the batch is
per rank), x physical bound per rank (benchlib.Bounds on the rank's
footprint trace, at its budget, with its native DDP time as compute;
the job's: its time over the largest rank's bound), the same against the
bound on a shared link (x shared: each rank's probed pinned rates scaled
by what bench/link_share.py measures its GPU to copy while every GPU of
the job copies, over what it copies alone; on 1 GPU the two bounds are
one) and whether every
rank's losses are bit for bit native DDP's at the same N; the held
evictions and their waits (all ranks), and the most profiled iterations
of any rank (more than one: umadv profiled again on drift, and that
iteration is slow). The target (issue 14): x physical bound on N GPUs
within 10% of that on 1; printed against both bounds of N GPUs. With
--repeats R every world size runs R times in turn (1, 2, 1, 2...: drift
of the machine falls on both), each repeat's files suffixed -rK from the
second on; the target is then the median of the R ratios, printed with
their range (on 2x H100 one run's ratio fell anywhere in 0.59-1.27 between
machines and runs, 2026-11-27: wider than the target's band).

--share: on GPU 0, one process alone (no DDP) on umadv's allocator with
the whole footprint F(1) as its budget, then two processes at once, each
with half of it; each one's ms/iteration, and the total throughput of
the two against the one alone. Losses against a native run alone.

  bench/ddp.py [--lib PATH] [--umadv PATH] [--model gpt2] [--batch 8]
               [--iters 30] [--gpus 1,2] [--pct 50] [--routes lib,run]
               [--repeats R] [--share] [--out DIR]

Writes DIR/ddp.json and one log per process group.
"""
import argparse
import glob
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import Bounds  # noqa: E402
ROUTES = ("lib", "run")
SCRIPT = os.path.join(HERE, "..", "examples", "ddp_train.py")
LINK_SCRIPT = os.path.join(HERE, "link_share.py")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", default=os.environ.get("UMADV_LIBRARY", ".libs/libumadv.so"))
    p.add_argument("--umadv", default="tools/umadv/umadv", help="umadv, for --routes run")
    p.add_argument("--routes", default="lib",
                   help="how umadv comes under each rank's PyTorch: lib, run or both")
    p.add_argument("--model", default="gpt2")
    p.add_argument("--batch", type=int, default=8, help="per rank")
    # The job's time is its slower rank's median over the steady
    # iterations (ddp_train.py: from profile-iter + 5 on); a replay whose
    # iterations swing from one to the next (GPT-2 at 50%: 111-277 ms,
    # 2026-11-27) needs more of them than 12 iterations leave (5), or the
    # slower of two ranks reads slower than one rank alone.
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--gpus", default="1,2",
                   help="world sizes; those above the GPUs there are skipped")
    p.add_argument("--pct", type=int, default=50, help="budget, percent of the footprint")
    p.add_argument("--repeats", type=int, default=1,
                   help="every world size this many times, in turn (the target: medians)")
    p.add_argument("--share", action="store_true", help="two processes on one GPU too")
    p.add_argument("--out", default=os.environ.get("OUT", "bench-out"))
    p.add_argument("--timeout", type=int, default=500, help="seconds per process group")
    p.add_argument("--launcher", default="%s -m torch.distributed.run --standalone"
                   % shlex.quote(sys.executable),
                   help="torchrun's command line, before --nproc-per-node")
    p.add_argument("--script", default=SCRIPT, help=argparse.SUPPRESS)  # tests: a stand-in
    p.add_argument("--link-script", default=LINK_SCRIPT, help=argparse.SUPPRESS)  # tests too
    p.add_argument("--visible", type=int, help=argparse.SUPPRESS)  # tests: GPUs there
    args = p.parse_args()
    args.routes = args.routes.split(",")
    if not args.routes or not set(args.routes) <= set(ROUTES):
        p.error("--routes: of %s" % ",".join(ROUTES))
    return args


def gpu_count():
    """Visible GPUs, asked of PyTorch in a child (this process stays CUDA-free)."""
    try:
        out = subprocess.run([sys.executable, "-c",
                              "import torch; print(torch.cuda.device_count())"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             timeout=120)
        return int(out.stdout.strip())
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return 0


def script_args(args, name, route, trace=False):
    """ddp_train.py's arguments; @route: native, lib or run (no --lib:
    umadv run's start-up hook brings umadv)."""
    out = os.path.join(args.out, name + "-rank{rank}")
    route_args = {"native": ["--native"], "lib": ["--lib", args.lib], "run": []}[route]
    if trace:
        route_args += ["--trace", out + ".umt"]
    return [args.script, "--model", args.model, "--batch", str(args.batch), "--iters",
            str(args.iters), "--json", out + ".json"] + route_args


def env_for(budget=None, policy=None):
    env = dict(os.environ)
    for knob in ("UMADV_BUDGET", "UMADV_POLICY", "UMADV_DEVICE"):
        env.pop(knob, None)
    if budget is not None:
        env["UMADV_BUDGET"] = budget
    if policy is not None:
        env["UMADV_POLICY"] = policy
    return env


def collect(args, name, procs, log_lines):
    """Wait for @procs; every rank's document (named NAME-rankR.json),
    or exit naming the failure."""
    failed = []
    for cmd, proc in procs:
        try:
            out, _ = proc.communicate(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # torchrun's workers too
            out, _ = proc.communicate()
            out += "\nbench: killed after %d s\n" % args.timeout
        log_lines.append("$ %s\n%s" % (" ".join(cmd), out))
        if proc.returncode != 0:
            failed.append("exit %d:\n%s" % (proc.returncode, out[-3000:]))
    with open(os.path.join(args.out, name + ".log"), "w") as log:
        log.write("".join(log_lines))
    if failed:
        sys.exit("bench: %s failed (%s)" % (name, "\n".join(failed)))
    docs = []
    for path in sorted(glob.glob(os.path.join(args.out, name + "-rank*.json"))):
        with open(path) as f:
            docs.append(json.load(f))
    return sorted(docs, key=lambda d: d["rank"])


def start(cmd, env):
    """Run @cmd, its stale documents removed first (a failed run leaves none)."""
    json_path = cmd[cmd.index("--json") + 1]
    for old in glob.glob(json_path.replace("{rank}", "*")):
        os.unlink(old)
    return cmd, subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, start_new_session=True)


def torchrun(args, name, n, route, env, trace=False):
    """One DDP job of @n ranks; each rank's document."""
    cmd = shlex.split(args.launcher) + ["--nproc-per-node", str(n)] + \
        script_args(args, name, route, trace)
    if route == "run":  # the knobs as umadv run's options, umadv-run(1)'s way
        cmd = [args.umadv, "run", "-q", "--budget", env.pop("UMADV_BUDGET"), "--policy",
               env.pop("UMADV_POLICY"), "--"] + cmd
    header = ["# UMADV_BUDGET=%s UMADV_POLICY=%s\n" % (env.get("UMADV_BUDGET", ""),
                                                       env.get("UMADV_POLICY", ""))]
    return collect(args, name, [start(cmd, env)], header)


def alone(args, name, route, env, count=1):
    """@count processes at once on GPU 0, without torchrun (no DDP)."""
    procs = []
    for k in range(count):
        cmd = [sys.executable] + script_args(args, "%s-%d" % (name, k), route)
        procs.append(start(cmd, env))
    header = ["# UMADV_BUDGET=%s, %d process(es) on GPU 0\n" % (env.get("UMADV_BUDGET", ""),
                                                                 count)]
    collect(args, name, procs, header)
    docs = []
    for k in range(count):
        with open(os.path.join(args.out, "%s-%d-rank0.json" % (name, k))) as f:
            docs.append(json.load(f))
    return docs


def summary(docs, batch):
    """The job's time is its slowest rank's."""
    ms = max(d["ms_per_iter"] for d in docs)
    return {"ms_per_iter": ms, "samples_per_s": len(docs) * batch * 1e3 / ms,
            "held_evictions": sum(d.get("held_evictions", 0) for d in docs),
            "hold_wait_ms": max(d.get("hold_wait_ms", 0) for d in docs),
            "profiles": max(d.get("profiles", 0) for d in docs), "ranks": docs}


def same_losses(docs, native):
    by_rank = {d["rank"]: d["losses"] for d in native}
    return all(by_rank.get(d["rank"]) == d["losses"] for d in docs)


def footprint(docs):
    return max(d["managed_peak"] for d in docs)


def link_share(args, n, suffix=""):
    """Per GPU 0..@n-1 (local rank k runs on GPU k): (H2D, D2H) rates while
    all @n copy at once over those alone (bench/link_share.py, its
    document DIR/link-N@suffix.json); 1 on 1 GPU."""
    if n == 1:
        return [(1.0, 1.0)]
    cmd = [sys.executable, args.link_script, "--gpus", ",".join(map(str, range(n)))]
    try:
        run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=args.timeout)
    except subprocess.TimeoutExpired:
        sys.exit("bench: %s: killed after %d s" % (" ".join(cmd), args.timeout))
    if run.returncode != 0:
        sys.exit("bench: %s failed (exit %d):\n%s" % (" ".join(cmd), run.returncode,
                                                      run.stdout[-3000:]))
    doc = json.loads(run.stdout.strip().splitlines()[-1])
    with open(os.path.join(args.out, "link-%d%s.json" % (n, suffix)), "w") as f:
        json.dump(doc, f)
    return [tuple(doc["together"][d][k] / doc["alone"][d][k] for d in ("h2d", "d2h"))
            for k in range(n)]


def rank_bounds(args, name, native, budget, share):
    """Each rank's physical bounds at @budget (ms; None where a step alone
    needs more): its footprint trace, its native DDP time; on its link
    alone, and on the link shared as @share (link_share's) says."""
    alone, shared = {}, {}
    for d in native:
        trace = os.path.join(args.out, "%s-rank%d.umt" % (name, d["rank"]))
        bounds = Bounds(trace, d["ms_per_iter"])
        alone[d["rank"]] = bounds.at(budget)["bound_ms"]
        shared[d["rank"]] = bounds.scaled(*share[d["local_rank"]]).at(budget)["bound_ms"]
    return alone, shared


def x_phys(result, bounds, key="x_phys"):
    """x physical bound, per rank and the job's (its time over the
    largest rank's bound), as @key."""
    for d in result["ranks"]:
        b = bounds.get(d["rank"])
        d[key] = d["ms_per_iter"] / b if b else None
    known = [b for b in bounds.values() if b]
    result[key.replace("x_phys", "bound_ms")] = max(known) if known else None
    result[key] = result["ms_per_iter"] / max(known) if known else None


def world(args, n, suffix=""):
    """Native, footprint and umadv plan runs (each route) on @n GPUs, their
    files named with @suffix (a repeat's)."""
    peak = footprint(torchrun(args, "fp-%d%s" % (n, suffix), n, "lib",
                              env_for(policy="oracle"), trace=True))
    budget = peak * args.pct // 100 >> 20 << 20
    per_rank = ",".join(["%dM" % (budget >> 20)] * n)
    native = torchrun(args, "native-%d%s" % (n, suffix), n, "native", env_for())
    share = link_share(args, n, suffix)
    bounds, shared = rank_bounds(args, "fp-%d%s" % (n, suffix), native, budget, share)
    row = {"gpus": n, "footprint": peak, "budget": budget, "budget_env": per_rank,
           "native": summary(native, args.batch), "bounds_ms": bounds,
           "shared_bounds_ms": shared, "link_share": share}
    for route in args.routes:
        plan = torchrun(args, "plan-%s-%d%s" % (route, n, suffix), n, route,
                        env_for(per_rank, "plan"))
        row[route] = summary(plan, args.batch)
        row[route]["identical"] = same_losses(plan, native)
        x_phys(row[route], bounds)
        x_phys(row[route], shared, "x_phys_shared")
    return row


def share(args):
    """Two processes on GPU 0, half the budget each, against one alone."""
    peak = footprint(alone(args, "share-fp", "lib", env_for(policy="oracle")))
    whole, half = peak >> 20 << 20, peak // 2 >> 20 << 20
    native = alone(args, "share-native", "native", env_for())[0]
    one = alone(args, "share-alone", "lib", env_for("%dM" % (whole >> 20), "plan"))[0]
    two = alone(args, "share-two", "lib", env_for("%dM" % (half >> 20), "plan"), count=2)
    rate = lambda d: args.batch * 1e3 / d["ms_per_iter"]  # noqa: E731
    return {"footprint": peak, "alone_budget": whole, "shared_budget": half,
            "native_ms": native["ms_per_iter"], "alone_ms": one["ms_per_iter"],
            "shared_ms": [d["ms_per_iter"] for d in two],
            "alone_samples_per_s": rate(one), "shared_samples_per_s": sum(map(rate, two)),
            "identical": all(d["losses"] == native["losses"] for d in [one] + two)}


def modes(args):
    return ("native",) + tuple(args.routes)


def scaling(args, rows):
    """ms at 1 GPU over ms at N, per mode (weak scaling: batch per rank);
    and, per route, x physical bound at N over that at 1 (the target)."""
    base = next((r for r in rows if r["gpus"] == 1), None)
    if base is None:
        return
    for r in rows:
        for mode in modes(args):
            r[mode]["efficiency"] = base[mode]["ms_per_iter"] / r[mode]["ms_per_iter"]
            if mode == "native" or not base[mode]["x_phys"]:
                continue
            for key in ("x_phys", "x_phys_shared"):  # on 1 GPU the two are one
                if r[mode][key]:
                    r[mode][key + "_vs_1"] = r[mode][key] / base[mode]["x_phys"]


def repeat_targets(args, repeats):
    """Per route and world size above 1: the target's ratio (x physical
    bound at N over that at 1, each bound) of every repeat, and their
    median."""
    out = []
    for i, row in enumerate(repeats[0]):
        for route in args.routes if row["gpus"] > 1 else ():
            for key, link in (("x_phys_vs_1", "its link alone"),
                              ("x_phys_shared_vs_1", "the link shared")):
                values = [each[i][route].get(key) for each in repeats]
                if None not in values:
                    out.append({"route": route, "gpus": row["gpus"], "bound": link,
                                "ratios": values, "median": statistics.median(values)})
    return out


def print_targets(targets, count):
    for t in targets:
        print("target over %d repeats, %s on %d GPUs, bound on %s: median x phys %.3f of its "
              "1-GPU ratio (%.3f-%.3f): %s" % (
                  count, t["route"], t["gpus"], t["bound"], t["median"], min(t["ratios"]),
                  max(t["ratios"]), "within 10%" if abs(t["median"] - 1) <= 0.10
                  else "outside 10%"))


def cell(value, fmt):
    return "-" if value is None else fmt % value


def print_tables(args, rows, shared):
    print("%s, batch %d per rank, umadv plan at %d%% of the footprint per rank "
          "(lib: the explicit allocator; run: umadv run -- torchrun)" % (
              args.model, args.batch, args.pct))
    print("%4s %-6s %9s %9s %9s %10s %6s %7s %9s %7s %9s %9s %14s %8s" % (
        "gpus", "mode", "budget", "footprnt", "ms", "samples/s", "eff", "x phys",
        "x phys/1", "x shrd", "x shrd/1", "losses", "held ev (ms)", "profiles"))
    for r in rows:
        for mode in modes(args):
            m = r[mode]
            print("%4d %-6s %8.2fG %8.2fG %9.1f %10.1f %6s %7s %9s %7s %9s %9s %14s %8s" % (
                r["gpus"], mode, r["budget"] / 2**30 if mode != "native" else 0,
                r["footprint"] / 2**30, m["ms_per_iter"], m["samples_per_s"],
                cell(m.get("efficiency"), "%.2f"), cell(m.get("x_phys"), "%.2f"),
                cell(m.get("x_phys_vs_1"), "%.3f"), cell(m.get("x_phys_shared"), "%.2f"),
                cell(m.get("x_phys_shared_vs_1"), "%.3f"),
                "-" if mode == "native" else ("identical" if m["identical"] else "DIFFER"),
                "-" if mode == "native" else "%d (%.1f)" % (m["held_evictions"],
                                                            m["hold_wait_ms"]),
                "-" if mode == "native" else m["profiles"]))
    for r in rows:
        for route in args.routes:
            for key, link in (("x_phys_vs_1", "its link alone"),
                              ("x_phys_shared_vs_1", "the link shared")):
                ratio = r[route].get(key)
                if r["gpus"] > 1 and ratio is not None:
                    print("target, %s on %d GPUs, bound on %s: x phys %.3f of its 1-GPU "
                          "ratio: %s" % (route, r["gpus"], link, ratio,
                                         "within 10%" if abs(ratio - 1) <= 0.10
                                         else "outside 10%"))
        share = r.get("link_share", [])
        if r["gpus"] > 1:
            print("link shared by %d GPUs: H2D x%s, D2H x%s of each alone (bench/link_share.py)"
                  % (r["gpus"], "/".join("%.2f" % s[0] for s in share),
                     "/".join("%.2f" % s[1] for s in share)))
    if shared is not None:
        s = shared
        print("share GPU 0: native alone %.1f ms; umadv alone (%.2fG) %.1f ms, %.1f samples/s;"
              " two at once (%.2fG each) %s ms, %.1f samples/s together; losses %s" % (
                  s["native_ms"], s["alone_budget"] / 2**30, s["alone_ms"],
                  s["alone_samples_per_s"], s["shared_budget"] / 2**30,
                  " and ".join("%.1f" % m for m in s["shared_ms"]),
                  s["shared_samples_per_s"], "identical" if s["identical"] else "DIFFER"))


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    sizes = [int(n) for n in args.gpus.split(",")]
    have = args.visible if args.visible is not None else (
        gpu_count() if max(sizes) > 1 else 1)
    skipped = [n for n in sizes if n > have]
    repeats = []
    for k in range(1, args.repeats + 1):  # 1, 2, 1, 2...: the machine's drift shared
        suffix = "" if k == 1 else "-r%d" % k
        repeats.append([world(args, n, suffix) for n in sizes if n <= have])
        scaling(args, repeats[-1])
    rows = repeats[0]
    shared = share(args) if args.share else None
    targets = repeat_targets(args, repeats) if args.repeats > 1 else None
    with open(os.path.join(args.out, "ddp.json"), "w") as f:
        json.dump({"config": vars(args), "rows": rows, "skipped_gpus": skipped,
                   "share": shared, "repeats": repeats if args.repeats > 1 else None,
                   "targets": targets}, f, indent=1)
    for k, each in enumerate(repeats):
        if args.repeats > 1:
            print("repeat %d of %d" % (k + 1, args.repeats))
        print_tables(args, each, shared if k == len(repeats) - 1 else None)
    if targets is not None:
        print_targets(targets, args.repeats)
    for n in skipped:
        print("%d GPUs: skipped, %d visible" % (n, have))
    bad = ["%d %s" % (r["gpus"], m) for each in repeats for r in each for m in args.routes
           if not r[m]["identical"]]
    if bad or (shared is not None and not shared["identical"]):
        sys.exit("bench: losses differ from native DDP's (GPUs and routes %s%s)" % (
            bad, ", share" if shared is not None and not shared["identical"] else ""))


if __name__ == "__main__":
    main()
