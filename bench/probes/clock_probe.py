"""Does a kernel's time depend on what the GPU did just before? On the H200 it does (docs/performance.md).

Usage (on the GPU machine): python3 bench/probes/clock_probe.py

Times a 4096^3 TF32 matmul (about 0.36 ms) 200 times in a row, each sample flushed and timed with
CUDA events around a device synchronize as kbv's verified timing does, after 2 s idle or 0.5 s of
back-to-back matmuls, with 0, 0.2 or 1 ms of host sleep between samples; prints the first and
last samples and the median of each series.
"""
import statistics
import time

import torch

torch.backends.cuda.matmul.allow_tf32 = True
a = torch.randn(4096, 4096, device="cuda")
b = torch.randn(4096, 4096, device="cuda")
flush = torch.empty(120 << 20, dtype=torch.uint8, device="cuda")  # twice the H200's L2
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)


def sample(gap):
    flush.zero_()
    start.record()
    torch.mm(a, b)
    torch.cuda.synchronize()
    end.record()
    end.synchronize()
    if gap:
        time.sleep(gap)
    return start.elapsed_time(end)


def series(name, gap, calls=200):
    xs = [sample(gap) for _ in range(calls)]
    print(f"{name}: first5 {[round(x, 3) for x in xs[:5]]} median {statistics.median(xs):.4f} min {min(xs):.4f} "
          f"max {max(xs):.4f} last5 {[round(x, 3) for x in xs[-5:]]}", flush=True)


def busy(seconds):
    begun = time.monotonic()
    while time.monotonic() - begun < seconds:
        torch.mm(a, b)
    torch.cuda.synchronize()


busy(0.01)
time.sleep(2)
series("after 2 s idle, gap 0", 0)
time.sleep(2)
series("after 2 s idle, gap 200us", 0.0002)
time.sleep(2)
series("after 2 s idle, gap 1ms", 0.001)
time.sleep(2)
busy(0.5)
series("after 0.5 s busy, gap 200us", 0.0002)
busy(0.5)
series("after 0.5 s busy, gap 0", 0)
