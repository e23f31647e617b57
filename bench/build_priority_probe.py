"""How late a sleeping thread wakes beside busy compilers, at their normal priority and at SCHED_IDLE.

Usage: python3 bench/build_priority_probe.py [COMPILERS] [SECONDS]   (defaults: one per core, 5 s)

`kbv run` on the GPU times calls while candidates build on every core but two per lane. A timed
call's host side (its launch, the spin on its end) must get a core when it wants one; a compiler
at the normal priority holds it for up to a scheduler slice (milliseconds), one at SCHED_IDLE
gives it up at once. Per condition (no compilers, COMPILERS at the normal priority, the same at
SCHED_IDLE) this sleeps 1 ms over and over for SECONDS and prints the wake-up's lateness past
the 1 ms, median, p99 and max, in us. The compilers are real: c++ -O2 on a translation unit of
standard headers, in a loop.
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


def lateness_us():
    late = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter()
        time.sleep(0.001)
        late.append((time.perf_counter() - start - 0.001) * 1e6)
    late.sort()
    return statistics.median(late), late[int(len(late) * 0.99)], late[-1], len(late)


def at_idle_priority():
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


print(f"{compilers} compilers on {os.cpu_count()} cores, {seconds:g} s per condition; wake-up lateness in us")
print(f"{'compilers':24} {'median':>8} {'p99':>8} {'max':>9} {'wakes':>7}")
for label, priority in (("none", None), ("normal priority", False), ("SCHED_IDLE", True)):
    loops = []
    if priority is not None:
        for _ in range(compilers):
            loops.append(subprocess.Popen(
                ["sh", "-c", f"while :; do c++ -O2 -c {source.name} -o /dev/null; done"],
                preexec_fn=at_idle_priority if priority else None, start_new_session=True))
        time.sleep(1.0)  # every loop inside a compile
    median, p99, worst, count = lateness_us()
    for loop in loops:
        os.killpg(loop.pid, signal.SIGKILL)
        loop.wait()
    print(f"{label:24} {median:8.1f} {p99:8.1f} {worst:9.1f} {count:7}")
os.unlink(source.name)
