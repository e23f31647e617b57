"""How a thread's host work fares beside busy compilers, at their normal priority and at SCHED_IDLE.

Usage: python3 bench/probes/build_priority_probe.py [COMPILERS] [SECONDS]   (defaults: one per core, 5 s)

`kbv run` on the GPU times calls while candidates build on every core but two per lane. A timed
call's host side (its launch, the spin on its end) must get a core when it wants one and keep it;
a compiler at the normal priority shares the core by the scheduler's fairness, one at SCHED_IDLE
runs only where nothing else wants it. Per condition (no compilers, COMPILERS at the normal
priority, the same at SCHED_IDLE) this sleeps 1 ms over and over for SECONDS and, after each
wake-up, runs 200 us of pure-Python work (calibrated with no compilers: a launch's worth); it
prints the wake-up's lateness past the 1 ms and the work's wall time, median, p99 and max, in us.
The compilers are real: c++ -O2 on a translation unit of standard headers, in a loop.
"""
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

compilers = int(sys.argv[1]) if len(sys.argv) > 1 else os.cpu_count()
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
source = tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False)
source.write("#include <algorithm>\n#include <iostream>\n#include <map>\n#include <regex>\n#include <sstream>\n"
             "#include <unordered_map>\n#include <vector>\n"
             "int main() { std::regex r(\"a+b\"); std::map<int, std::vector<std::string>> m; "
             "std::unordered_map<std::string, double> u; std::ostringstream o; o << m.size() << u.size(); "
             "return std::regex_match(o.str(), r); }\n")
source.close()


def work(iterations):
    for _ in range(iterations):
        pass


def calibrate(target=200e-6):
    iterations = 1000
    while True:
        start = time.perf_counter()
        work(iterations)
        took = time.perf_counter() - start
        if took > 20e-3:
            return int(iterations * target / took)
        iterations *= 2


def figures(values):
    values.sort()
    return statistics.median(values), values[int(len(values) * 0.99)], values[-1]


def wake_and_work(iterations):
    late, busy = [], []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter()
        time.sleep(0.001)
        woke = time.perf_counter()
        work(iterations)
        late.append((woke - start - 0.001) * 1e6)
        busy.append((time.perf_counter() - woke) * 1e6)
    return figures(late), figures(busy), len(late)


def at_idle_priority():
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


iterations = calibrate()
print(f"{compilers} compilers on {os.cpu_count()} cores, {seconds:g} s per condition; in us")
print(f"{'compilers':18} {'wake-up lateness: median':>24} {'p99':>8} {'max':>9}   {'200 us of work: median':>22} "
      f"{'p99':>8} {'max':>9} {'wakes':>7}")
for label, priority in (("none", None), ("normal priority", False), ("SCHED_IDLE", True)):
    loops = []
    if priority is not None:
        for _ in range(compilers):
            loops.append(subprocess.Popen(
                ["sh", "-c", f"while :; do c++ -O2 -c {source.name} -o /dev/null; done"],
                preexec_fn=at_idle_priority if priority else None, start_new_session=True))
        time.sleep(1.0)  # every loop inside a compile
    late, busy, count = wake_and_work(iterations)
    for loop in loops:
        os.killpg(loop.pid, signal.SIGKILL)
        loop.wait()
    print(f"{label:18} {late[0]:24.1f} {late[1]:8.1f} {late[2]:9.1f}   {busy[0]:22.1f} {busy[1]:8.1f} {busy[2]:9.1f} {count:7}")
os.unlink(source.name)
