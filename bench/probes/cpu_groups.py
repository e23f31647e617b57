"""Groups of the CPUs this process may use, for probes that pin fresh processes to each group."""
import glob
import os


def cpu_groups():
    """The NUMA nodes' CPUs (those this process may use), else the two halves of them."""
    allowed = sorted(os.sched_getaffinity(0))
    nodes = []
    for path in sorted(glob.glob("/sys/devices/system/node/node*/cpulist")):
        cpus = set()
        for part in open(path).read().strip().split(","):
            low, _, high = part.partition("-")
            cpus.update(range(int(low), int(high or low) + 1))
        if cpus & set(allowed):
            nodes.append(sorted(cpus & set(allowed)))
    return nodes if len(nodes) > 1 else [allowed[: len(allowed) // 2], allowed[len(allowed) // 2:]]


def label(group):
    """"0-7" for a run of CPUs, else the list."""
    return f"{group[0]}-{group[-1]}" if group == list(range(group[0], group[-1] + 1)) else ",".join(map(str, group))


def pinned_to(group):
    """A preexec_fn for subprocess: the child runs on `group` from its first instruction."""
    return lambda: os.sched_setaffinity(0, group)
