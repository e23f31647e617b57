# Reports, as its import's error, the CPU scheduling policy its import (a build's) runs under:
# `kbv compile`'s outcome message carries it to the test.
import os

policies = {os.SCHED_OTHER: "SCHED_OTHER", os.SCHED_BATCH: "SCHED_BATCH", os.SCHED_IDLE: "SCHED_IDLE"}
raise RuntimeError("scheduling policy " + policies.get(os.sched_getscheduler(0), "other"))
