#!/usr/bin/env python3
"""A stand-in for bench/link_share.py in the tests of bench/ddp.py: the
document it prints, from made-up rates. Alone, every GPU copies 50 GB/s
to the GPU and 10 GB/s back; all at once, GPU k copies (0.9 - 0.1 k) as
much to the GPU and half as much back."""
import argparse
import json

p = argparse.ArgumentParser()
p.add_argument("--gpus")
gpus = [int(g) for g in p.parse_args().gpus.split(",")]
alone = {"h2d": [5e10] * len(gpus), "d2h": [1e10] * len(gpus), "duplex": [6e10] * len(gpus)}
together = {"h2d": [5e10 * (0.9 - 0.1 * k) for k in range(len(gpus))],
            "d2h": [5e9] * len(gpus), "duplex": [3e10] * len(gpus)}
print("a line of warnings, as PyTorch may print first")
print(json.dumps({"gpus": gpus, "alone": alone, "together": together}))
