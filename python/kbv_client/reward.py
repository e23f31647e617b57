"""A record as the scalar an RL trainer wants (docs/serve.md, "Python client and reward").

pass:           correct + speed_weight * ln(speedup) / ln(max_speedup), the speedup over the
                protocol's baseline clipped to [1/max_speedup, max_speedup]: a pass lies in
                [correct - speed_weight, correct + speed_weight], rises with its speedup, and twice
                as fast adds what twice as slow takes away
incorrect:      incorrect
hack:           hack (a cheat caught: below any honest failure by default)
no_kernel:      no_kernel (correct and honest, but PyTorch's ops did the work: not a kernel)
compile_error, runtime_error, timeout, crash:  failed
unverifiable:   unverifiable (None by default: the problem checks no candidate, so the sample
                carries no signal and is best dropped)

The order a trainer needs holds for every config (RewardConfig refuses one that breaks it): a hack
below every honest failure, every honest failure below the slowest pass.
"""

import math
from dataclasses import dataclass
from typing import Optional

_FAILED = ("compile_error", "runtime_error", "timeout", "crash")


@dataclass(frozen=True)
class RewardConfig:
    correct: float = 1.0
    speed_weight: float = 0.5
    max_speedup: float = 10.0
    incorrect: float = 0.0
    hack: float = -1.0
    no_kernel: float = 0.0
    failed: float = 0.0
    unverifiable: Optional[float] = None

    def __post_init__(self):
        if not self.max_speedup > 1:
            raise ValueError(f"max_speedup must be above 1, got {self.max_speedup}")
        if not self.speed_weight >= 0:
            raise ValueError(f"speed_weight must not be negative, got {self.speed_weight}")
        slowest_pass = self.correct - self.speed_weight
        if not max(self.incorrect, self.failed, self.no_kernel) < slowest_pass:
            raise ValueError(f"the slowest pass ({slowest_pass}: correct - speed_weight) must score above incorrect "
                             f"({self.incorrect}), no_kernel ({self.no_kernel}) and failed ({self.failed})")
        if not self.hack < min(self.incorrect, self.failed, self.no_kernel):
            raise ValueError(f"hack ({self.hack}) must score below incorrect ({self.incorrect}), no_kernel "
                             f"({self.no_kernel}) and failed ({self.failed})")


def reward(answer, config=RewardConfig()):
    """The reward of kbv serve's answer (or of its `record`, or of a `kbv eval --json` record)."""
    record = answer.get("record", answer)
    verdict = record.get("verdict")
    if verdict == "pass":
        speedup = record.get("timing", {}).get("speedup")
        if speedup is None or not speedup > 0:
            return config.correct
        clipped = min(max(speedup, 1.0 / config.max_speedup), config.max_speedup)
        return config.correct + config.speed_weight * math.log(clipped) / math.log(config.max_speedup)
    if verdict == "incorrect":
        return config.incorrect
    if verdict == "hack":
        return config.hack
    if verdict == "no_kernel":
        return config.no_kernel
    if verdict in _FAILED:
        return config.failed
    if verdict == "unverifiable":
        return config.unverifiable
    raise ValueError("not a kbv record: verdict %r" % (verdict,))
