"""Prints the demo's table: one row per example, both protocols side by side, and whether each
verdict is the one examples/manifest.tsv expects. Usage: demo_table.py MANIFEST OUT_DIR DEVICE"""
import csv
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def cell(record, expected):
    if record is None:
        return "(no record)", False
    verdict = record["verdict"]
    speedup = record.get("timing", {}).get("speedup")
    text = verdict + (f" {speedup:.2f}x" if speedup is not None else "")
    return text + ("" if verdict == expected else f" (expected {expected})"), verdict == expected


def main(manifest, out, device):
    rows, agree, total = [], 0, 0
    with open(manifest) as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if row["device"] != device:
                continue
            name = row["candidate"][: -len(".py")].replace("/", "_")
            cells = []
            for protocol in ("verified", "kernelbench"):
                text, ok = cell(load(os.path.join(out, f"{name}.{protocol}.json")), row[protocol])
                cells.append(text)
                agree, total = agree + ok, total + 1
            verified = load(os.path.join(out, f"{name}.verified.json")) or {}
            findings = ",".join(f["id"] for f in verified.get("findings", [])) or "-"
            memory = verified.get("memory", {}).get("peak_ratio")
            rows.append((row["problem"].split("/")[-1][:-3], row["candidate"].split("/")[-1][:-3], *cells,
                         f"{memory:.2f}" if memory is not None else "-", findings))
    header = ("problem", "candidate", "verified", "kernelbench", "peak mem", "findings")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    for line in [header] + rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(line, widths)))
    print(f"\n{agree}/{total} verdicts as expected")
    return 0 if agree == total else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
