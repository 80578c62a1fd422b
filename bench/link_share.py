#!/usr/bin/env python3
"""Pinned copy rates of each GPU alone and of all of them at once.

For the GPU machine. GPUs of one host reach host memory through links and
a memory controller they may share, so a rank of an N-GPU job can move
fewer bytes a second than a process alone on one GPU. Per GPU, the rate
of pinned-host-to-device copies (h2d), device-to-pinned-host copies (d2h)
and both at once on two streams (duplex, the two directions summed):
first with the GPU alone, then with every GPU copying the same way at the
same moment (one thread per GPU, started together). bench/ddp.py scales
each rank's probed rates by together over alone for the physical bound of
an N-GPU job.

  bench/link_share.py [--gpus 0,1] [--mib 1024] [--reps 8]

Prints one JSON document: {"gpus": [...], "alone": {"h2d": [...], "d2h":
[...], "duplex": [...]}, "together": {...}}, rates in bytes/s, in the
order of --gpus.
"""
import argparse
import json
import threading
import time

import torch

DIRECTIONS = ("h2d", "d2h", "duplex")


class Buffers:
    """One GPU's pinned and device buffers, two of each (duplex), and its
    two streams."""

    def __init__(self, gpu, size):
        self.gpu = gpu
        self.host = [torch.empty(size, dtype=torch.uint8, pin_memory=True) for _ in range(2)]
        self.dev = [torch.empty(size, dtype=torch.uint8, device=gpu) for _ in range(2)]
        self.streams = [torch.cuda.Stream(device=gpu) for _ in range(2)]

    def copies(self, direction, reps):
        """Bytes a second of @reps copies @direction, from the first call
        to the last copy's end."""
        torch.cuda.synchronize(self.gpu)
        start = time.perf_counter()
        for _ in range(reps):
            if direction in ("h2d", "duplex"):
                with torch.cuda.stream(self.streams[0]):
                    self.dev[0].copy_(self.host[0], non_blocking=True)
            if direction in ("d2h", "duplex"):
                with torch.cuda.stream(self.streams[1]):
                    self.host[1].copy_(self.dev[1], non_blocking=True)
        for s in self.streams:
            s.synchronize()
        ways = 2 if direction == "duplex" else 1
        return ways * self.dev[0].numel() * reps / (time.perf_counter() - start)


def alone(buffers, direction, reps):
    """Each GPU in turn, the others idle; the second of two runs (the first
    warms the copy engines and the pages' mappings)."""
    out = []
    for b in buffers:
        b.copies(direction, 1)
        out.append(b.copies(direction, reps))
    return out


def together(buffers, direction, reps):
    """Every GPU at once: one thread each, released by one barrier."""
    rates = [0.0] * len(buffers)
    gate = threading.Barrier(len(buffers))

    def one(k):
        with torch.cuda.device(buffers[k].gpu):
            buffers[k].copies(direction, 1)
            gate.wait()
            rates[k] = buffers[k].copies(direction, reps)

    threads = [threading.Thread(target=one, args=(k,)) for k in range(len(buffers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return rates


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gpus", default="0,1", help="CUDA device indices")
    p.add_argument("--mib", type=int, default=1024, help="bytes of one copy, MiB")
    p.add_argument("--reps", type=int, default=8, help="copies a measurement")
    a = p.parse_args()
    gpus = [int(g) for g in a.gpus.split(",")]
    if len(gpus) > torch.cuda.device_count():
        p.error("--gpus %s: %d GPU(s) visible" % (a.gpus, torch.cuda.device_count()))
    buffers = [Buffers(g, a.mib << 20) for g in gpus]
    doc = {"gpus": gpus, "bytes": a.mib << 20, "reps": a.reps,
           "alone": {d: alone(buffers, d, a.reps) for d in DIRECTIONS},
           "together": {d: together(buffers, d, a.reps) for d in DIRECTIONS}}
    print(json.dumps(doc))


if __name__ == "__main__":
    main()
