#!/usr/bin/env python3
"""Remake the seed corpus of the fuzz targets (fuzz/corpus/*) from the
shipped traces, trimmed to their first steps so that each seed plans in
milliseconds, and the reliability inputs of issue 9 (tests keep their own
copies; FOLDER below). Run from the source tree:
    python3 fuzz/make-corpus.py [RELIABILITY_FOLDER]
The output is deterministic; the corpus is committed."""
import os
import re
import sys
import zlib

TRACES = ["vgg16-bs256", "resnet50-bs256", "gpt2-bs8", "resnet-deep-1001",
          "h200-vgg16-bs64", "h200-resnet50-bs64", "h200-mlp16-bs32768"]


def seal(body):
    """Body lines ending in '\\n', then the checksum line umadv-trace(5) asks."""
    return body + "end crc32=%08x\n" % (zlib.crc32(body.encode()) & 0xffffffff)


def trim(text, keep_steps):
    """The first @keep_steps steps of a trace and the allocations they use,
    renumbered; alloc_step/free_step beyond the cut become '-'."""
    lines = text.splitlines()
    head, allocs, steps = [], [], []
    for line in lines:
        if line.startswith("alloc "):
            allocs.append(line)
        elif line.startswith("step "):
            if len(steps) == keep_steps:
                break
            steps.append([line])
        elif line.startswith("  a ") and steps:
            steps[-1].append(line)
        elif line.startswith("end "):
            break
        elif not allocs:
            head.append(line)
    used = sorted({int(re.search(r"alloc=(\d+)", a).group(1))
                   for s in steps for a in s[1:]})
    renum = {old: new for new, old in enumerate(used)}

    def fix_step_ref(m):
        return "%s=%s" % (m.group(1), m.group(2) if int(m.group(2)) < keep_steps else "-")

    out_allocs = []
    for old in used:
        line = re.sub(r"\bid=\d+", "id=%d" % renum[old], allocs[old], count=1)
        line = re.sub(r"\b(alloc_step|free_step)=(\d+)", fix_step_ref, line)
        out_allocs.append(line)
    out_steps = []
    naccesses = 0
    for s in steps:
        out_steps.append(s[0])
        for a in s[1:]:
            out_steps.append(re.sub(r"alloc=(\d+)",
                                    lambda m: "alloc=%d" % renum[int(m.group(1))], a, count=1))
            naccesses += 1
    hdr = []
    for line in head:
        if line.startswith("trace "):
            line = re.sub(r"allocs=\d+", "allocs=%d" % len(used), line)
            line = re.sub(r"steps=\d+", "steps=%d" % len(steps), line)
            line = re.sub(r"accesses=\d+", "accesses=%d" % naccesses, line)
        hdr.append(line)
    return seal("\n".join(hdr + out_allocs + out_steps) + "\n")


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def main():
    reliability = sys.argv[1] if len(sys.argv) > 1 else "../shared/reliability"
    seeds = {}
    for name in TRACES:
        with open("data/traces/%s.umt" % name) as f:
            text = f.read()
        for k in (4, 24):
            seeds["%s-%dsteps.umt" % (name, k)] = trim(text, k).encode()
    if os.path.isdir(reliability):
        for name in sorted(os.listdir(reliability)):
            with open(os.path.join(reliability, name), "rb") as f:
                data = f.read()
            if len(data) <= 16384:
                seeds["reliability-" + name] = data
    for name, data in sorted(seeds.items()):
        write("fuzz/corpus/trace/" + name, data)
        # plan: budget byte (half, a quarter, 1/128 of the peak), flags byte
        for budget, flags in ((63, 0), (31, 3), (0, 4 << 2)):
            write("fuzz/corpus/plan/%s-b%d-f%d" % (name, budget, flags),
                  bytes([budget, flags]) + data)
    cli = [
        "plan\n--budget\n50%", "plan\n-b\n8G,512M,1.5GiB,25%",
        "plan\n--budget=10M\n--policy\noracle,demand\n--json",
        "plan\n-b\n75%\n-p\nplan\n--ops\n--lookahead\n3\n-i\n1",
        "plan\n-b\n4M\n--host-placement\n--no-read-mostly",
        "plan\n-b\n1e300%", "plan\n-b\n0.5%,200%,16K", "plan\n--budget\n8",
        "report", "report\n-", "help\nplan", "help", "--version", "-h", "plann",
        "synth\nvgg16\n-o\n-\n-n\n2\n-s\n64K", "synth\nresnet-deep\n-s\n2M\n-n\n10000",
        "info\n-c", "topo\n--json\n--xml\nx.xml", "plan\n--", "plan\n-bb", "plan\n-xyz",
    ]
    for i, args in enumerate(cli):
        write("fuzz/corpus/cli/args-%02d" % i, args)
    sizes = ["8G", "512M", "1.5GiB", "1T", "0", "18446744073709551615", "1e30G", "-1K",
             "0x10M", "1.0000000000000001G", "16EiB", "nan", "inf", "4096", "2 M", "3k"]
    for i, size in enumerate(sizes):
        write("fuzz/corpus/cli/size-%02d" % i, "plan\n-b\n" + size)


if __name__ == "__main__":
    main()
