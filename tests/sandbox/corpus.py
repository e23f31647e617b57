#!/usr/bin/env python3
"""Runs the hostile corpus (tests/sandbox/manifest.tsv) on one device, as tests/e2e/sandbox_test.cpp
does in CI on the CPU, and prints a table: candidate -> expected verdict -> kbv's, and what was
looked for outside the sandbox (a loopback listener and an abstract Unix socket that must stay
silent, files that must not appear, processes that must be gone). Exits 1 when anything differs.
Usage: tests/sandbox/corpus.py DEVICE OUT_DIR   (KBV: the binary, default build/kbv)"""
import argparse
import json
import os
import socket
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CORPUS = os.path.join(ROOT, "tests", "sandbox")
PROBLEM = os.path.join(ROOT, "examples", "problems", "1_ReLU.py")
WRITTEN = "kbv-hostile-write"


def rows():
    with open(os.path.join(CORPUS, "manifest.tsv")) as f:
        header = f.readline().rstrip("\n").split("\t")
        return [dict(zip(header, line.rstrip("\n").split("\t"))) for line in f if line.strip()]


def processes_named(mark):
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if mark.encode() in f.read():
                    found.append(pid)
        except OSError:
            pass
    return found


def silent(listener):
    listener.setblocking(False)
    try:
        listener.accept()[0].close()
        return False
    except BlockingIOError:
        return True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("device")
    parser.add_argument("out")
    args = parser.parse_args()
    kbv = os.environ.get("KBV", os.path.join(ROOT, "build", "kbv"))
    out = os.path.abspath(args.out)
    cache = os.path.join(out, "cache")
    os.makedirs(os.path.join(cache, "extensions", "victim"), exist_ok=True)  # another candidate's builds
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    local = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    name = f"kbv-hostile-{os.getpid()}"
    local.bind("\0" + name)
    local.listen(8)
    mark = f"kbv-hostile-mark-{os.getpid()}"
    target = os.path.join(out, "root-only")  # root's file that link_build.py links to
    with open(target, "w") as f:
        f.write("root's\n")
    os.chmod(target, 0o600)
    env = dict(os.environ, KBV_CACHE=cache, KBV_HOSTILE_PORT=str(tcp.getsockname()[1]), KBV_HOSTILE_SOCKET=name,
               KBV_HOSTILE_MARK=mark, KBV_HOSTILE_TARGET=target, AWS_SECRET_ACCESS_KEY=f"kbv-hostile-secret-{os.getpid()}")

    lines = [("candidate", "expected", "verdict", "reason (end)", "ok")]
    failures = 0
    # remember.py twice over one cache: the second must find nothing the first left.
    for row in rows() + [dict(r, candidate="remember.py", again=True) for r in rows() if r["candidate"] == "remember.py"]:
        record_path = os.path.join(out, row["candidate"].replace(".py", "-again.json" if row.get("again") else ".json"))
        command = [kbv, "eval", PROBLEM, os.path.join(CORPUS, "candidates", row["candidate"]), "--device", args.device,
                   "--protocol", "kernelbench", "--timeout", "60", "--quiet", "--json", record_path]
        if row["limits"] != "-":
            command += ["--limit", row["limits"]]
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        try:
            with open(record_path) as f:
                record = json.load(f)
        except (OSError, ValueError):
            record = {"verdict": f"no record (exit {done.returncode})", "verdict_reason": done.stderr[-200:]}
        reason = record.get("verdict_reason", "")
        ok = done.returncode == 0 and record["verdict"] == row["verdict"] and (row["reason"] == "-" or row["reason"] in reason)
        log = record.get("logs", {}).get("candidate", "")
        if row["candidate"] == "read_others.py":
            ok = ok and "processes seen: 1" in log and record_path not in log
        if row["candidate"] == "socket_families.py":
            ok = ok and "hostile: opened" not in log and "hostile: vsock: EPERM" in log
        if row["candidate"] == "read_neighbours.py":
            ok = ok and "hostile: neighbours looked at" in log and "hostile: read " not in log
        if row["candidate"] == "environment.py":
            ok = ok and "AWS_SECRET_ACCESS_KEY nowhere" in log
        if row["candidate"] == "remember.py":
            ok = ok and "note from an earlier run: False" in log
        failures += not ok
        name = row["candidate"] + (" (again)" if row.get("again") else "")
        lines.append((name, row["verdict"], record["verdict"], reason.replace("\n", " ")[-90:], "yes" if ok else "NO"))

    home = os.path.expanduser("~")
    targets = ["/tmp", home, cache, os.path.join(cache, "extensions"), os.path.join(cache, "extensions", "victim"),
               os.path.join(cache, "pch"),
               os.path.join(cache, "pycache"), "/dev/shm", "/var/tmp", os.path.join(CORPUS, "candidates"),
               os.path.dirname(PROBLEM)]
    outside = [("loopback listener silent", silent(tcp)), ("abstract socket silent", silent(local))]
    outside += [(f"no {WRITTEN} in {t}", not os.path.exists(os.path.join(t, WRITTEN))) for t in targets]
    outside += [("no daemon or bomb process left", not processes_named(mark))]
    size, links = 0, []
    for folder, dirs, files in os.walk(cache):
        for f in files + dirs:
            path = os.path.join(folder, f)
            if os.path.islink(path):
                links.append(path)
            elif f in files and os.path.isfile(path):
                size += os.path.getsize(path)
    facts = os.stat(target)
    outside += [(f"kbv's cache under 32 MiB ({size >> 20} MiB): the build hog's files stayed in its folder", size < 32 << 20),
                ("no link in kbv's cache", not links),
                ("root's file untouched by the build folder's links", (facts.st_mode & 0o7777, facts.st_uid) == (0o600, 0))]
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    for line in lines:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())
    print()
    for what, held in outside:
        failures += not held
        print(f"{'yes' if held else 'NO '}  {what}")
    print(f"\n{len(lines) - 1} hostile candidates on {args.device}; {failures} not as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
