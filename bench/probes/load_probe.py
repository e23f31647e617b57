"""The verified speedup of the honest CPU examples on a quiet machine and beside a CPU hog, in turns.

For each honest CPU row of examples/manifest.tsv: `kbv eval --protocol verified` alternately quiet
and with HOGS busy-looping processes beside it (started just before the evaluation, killed just
after), RUNS times each; prints per candidate the median speedup quiet and loaded, their ratio, and
how many loaded runs' timing converged. What issue 49 asks of a speedup: within 10% of the quiet
figure on the same host, or flagged. Builds are made first (a first evaluation per candidate,
not counted).

Usage: python3 bench/probes/load_probe.py [--kbv build/kbv] [--hogs N] [--runs N]
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


def evaluate(kbv, problem, candidate, record, hogs):
    busy = [multiprocessing.Process(target=spin, daemon=True) for _ in range(hogs)]
    for process in busy:
        process.start()
    try:
        done = subprocess.run([kbv, "eval", problem, candidate, "--protocol", "verified", "--quiet", "--json", record],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    finally:
        for process in busy:
            process.kill()
            process.join()
    if done.returncode != 0:
        sys.exit(f"kbv eval {candidate} failed ({done.returncode}):\n{done.stderr}")
    with open(record) as f:
        timing = json.load(f)["timing"]
    converged = all(timing[side]["criterion"].get("converged", False) for side in ("baseline", "candidate"))
    return timing["speedup"], converged


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kbv", default=os.path.join(ROOT, "build", "kbv"))
    parser.add_argument("--hogs", type=int, default=os.cpu_count())
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, hog: {args.hogs} busy processes, "
          f"{args.runs} runs each way", file=sys.stderr)
    lines = [("candidate", "quiet", "loaded", "loaded/quiet", "loaded converged")]
    with tempfile.TemporaryDirectory() as scratch:
        record = os.path.join(scratch, "record.json")
        for problem, candidate in honest_cpu_rows():
            evaluate(args.kbv, problem, candidate, record, 0)  # its build, not counted
            quiet, loaded, converged = [], [], 0
            for _ in range(args.runs):
                quiet.append(evaluate(args.kbv, problem, candidate, record, 0)[0])
                speedup, ok = evaluate(args.kbv, problem, candidate, record, args.hogs)
                loaded.append(speedup)
                converged += ok
            q, l = statistics.median(quiet), statistics.median(loaded)
            lines.append((os.path.basename(os.path.dirname(candidate)), f"{q:.2f}x", f"{l:.2f}x", f"{l / q:.2f}",
                          f"{converged}/{args.runs}"))
            print(f"  {lines[-1][0]}: quiet {quiet}, loaded {loaded}", file=sys.stderr)
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    for line in lines:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())


if __name__ == "__main__":
    main()
