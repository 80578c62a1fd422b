#!/usr/bin/env python3
"""plain_train.py: PyTorch training with no umadv code, for `umadv run`.

A small convolutional network (torch.nn) trained with SGD and momentum on
synthetic images from a fixed seed: one batch per iteration, the loss of
each printed with its exact bits (float.hex), so that a run under
`umadv run -- python3 plain_train.py` can be compared with a plain run
line for line. cuDNN runs its deterministic algorithms and TF32 is off:
the bits depend on the data and the arithmetic alone.

    python3 plain_train.py [--iters N] [--batch N] [--width N] [--seed N]
                           [--cudnn-benchmark] [--no-optimizer] [--memory]

--cudnn-benchmark turns cuDNN's autotuning on (cudnn.benchmark = True);
--no-optimizer updates the weights by hand (plain SGD under no_grad, no
torch.optim: a loop with no optimizer step); --memory calls
torch.cuda.empty_cache() after every iteration and prints, on standard
error, what torch.cuda's memory queries answer at the end.

Exit status: 0 done, 2 usage error, 77 no CUDA device (or no torch).
"""
import argparse
import sys


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--iters", type=int, default=8, help="training iterations (default 8)")
    p.add_argument("--batch", type=int, default=32, help="images per batch (default 32)")
    p.add_argument("--width", type=int, default=32, help="channels of the first layer")
    p.add_argument("--seed", type=int, default=1, help="seed of the weights and data")
    p.add_argument("--cudnn-benchmark", action="store_true", help="cudnn.benchmark = True")
    p.add_argument("--no-optimizer", action="store_true",
                   help="update the weights by hand (no torch.optim)")
    p.add_argument("--memory", action="store_true",
                   help="empty_cache every iteration; memory queries on stderr at the end")
    args = p.parse_args()
    if args.iters < 1 or args.batch < 1 or args.width < 1:
        p.error("--iters, --batch and --width must be at least 1")
    return args


def model(nn, width, classes=10):
    return nn.Sequential(
        nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(width, 2 * width, 3, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(),
        nn.AdaptiveAvgPool2d(4), nn.Flatten(),
        nn.Linear(2 * width * 16, 128), nn.ReLU(),
        nn.Linear(128, classes))


def sgd_by_hand(torch, net, lr):
    """What torch.optim.SGD without momentum does, with no optimizer."""
    with torch.no_grad():
        for p in net.parameters():
            p -= lr * p.grad
            p.grad = None


def report_memory(torch):
    stats = torch.cuda.memory_stats()
    print("memory: allocated %d reserved %d peak %d stats %d cudnn.benchmark %s" % (
        torch.cuda.memory_allocated(), torch.cuda.memory_reserved(),
        torch.cuda.max_memory_allocated(), len(stats), torch.backends.cudnn.benchmark),
        file=sys.stderr)


def main():
    args = parse()
    try:
        import torch
    except ImportError:
        print("plain_train: no torch", file=sys.stderr)
        return 77
    if not torch.cuda.is_available():
        print("plain_train: no CUDA device", file=sys.stderr)
        return 77
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(args.seed)
    net = model(torch.nn, args.width).cuda()
    opt = None if args.no_optimizer else torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator(device="cpu").manual_seed(args.seed + 1)
    images = torch.randn(args.batch * args.iters, 3, 32, 32, generator=gen)
    labels = torch.randint(0, 10, (args.batch * args.iters,), generator=gen)
    for it in range(args.iters):
        lo, hi = it * args.batch, (it + 1) * args.batch
        x, y = images[lo:hi].cuda(), labels[lo:hi].cuda()
        if opt is not None:
            opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        if opt is None:
            sgd_by_hand(torch, net, 0.05)  # which leaves the grads unset
        else:
            opt.step()
        value = loss.item()
        print("iter %d loss %.9f %s" % (it, value, value.hex()), flush=True)
        if args.memory:
            torch.cuda.empty_cache()
    if args.memory:
        report_memory(torch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
