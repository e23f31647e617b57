"""What the sandbox costs an evaluation: `kbv eval` of one candidate, --sandbox on and off in
turns (so that drift in the machine falls on both alike), its wall time and stages per run, the
median difference, the median of each pair's, and how long the worker took to enter its sandbox.
The candidate's build is made first for each side (a sandboxed build is published, one with the
sandbox off is made in place) and cached, so no run builds.

Usage: python3 bench/sandbox_cost.py KBV PROBLEM CANDIDATE [--device cpu|cuda] [--runs N]
       [--protocol kernelbench|verified] [--out FILE.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def evaluate(kbv, problem, candidate, device, protocol, sandbox, record):
    started = time.monotonic()
    done = subprocess.run([kbv, "eval", problem, candidate, "--device", device, "--protocol", protocol,
                           "--sandbox", sandbox, "--quiet", "--json", record],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"kbv eval --sandbox {sandbox} failed ({done.returncode}):\n{done.stderr}")
    with open(record) as f:
        return wall, json.load(f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kbv")
    parser.add_argument("problem")
    parser.add_argument("candidate")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--protocol", default="kernelbench")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--out")
    args = parser.parse_args()
    runs = {"on": [], "off": []}
    with tempfile.TemporaryDirectory() as scratch:
        record = os.path.join(scratch, "record.json")
        for sandbox in ("on", "off"):  # builds (the sandbox's published, the other in place), warms
            evaluate(args.kbv, args.problem, args.candidate, args.device, args.protocol, sandbox, record)
        for i in range(args.runs):
            for sandbox in ("on", "off") if i % 2 == 0 else ("off", "on"):
                wall, r = evaluate(args.kbv, args.problem, args.candidate, args.device, args.protocol, sandbox, record)
                runs[sandbox].append({"wall": wall, "verdict": r["verdict"], "stages": r["stage_seconds"],
                                      "setup": r["sandbox"].get("setup_seconds")})
    if args.out:
        with open(args.out, "w") as f:
            json.dump(runs, f, indent=1)
    stages = sorted({s for side in runs.values() for run in side for s in run["stages"]})
    print(f"{args.runs} runs each, {args.device}, {args.protocol}: {os.path.basename(args.candidate)}")
    print(f"{'':22s} {'on':>9s} {'off':>9s} {'on-off':>9s}   (median seconds)")
    for name in ["wall"] + stages:
        med = {side: statistics.median(run["wall"] if name == "wall" else run["stages"].get(name, 0.0) for run in runs[side])
               for side in runs}
        print(f"{name:22s} {med['on']:9.3f} {med['off']:9.3f} {med['on'] - med['off']:+9.3f}")
    # Each pair ran back to back: its difference leaves out the drift between pairs.
    paired = statistics.median(on["wall"] - off["wall"] for on, off in zip(runs["on"], runs["off"]))
    print(f"{'wall, paired':22s} {'':9s} {'':9s} {paired:+9.3f}   (median of each pair's difference)")
    setups = [run["setup"] for run in runs["on"] if run["setup"] is not None]
    if setups:
        print(f"entering the sandbox, in the candidate's worker beside the reference's start: median "
              f"{statistics.median(setups) * 1e3:.1f} ms, max {max(setups) * 1e3:.1f} ms")
    verdicts = {side: sorted({run["verdict"] for run in runs[side]}) for side in runs}
    print(f"verdicts: on {verdicts['on']}, off {verdicts['off']}")


if __name__ == "__main__":
    main()
