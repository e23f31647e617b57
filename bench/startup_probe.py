"""What a worker forked from kbv's zygote pays before it can run a candidate (docs/performance.md).

Usage (on the GPU machine): python3 bench/startup_probe.py [REPEATS]   (default 3)

Like the zygote, this process imports torch once and does not touch CUDA; each child it forks
times, in order: the fork itself (seen from the child's first line), CUDA's initialisation with
its context (`torch.cuda.init()` and a first allocation), a first tiny kernel, then a comparison
of two small float32 outputs (64 Ki elements) as the reference worker judges its later calls on
the device (float64 difference, max, RMS: kernels loaded lazily on their first call) and the same
on the host after `.cpu()`, each its first time and again. Prints a table of seconds last, the
median over REPEATS children.
"""
import json
import os
import statistics
import sys
import time

import torch

STEPS = ("fork", "cuda_init", "first_kernel", "device_compare_first", "device_compare_again",
         "host_compare_first", "host_compare_again")


def compare(x, r):
    """A scaled error as kbv computes it (max |x - r| over the reference's RMS), one .item()."""
    rd = r.double()
    rms = rd.square().mean().sqrt()
    return ((x.double() - rd).abs() / rms).max().item()


def child(write_fd, forked_at):
    seconds = {"fork": time.perf_counter() - forked_at}

    def step(name, action):
        begun = time.perf_counter()
        result = action()
        torch.cuda.synchronize()
        seconds[name] = time.perf_counter() - begun
        return result

    step("cuda_init", lambda: (torch.cuda.init(), torch.empty(1, device="cuda")))
    x = step("first_kernel", lambda: torch.ones(1 << 16, device="cuda"))
    r = x * 1.0001
    torch.cuda.synchronize()
    step("device_compare_first", lambda: compare(x, r))
    step("device_compare_again", lambda: compare(x, r))
    step("host_compare_first", lambda: compare(x.cpu(), r.cpu()))
    step("host_compare_again", lambda: compare(x.cpu(), r.cpu()))
    os.write(write_fd, json.dumps(seconds).encode())
    os._exit(0)


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    runs = []
    for _ in range(repeats):
        read_fd, write_fd = os.pipe()
        forked_at = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            child(write_fd, forked_at)
        os.close(write_fd)
        text = b""
        while chunk := os.read(read_fd, 4096):
            text += chunk
        os.close(read_fd)
        os.waitpid(pid, 0)
        runs.append(json.loads(text))
    print(f"forked children of a process that imported torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    print(f"{'step':24s} {'median (s)':>10s} {'min':>8s} {'max':>8s}")
    for name in STEPS:
        values = [run[name] for run in runs]
        print(f"{name:24s} {statistics.median(values):10.4f} {min(values):8.4f} {max(values):8.4f}")


if __name__ == "__main__":
    main()
