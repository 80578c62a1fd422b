"""What the benchmark scripts of this folder share."""
import bisect
import copy
import heapq
import math
import os
import re
import shlex
import signal
import subprocess
import sys


def link_model(trace):
    """fetch_bw and evict_bw (bytes/s) from a umadv-trace(5) file's link
    record: the link probe's measurements on the machine that recorded it."""
    with open(trace) as f:
        for line in f:
            if line.startswith("link "):
                fields = dict(kv.split("=", 1) for kv in line.split()[1:])
                return float(fields["fetch_bw"]), float(fields["evict_bw"])
    sys.exit("bench: no link record in " + trace)


def bound_ms(compute_ms, fetched, evicted, link):
    """DESIGN.md's lower bound of an iteration under a budget, in ms:
    max(compute, bytes fetched / fetch bw, bytes evicted / evict bw), with
    @link = (fetch_bw, evict_bw) in bytes/s."""
    fetch_bw, evict_bw = link
    return max(compute_ms, fetched / fetch_bw * 1e3, evicted / evict_bw * 1e3)


def command_line(argv, env_set=None):
    """@argv as a shell would take it, after the variables of @env_set
    (a dict; None: no change), quoted, through env(1): a variable set to
    None is one the command runs without ("env -u A B=1 prog --x 'a b'")."""
    env_set = env_set or {}
    unset = ["-u " + name for name in sorted(env_set) if env_set[name] is None]
    assign = ["%s=%s" % (name, shlex.quote(env_set[name])) for name in sorted(env_set)
              if env_set[name] is not None]
    words = ["env"] + unset + assign if env_set else []
    return " ".join(words + [shlex.quote(a) for a in argv])


def run_command(argv, log, env_set=None, timeout=None):
    """Run @argv in this process's environment changed by @env_set (see
    command_line), its standard output and error kept apart: JSON on
    standard output must not meet a warning. @log gets the command line,
    then both streams. Returns (exit status, stdout, stderr, command line);
    the status is None when it ran past @timeout seconds."""
    env = dict(os.environ)
    for name, value in (env_set or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    line = command_line(argv, env_set)
    try:
        proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=timeout)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = None, _text(e.stdout), _text(e.stderr) + "\n(timed out)\n"
    except OSError as e:
        rc, out, err = 127, "", "%s: %s\n" % (argv[0], e.strerror)
    with open(log, "w") as f:
        f.write("$ %s\n%s" % (line, out))
        if err:
            f.write("--- standard error\n%s" % err)
    return rc, out, err, line


def status_text(rc):
    """A run's end in words: "timed out" (None), "killed by SIGKILL" (a
    signal: the kernel's out-of-memory killer sends that one, and leaves
    nothing on standard error), or "exit N"."""
    if rc is None:
        return "timed out"
    if rc < 0:
        try:
            return "killed by %s" % signal.Signals(-rc).name
        except ValueError:
            return "killed by signal %d" % -rc
    return "exit %d" % rc


def last_error(err, width=160):
    """The last non-empty line of a failed run's standard error (a Python
    exception's message, say), at most @width characters: why it failed,
    in the table, where the log may not travel with it."""
    lines = [l.strip() for l in (err or "").splitlines() if l.strip()]
    if not lines:
        return ""
    return lines[-1] if len(lines[-1]) <= width else lines[-1][:width - 3] + "..."


def _text(data):
    """A TimeoutExpired's partial output: bytes, str or None."""
    if isinstance(data, bytes):
        return data.decode(errors="replace")
    return data or ""


# ---- the physical bound: the bytes a budget forces ------------------------

_FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


def _fields(line):
    return dict(_FIELD.findall(line))


def read_trace(path):
    """The parts of a umadv-trace(5) file the bound needs: section size,
    link record, allocations (size, alloc_step, free_step) and the steps
    of the trace's first iteration, each a list of (alloc, first, count,
    mode)."""
    trace = {"allocs": {}, "steps": [], "link": {}}
    first_iter, step = None, None
    with open(path) as f:
        for line in f:
            rec = line.split(None, 1)[0] if line.strip() else ""
            if rec == "trace":
                trace["section_size"] = int(_fields(line)["section_size"])
            elif rec == "link":
                trace["link"] = {k: float(v) for k, v in _fields(line).items()}
            elif rec == "alloc":
                a = _fields(line)
                trace["allocs"][int(a["id"])] = (
                    int(a["size"]), _step_ref(a.get("alloc_step")), _step_ref(a.get("free_step")))
            elif rec == "step":
                s = _fields(line)
                first_iter = int(s["iter"]) if first_iter is None else first_iter
                step = [] if int(s["iter"]) == first_iter else None
                if step is not None:
                    trace["steps"].append((int(s["id"]), step))
                    trace.setdefault("durations", []).append(int(s.get("dur_ns", 0)))
            elif rec == "a" and step is not None:
                a = _fields(line)
                step.append((int(a["alloc"]), int(a["first"]), int(a["count"]), a["mode"]))
    return trace


def _step_ref(value):
    return None if value in (None, "-") else int(value)


class _Residency:
    """Byte-granular Belady over one iteration replayed cyclically: see
    min_traffic."""

    def __init__(self, trace, budget):
        self.budget, self.ssize = budget, trace["section_size"]
        self.allocs = trace["allocs"]
        ids = [sid for sid, _ in trace["steps"]]
        self.n = len(ids)
        lo, hi = (ids[0], ids[-1]) if ids else (0, -1)
        # an allocation born or freed inside the iteration is transient:
        # born empty each replay, dead after its last use in it
        self.transient = {a for a, (_, born, dies) in self.allocs.items()
                          if (born is not None and lo <= born <= hi) or
                          (dies is not None and lo <= dies <= hi)}
        self.frees = {}
        for a, (_, _, dies) in self.allocs.items():
            if dies is not None and lo <= dies <= hi:
                self.frees.setdefault(dies - lo, []).append(a)
        self.touch = []  # per step: {section: mode}
        self.uses = {}   # section -> [(step, mode)]
        for j, (_, accesses) in enumerate(trace["steps"]):
            here = {}
            for alloc, first, count, mode in accesses:
                for idx in range(first, first + count):
                    old = here.get((alloc, idx), "")
                    here[(alloc, idx)] = "".join(sorted(set(old + mode)))
            self.touch.append(here)
            for s, mode in here.items():
                self.uses.setdefault(s, []).append((j, mode))
        self.resident, self.total = {}, 0.0

    def sections(self, alloc):
        count = -(-self.allocs[alloc][0] // self.ssize)
        return [(alloc, idx) for idx in range(count)]

    def size(self, s):
        alloc_size = self.allocs[s[0]][0]
        return float(min(self.ssize, alloc_size - s[1] * self.ssize))

    def next_read(self, s, j):
        """When the data of @s is next read after step @j (cyclically for
        a persistent allocation); None: its next use overwrites it, or it
        has none: it is dead."""
        uses = self.uses[s]
        k = bisect.bisect_right(uses, (j, "~"))
        if k < len(uses):
            step, mode = uses[k]
        elif s[0] in self.transient:
            return None
        else:
            step, mode = uses[0][0] + self.n, uses[0][1]
        return step if "r" in mode else None

    def make_room(self, need, pinned, heap, version):
        """Evict farthest next read first (the dead at no cost) until
        @need more bytes fit; the bytes of live data evicted, or None
        when the step alone does not fit."""
        evicted = 0.0
        while self.total + need > self.budget * (1 + 1e-12):
            if not heap:
                return None
            key, ver, s = heapq.heappop(heap)
            if version.get(s) != ver or s in pinned or s not in self.resident:
                continue
            amount = min(self.resident[s], self.total + need - self.budget)
            self.resident[s] -= amount
            self.total -= amount
            if key > -math.inf:
                evicted += amount
            if self.resident[s] > 0:
                heapq.heappush(heap, (key, ver, s))
            else:
                del self.resident[s]
        return evicted

    def replay(self, base, heap, version, seen):
        """One iteration, its steps at times @base + j: (bytes fetched,
        bytes evicted), None if refused. @seen: the transient sections
        written since they were born (the others hold nothing to fetch)."""
        fetched = evicted = 0.0
        for s in [s for s in self.resident if s[0] in self.transient]:
            self.total -= self.resident.pop(s)  # born again, empty
        seen.clear()
        for j, here in enumerate(self.touch):
            need = {s: self.size(s) - self.resident.get(s, 0.0) for s in here}
            out = self.make_room(sum(need.values()), here, heap, version)
            if out is None:
                return None
            evicted += out
            for s, mode in here.items():
                if "r" in mode and (s[0] not in self.transient or s in seen):
                    fetched += need[s]
                self.total += need[s]
                self.resident[s] = self.size(s)
                if s[0] in self.transient:
                    seen.add(s)
                version[s] = version.get(s, 0) + 1
                nxt = self.next_read(s, j)
                heapq.heappush(heap, (-(math.inf if nxt is None else base + nxt), version[s], s))
            for alloc in self.frees.get(j, ()):
                for s in self.sections(alloc):
                    self.total -= self.resident.pop(s, 0.0)
        return fetched, evicted


def min_traffic(trace, budget, passes=8):
    """The fewest bytes in and out per iteration that @budget bytes of
    GPU memory force on the first iteration of @trace (read_trace),
    replayed again and again: the optimal residency of the byte-granular
    relaxation (any byte may stay or go on its own; a section-granular
    residency, and so any plan, moves at least as much). Belady's rule,
    farthest next read first, is optimal for bytes of equal cost; data
    whose next use overwrites it, or that has none, is dead and dropped
    at no cost; data is fetched only for a step that reads it. Replayed
    from an empty GPU until an iteration moves what the one before moved
    (the steady state). Returns (fetched, evicted) bytes per iteration,
    or None when a step alone needs more than @budget."""
    r = _Residency(trace, budget)
    heap, version, seen, last = [], {}, set(), None
    for k in range(passes):
        moved = r.replay(k * r.n, heap, version, seen)
        if moved is None:
            return None
        if last is not None and abs(moved[0] - last[0]) <= 1 and abs(moved[1] - last[1]) <= 1:
            break
        last = moved
    return moved


def _live_intervals(uses):
    """(written, last read) step pairs of one section's data within the
    iteration, from its uses [(step, mode)] in step order: a write starts
    data (a read-write reads the old data first), reads extend it."""
    spans, start, last = [], None, None
    for step, mode in uses:
        if "r" in mode and start is not None:
            last = step
        if "w" in mode:
            if start is not None and last is not None:
                spans.append((start, last))
            start, last = step, None
    if start is not None and last is not None:
        spans.append((start, last))
    return spans


def _persistent_live(r):
    """Three per-step byte counts (difference arrays, n + 1 long) of the
    persistent data held across a step it is not used in (its next use,
    cyclic, reads it): all of it; the part not used before that step in
    the iteration (it may have been off since the iteration before); the
    part not read again after it in the iteration (it may come back in the
    next)."""
    held, unused_before, not_back = ([0.0] * (r.n + 1) for _ in range(3))

    def span(arr, lo, hi, size):  # steps lo..hi-1
        if lo < hi:
            arr[lo] += size
            arr[hi] -= size

    for s, uses in r.uses.items():
        if s[0] in r.transient:
            continue
        size, steps = r.size(s), [step for step, _ in uses]
        reads = ["r" in mode for _, mode in uses]
        if reads[0]:  # before the first use, and after the last (cyclic)
            span(held, 0, steps[0], size)
            span(unused_before, 0, steps[0], size)
            span(held, steps[-1] + 1, r.n, size)
            span(not_back, steps[-1] + 1, r.n, size)
        for k in range(1, len(steps)):
            if reads[k]:
                span(held, steps[k - 1] + 1, steps[k], size)
    return held, unused_before, not_back


def _cut_offloads(trace, budget):
    """Per step t, the fewest bytes (out, back) that must be off the GPU
    while t runs, beside t's own working set, less what the budget leaves
    for them: data of the iteration written before t and read after it
    (transient allocations) and persistent data held across t (weights,
    optimizer state). Of those bytes, @out at least were on the GPU
    earlier in the iteration, so left it after the iteration began (a
    persistent section unused before t may have been off since the
    iteration before), and @back at least are read again before the
    iteration ends (a persistent section whose next read is in the next
    iteration need not be). None when a step alone needs more."""
    r = _Residency(trace, budget)
    live = [0.0] * (r.n + 1)
    inside = {}
    for s, uses in r.uses.items():
        if s[0] not in r.transient:
            continue
        for w, last in _live_intervals(uses):
            if last - w > 1:
                live[w + 1] += r.size(s)
                live[last] -= r.size(s)
                inside.setdefault(s, []).append((w, last))
    held, unused_before, not_back = _persistent_live(r)
    out, acc, acc_held, acc_unused, acc_not_back = [], 0.0, 0.0, 0.0, 0.0
    for t, here in enumerate(r.touch):
        acc += live[t]
        acc_held += held[t]
        acc_unused += unused_before[t]
        acc_not_back += not_back[t]
        work = sum(r.size(s) for s in here)
        if work > budget:
            return None
        both = sum(r.size(s) for s in here
                   if any(w < t < last for w, last in inside.get(s, ())))
        must = acc + acc_held - both + work - budget
        out.append((max(0.0, must - acc_unused), max(0.0, must - acc_not_back)))
    return out


def cut_bound_ms(trace, budget, compute_ms, rates):
    """A stricter physical bound than max(compute, in / H2D, out / D2H),
    from two steps t1 <= t2: the bytes that must be off the GPU while t1
    runs (_cut_offloads) left it after the iteration began and before t1
    (OUT of them at least), those off while t2 runs come back after it and
    before the iteration ends (BACK at least), and the steps from t1 to t2
    run in between, so the iteration lasts at least max(OUT(t1) / D2H,
    compute before t1) + compute from t1 to t2 + max(BACK(t2) / H2D,
    compute after t2). The bound is the largest over such pairs (t1 = t2:
    one step's cut) and never below compute. Compute per step: the
    trace's step durations scaled to @compute_ms. In a network's forward
    and backward, the evictions and the fetches cannot overlap each other
    across the peak, which max(...) assumes, and the forward's evictions
    and the optimizer's fetches each have little compute to hide behind.
    None when a step alone needs more than @budget. @rates: (H2D, D2H)
    bytes per second."""
    offloads = _cut_offloads(trace, budget)
    if offloads is None:
        return None
    durations = trace.get("durations") or [1] * len(offloads)
    scale = compute_ms / 1e3 / max(sum(durations), 1)
    total = sum(durations) * scale
    # lead: the most, over t1 <= t, that OUT(t1) makes the time before t1
    # exceed its compute
    before, best, lead = 0.0, compute_ms / 1e3, 0.0
    for t, (out, back) in enumerate(offloads):
        lead = max(lead, out / rates[1] - before)
        here = durations[t] * scale
        after = total - before - here
        best = max(best, lead + before + here + max(back / rates[0], after))
        before += here
    return best * 1e3


class Bounds:
    """The physical bound at any memory, and the rates it uses."""

    def __init__(self, trace_path, compute_ms, pinned=None):
        """@pinned: (H2D, D2H) bytes/s given by the user (--pinned-gbps),
        else the trace's link probe's."""
        self.trace = read_trace(trace_path)
        link = self.trace["link"]
        self.uvm = (link["fetch_bw"], link["evict_bw"])
        if pinned is not None:
            self.pinned, self.rates = pinned, "pinned, --pinned-gbps"
        elif "stage_restore_bw" in link and "stage_evict_bw" in link:
            # the probe's staged channel: pinned copies each way, as measured
            self.pinned = (link["stage_restore_bw"], link["stage_evict_bw"])
            self.rates = "pinned: the link probe's staged channel"
        else:
            self.pinned, self.rates = self.uvm, "stand-in: the trace's UVM fetch and evict rates"
        self.compute_ms = compute_ms
        self.cache = {}
        self.traffic = {}  # budget -> min_traffic's answer, whatever the rates or compute

    def scaled(self, h2d, d2h):
        """The same bounds with the pinned rates scaled by @h2d and @d2h
        (a link other ranks share), the trace not read again."""
        other = copy.copy(self)
        other.pinned = (self.pinned[0] * h2d, self.pinned[1] * d2h)
        other.rates = "%s, scaled by %.3f and %.3f" % (self.rates, h2d, d2h)
        other.cache = {}
        return other

    def computing(self, compute_ms):
        """The same bounds over another compute time (native's in another
        round of runs); the fewest bytes per budget not found again."""
        other = copy.copy(self)
        other.compute_ms = compute_ms
        other.cache = {}
        return other

    def at(self, budget):
        """{"bound_ms", "min_in", "min_out", "cut_ms"} at @budget bytes;
        the bounds None when a step alone needs more."""
        if budget not in self.cache:
            if budget not in self.traffic:  # shared with scaled and computing copies
                self.traffic[budget] = min_traffic(self.trace, budget)
            moved = self.traffic[budget]
            if moved is None:
                self.cache[budget] = {"bound_ms": None, "min_in": None, "min_out": None,
                                      "cut_ms": None}
            else:
                phys = bound_ms(self.compute_ms, moved[0], moved[1], self.pinned)
                # both bounds hold (a step that fits for one fits for the other)
                cut = cut_bound_ms(self.trace, budget, self.compute_ms, self.pinned)
                self.cache[budget] = {"bound_ms": phys, "min_in": moved[0], "min_out": moved[1],
                                      "cut_ms": max(phys, cut)}
        return self.cache[budget]


def moved_bytes(run, uvm, staged):
    """Bytes one way per iteration of a torch_train.py --json run: its UVM
    migrations (@uvm: "fetched" or "evicted") and its pinned staging
    (@staged: "restored" or "staged"; a run without staging has none)."""
    return run[uvm + "_bytes_per_iter"] + run.get(staged + "_bytes_per_iter", 0)
