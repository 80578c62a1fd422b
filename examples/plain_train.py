#!/usr/bin/env python3
"""plain_train.py: PyTorch training with no umadv code, for `umadv run`.

A small convolutional network (torch.nn) trained with SGD and momentum on
synthetic images drawn on the GPU from a fixed seed (no host-side data
path to dominate the time): one batch per iteration, the loss of
each printed with its exact bits (float.hex), so that a run under
`umadv run -- python3 plain_train.py` can be compared with a plain run
line for line. cuDNN runs its deterministic algorithms and TF32 is off
(--tf32: cuDNN's convolutions in TF32, PyTorch's default and
examples/torch_train.py's, for timings to compare with it); either way
the bits depend on the data and the arithmetic alone.

    python3 plain_train.py [--iters N] [--batch N] [--width N] [--seed N]
                           [--model small|NAME] [--image-size N]
                           [--cudnn-benchmark] [--tf32] [--no-optimizer] [--memory]
--model NAME trains a torchvision classification model (resnet50, ...)
with 1000 classes at --image-size (default 224) instead of the small
network (32x32 images, 10 classes). Each iteration's wall time, the loss
read back included, goes to standard error ("iter N ms T"), so that
standard output stays comparable line for line.

--cudnn-benchmark turns cuDNN's autotuning on (cudnn.benchmark = True);
--no-optimizer updates the weights by hand (plain SGD under no_grad, no
torch.optim: a loop with no optimizer step); --memory calls
torch.cuda.empty_cache() after every iteration and prints, on standard
error, what torch.cuda's memory queries answer at the end.

Exit status: 0 done, 2 usage error, 77 no CUDA device (or no torch).
"""
import argparse
import sys
import time


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--iters", type=int, default=8, help="training iterations (default 8)")
    p.add_argument("--batch", type=int, default=32, help="images per batch (default 32)")
    p.add_argument("--width", type=int, default=32, help="channels of the first layer")
    p.add_argument("--seed", type=int, default=1, help="seed of the weights and data")
    p.add_argument("--cudnn-benchmark", action="store_true", help="cudnn.benchmark = True")
    p.add_argument("--tf32", action="store_true",
                   help="cuDNN convolutions in TF32 (cudnn.allow_tf32, PyTorch's default)")
    p.add_argument("--no-optimizer", action="store_true",
                   help="update the weights by hand (no torch.optim)")
    p.add_argument("--memory", action="store_true",
                   help="empty_cache every iteration; memory queries on stderr at the end")
    p.add_argument("--model", default="small",
                   help="small (the default network) or a torchvision classification model")
    p.add_argument("--image-size", type=int,
                   help="image side (default 32 for small, 224 for torchvision models)")
    args = p.parse_args()
    if args.iters < 1 or args.batch < 1 or args.width < 1:
        p.error("--iters, --batch and --width must be at least 1")
    if args.image_size is None:
        args.image_size = 32 if args.model == "small" else 224
    if args.image_size < 8:
        p.error("--image-size must be at least 8")
    return args


def model(nn, width, classes=10):
    return nn.Sequential(
        nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(width, 2 * width, 3, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(),
        nn.AdaptiveAvgPool2d(4), nn.Flatten(),
        nn.Linear(2 * width * 16, 128), nn.ReLU(),
        nn.Linear(128, classes))


def network(torch, args):
    """The network and its number of classes."""
    if args.model == "small":
        return model(torch.nn, args.width), 10
    try:
        import torchvision
        return getattr(torchvision.models, args.model)(num_classes=1000), 1000
    except (ImportError, AttributeError):
        sys.exit("plain_train: --model %s: not 'small' nor a torchvision model" % args.model)


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
    torch.backends.cudnn.allow_tf32 = args.tf32
    torch.manual_seed(args.seed)
    net, classes = network(torch, args)
    net = net.cuda()
    opt = None if args.no_optimizer else torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator(device="cuda").manual_seed(args.seed + 1)
    size = args.image_size
    for it in range(args.iters):
        start = time.perf_counter()
        x = torch.randn(args.batch, 3, size, size, generator=gen, device="cuda")
        y = torch.randint(0, classes, (args.batch,), generator=gen, device="cuda")
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
        print("iter %d ms %.3f" % (it, (time.perf_counter() - start) * 1e3), file=sys.stderr,
              flush=True)
        if args.memory:
            torch.cuda.empty_cache()
    if args.memory:
        report_memory(torch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
