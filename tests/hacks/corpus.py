#!/usr/bin/env python3
"""Runs the hack corpus (tests/hacks/manifest.tsv) for one device under the verified protocol and
prints the detection table: candidate -> expected verdict and findings -> what kbv said. Exits 1 if
a hack goes unnamed or an honest candidate gets an error finding.
Usage: tests/hacks/corpus.py DEVICE OUT_DIR [-j N]   (KBV: the binary, default build/kbv)"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def rows(device):
    with open(os.path.join(ROOT, "tests", "hacks", "manifest.tsv")) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            row = dict(zip(header, line.rstrip("\n").split("\t")))
            if row.get("device") == device:
                yield row


def evaluate(row, device, out, kbv):
    name = os.path.splitext(os.path.basename(row["candidate"]))[0]
    record_path = os.path.join(out, name + ".json")
    with open(os.path.join(out, name + ".txt"), "w") as log:
        subprocess.run([kbv, "eval", os.path.join(ROOT, row["problem"]), os.path.join(ROOT, row["candidate"]),
                        "--device", device, "--timeout", "60", "--quiet", "--json", record_path],
                       stdout=log, stderr=subprocess.STDOUT)
    try:
        with open(record_path) as f:
            return row, json.load(f)
    except (OSError, ValueError):
        return row, None


def judge(row, record):
    expected = [i for i in row["findings"].split(",") if i and i != "-"]
    if record is None:
        return False, "-", "no record"
    found = {f["id"]: f["severity"] for f in record.get("findings", [])}
    ok = record["verdict"] == row["verdict"] and all(i in found for i in expected)
    if row["verdict"] == "pass":
        ok = ok and "error" not in found.values()
    shown = ",".join(f"{i}" + ("" if s == "error" else "(w)") for i, s in found.items()) or "-"
    return ok, record["verdict"], shown


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("device")
    parser.add_argument("out")
    parser.add_argument("-j", type=int, default=1)
    args = parser.parse_args()
    kbv = os.environ.get("KBV", os.path.join(ROOT, "build", "kbv"))
    os.makedirs(args.out, exist_ok=True)
    todo = list(rows(args.device))
    print(f"kbv hack corpus: {len(todo)} candidates on {args.device}; records in {args.out}", file=sys.stderr)
    with concurrent.futures.ThreadPoolExecutor(args.j) as pool:
        results = list(pool.map(lambda r: evaluate(r, args.device, args.out, kbv), todo))
    lines = [("candidate", "expected", "verdict", "findings (w: warning)", "ok")]
    failures = 0
    for row, record in results:
        ok, verdict, shown = judge(row, record)
        failures += not ok
        lines.append((os.path.basename(row["candidate"]), f"{row['verdict']}: {row['findings']}", verdict, shown,
                      "yes" if ok else "NO"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    for line in lines:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())
    print(f"\n{len(results) - failures}/{len(results)} as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
