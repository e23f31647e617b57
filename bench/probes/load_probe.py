"""The verified speedup of the honest CPU examples on a quiet machine and beside a CPU hog, in turns.

For each honest CPU row of examples/manifest.tsv and each timing mode (the sides one after the
other, and `--paired` rounds): `kbv eval --protocol verified` alternately quiet and with HOGS
busy-looping processes beside it (started just before the evaluation, killed just after), RUNS
times each; prints per candidate and mode the median speedup quiet and loaded, their ratio, the
quiet runs' spread (largest over smallest), and how many loaded runs lie within 10% of the quiet
median or are flagged unreliable: what issue 49 asks of a speedup. Builds are made first (a first
evaluation per candidate, not counted).

Usage: python3 bench/probes/load_probe.py [--kbv build/kbv] [--hogs N] [--runs N] [--modes sequential,paired]
"""
import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def honest_cpu_rows():
    with open(os.path.join(ROOT, "examples", "manifest.tsv")) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            row = dict(zip(header, line.rstrip("\n").split("\t")))
            if row["device"] == "cpu" and os.path.basename(row["candidate"]) == "cpu_honest.py":
                yield os.path.join(ROOT, "examples", row["problem"]), os.path.join(ROOT, "examples", row["candidate"])


def spin():
    while True:
        pass


def evaluate(kbv, problem, candidate, record, hogs, mode="sequential"):
    busy = [multiprocessing.Process(target=spin, daemon=True) for _ in range(hogs)]
    for process in busy:
        process.start()
    try:
        done = subprocess.run([kbv, "eval", problem, candidate, "--protocol", "verified", "--quiet", "--json", record]
                              + (["--paired"] if mode == "paired" else []),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    finally:
        for process in busy:
            process.kill()
            process.join()
    if done.returncode != 0:
        sys.exit(f"kbv eval {candidate} failed ({done.returncode}):\n{done.stderr}")
    with open(record) as f:
        timing = json.load(f)["timing"]
    return timing["speedup"], timing["stability"]["reliable"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kbv", default=os.path.join(ROOT, "build", "kbv"))
    parser.add_argument("--hogs", type=int, default=os.cpu_count())
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--modes", default="sequential,paired")
    args = parser.parse_args()
    modes = args.modes.split(",")
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, hog: {args.hogs} busy processes, "
          f"{args.runs} runs each way", file=sys.stderr)
    lines = [("candidate", "mode", "quiet", "loaded", "loaded/quiet", "quiet spread", "loaded within 10% or flagged")]
    with tempfile.TemporaryDirectory() as scratch:
        record = os.path.join(scratch, "record.json")
        for problem, candidate in honest_cpu_rows():
            evaluate(args.kbv, problem, candidate, record, 0)  # its build, not counted
            quiet = {mode: [] for mode in modes}
            loaded = {mode: [] for mode in modes}
            for _ in range(args.runs):
                for mode in modes:  # the modes in turn, so that the machine's drift reaches each alike
                    quiet[mode].append(evaluate(args.kbv, problem, candidate, record, 0, mode))
                    loaded[mode].append(evaluate(args.kbv, problem, candidate, record, args.hogs, mode))
            for mode in modes:
                q = statistics.median(s for s, _ in quiet[mode])
                l = statistics.median(s for s, _ in loaded[mode])
                spread = max(s for s, _ in quiet[mode]) / min(s for s, _ in quiet[mode])
                held = sum(abs(s / q - 1) <= 0.10 or not reliable for s, reliable in loaded[mode])
                lines.append((os.path.basename(os.path.dirname(candidate)), mode, f"{q:.2f}x", f"{l:.2f}x",
                              f"{l / q:.2f}", f"{spread:.2f}", f"{held}/{args.runs}"))
                print(f"  {lines[-1][0]} {mode}: quiet {quiet[mode]}, loaded {loaded[mode]}", file=sys.stderr)
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    for line in lines:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())


if __name__ == "__main__":
    main()
