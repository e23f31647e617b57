#!/usr/bin/env python3
"""CPU time torch's OpenMP threads burn after each call, with and without OMP_WAIT_POLICY=passive.

Times torch.relu back to back on tensors of a few sizes, each call bracketed by the process's and
the main thread's CPU clocks, and prints per call: its wall time, its CPU time (all threads), and
the CPU time other threads spent between the calls (what kbv's timing ledger counts as work no
timer saw), under OpenMP's default wait policy and under passive, side by side in one run.
Usage: bench/probes/openmp_idle_probe.py [CALLS]   (the interpreter kbv embeds: scripts/python-env.sh)"""
import os
import subprocess
import sys
import time

CHILD = r"""
import time, torch
calls = int(__import__("sys").argv[1])
for n in (1 << 14, 1 << 18, 1 << 20, 1 << 22):
    x = torch.rand(n)
    torch.relu(x)
    wall = in_calls = main_in = 0.0
    p0, t0 = time.process_time(), time.thread_time()
    for _ in range(calls):
        p, t, w = time.process_time(), time.thread_time(), time.perf_counter()
        torch.relu(x)
        wall += time.perf_counter() - w
        in_calls += time.process_time() - p
        main_in += time.thread_time() - t
        end = time.perf_counter() + 0.001  # kbv's own steps between two calls, on the main thread
        while time.perf_counter() < end:
            pass
    total, main = time.process_time() - p0, time.thread_time() - t0
    untimed = total - in_calls - (main - main_in)
    print(f"{n}\t{wall / calls * 1e6:.1f}\t{in_calls / calls * 1e6:.1f}\t{untimed / calls * 1e6:.1f}")
"""


def run(policy, calls):
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    out = subprocess.run([sys.executable, "-c", CHILD, str(calls)], env=env, check=True, capture_output=True, text=True)
    return [line.split("\t") for line in out.stdout.splitlines()]


def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    import torch
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {calls} calls per size, "
          f"{time.strftime('%Y-%m-%d')}", file=sys.stderr)
    default, passive = run(None, calls), run("passive", calls)
    print("elements  | default: wall us  cpu us  untimed us | passive: wall us  cpu us  untimed us | untimed/cpu default  passive")
    for d, p in zip(default, passive):
        share = lambda row: float(row[3]) / max(float(row[2]), 1e-9)
        print(f"{d[0]:>9} | {d[1]:>15} {d[2]:>7} {d[3]:>10} | {p[1]:>15} {p[2]:>7} {p[3]:>10} | "
              f"{share(d):>18.2f} {share(p):>8.2f}")


if __name__ == "__main__":
    main()
