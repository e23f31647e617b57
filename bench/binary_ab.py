"""Two kbv binaries side by side: `kbv eval` of one candidate with each in turns (so that drift in
the machine falls on both alike), each command's wall, its record's wall and what lies outside the
record (the processes' start and exit: kbv's own, its zygote's), then the medians and the median
of the paired differences. For a change to kbv's own start or exit, A the binary before it, B after.
The candidate's build is made first and cached, so no run builds.

Usage: python3 bench/binary_ab.py KBV_A KBV_B PROBLEM CANDIDATE [--device cpu|cuda] [--runs N]
       [--protocol kernelbench|verified]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def evaluate(kbv, args, record):
    started = time.monotonic()
    done = subprocess.run([kbv, "eval", args.problem, args.candidate, "--device", args.device, "--protocol",
                           args.protocol, "--quiet", "--json", record],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"{kbv} eval failed ({done.returncode}):\n{done.stderr}")
    with open(record) as f:
        inside = json.load(f)["wall_seconds"]
    return {"wall": wall, "record": inside, "outside": wall - inside}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kbv_a")
    parser.add_argument("kbv_b")
    parser.add_argument("problem")
    parser.add_argument("candidate")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--protocol", default="kernelbench")
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()

    built = subprocess.run([args.kbv_b, "compile", "--device", args.device, args.candidate], capture_output=True, text=True)
    if built.returncode != 0:
        sys.exit("kbv compile failed:\n" + built.stdout + built.stderr)
    runs = {"A": [], "B": []}
    with tempfile.TemporaryDirectory() as scratch:
        record = os.path.join(scratch, "record.json")
        for i in range(args.runs):
            for side, kbv in (("A", args.kbv_a), ("B", args.kbv_b)) if i % 2 == 0 else (("B", args.kbv_b), ("A", args.kbv_a)):
                runs[side].append(evaluate(kbv, args, record))
                print(f"run {i + 1} {side}: " + " ".join(f"{k} {v:.3f}" for k, v in runs[side][-1].items()), file=sys.stderr)

    print(f"A {args.kbv_a}\nB {args.kbv_b}\n{args.runs} runs each, in turns, {args.device}, {args.protocol}")
    print(f"{'seconds (median)':<20}{'A':>10}{'B':>10}{'B - A, paired':>16}")
    for key in ("wall", "record", "outside"):
        a = [r[key] for r in runs["A"]]
        b = [r[key] for r in runs["B"]]
        paired = statistics.median(y - x for x, y in zip(a, b))
        print(f"{key:<20}{statistics.median(a):>10.3f}{statistics.median(b):>10.3f}{paired:>+16.3f}")


if __name__ == "__main__":
    main()
