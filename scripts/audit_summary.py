"""`kbv audit --json` files summed up per finding, as docs/kernelbench.md shows them: for each
finding how many problems show it, how many the verified protocol cures, and which problems
(L{level}/{id}); the problems on which `verified` scores no candidate (unverifiable), with why;
those not audited, with the error; seconds per problem by level.

Usage: python3 scripts/audit_summary.py AUDIT.json...
"""
import json
import statistics
import sys
from collections import defaultdict


def label(problem):
    level, number = problem.get("level"), problem.get("number")
    name = f"{number}_{problem['name']}" if number is not None else problem["name"]
    return f"L{level}/{number}" if level is not None and number is not None else name


def unverifiable_reason(problem):
    """Why `verified` would mark every candidate on this problem unverifiable, or None."""
    for finding in problem["findings"]:
        if finding["id"] == "stochastic_reference":
            worst = max(d["scaled_error"] for d in finding["evidence"]["repeats_differ"])
            return f"stochastic_reference (repeats differ by up to {worst:.1e})"
        if finding["id"] == "out_of_domain_families" and "verified" in finding["evidence"]:
            families = ", ".join(f"{f['family']}: {f['why']}" for f in finding["evidence"]["families"])
            return f"out_of_domain_families ({families})"
    return None


def main(paths):
    problems = []
    for path in paths:
        with open(path) as f:
            problems.extend(json.load(f))
    problems.sort(key=lambda p: (p.get("level") or 0, p.get("number") or 0, p["problem"]))
    audited = [p for p in problems if "error" not in p]

    print(f"{len(problems)} problems: {len(audited)} audited, {len(problems) - len(audited)} not audited")
    by_finding = defaultdict(list)
    for p in audited:
        for finding in p["findings"]:
            by_finding[finding["id"]].append((label(p), finding["cured_by_verified"]))
    clean = sum(not p["findings"] for p in audited)
    print(f"clean: {clean}")
    print(f"\n{'finding':24} {'problems':>8} {'cured':>6}  which (* = not cured by verified)")
    for finding, rows in sorted(by_finding.items(), key=lambda kv: -len(kv[1])):
        which = " ".join(name + ("" if cured else "*") for name, cured in rows)
        print(f"{finding:24} {len(rows):8} {sum(c for _, c in rows):6}  {which}")

    print("\nunverifiable under verified (no candidate scored):")
    for p in audited:
        reason = unverifiable_reason(p)
        if reason:
            print(f"  {label(p)} {p['name']}: {reason}")

    print("\nnot audited:")
    for p in problems:
        if "error" in p:
            print(f"  {label(p)} {p['name']}: {p['error'].splitlines()[0][:160]}")

    print(f"\n{'level':6} {'problems':>8} {'median s':>9} {'max s':>7} {'total s':>8}")
    by_level = defaultdict(list)
    for p in problems:
        by_level[p.get("level")].append(p["seconds"])
    for level, seconds in sorted(by_level.items(), key=lambda kv: kv[0] or 0):
        print(f"{str(level):6} {len(seconds):8} {statistics.median(seconds):9.1f} {max(seconds):7.1f} {sum(seconds):8.0f}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
