"""Client for `kbv serve` (docs/serve.md): evaluate candidates, concurrently, and map records to rewards."""

from kbv_client.client import Client
from kbv_client.errors import BadRequest, Busy, EvaluationFailed, KbvError, Unavailable
from kbv_client.reward import RewardConfig, reward

__all__ = ["Client", "KbvError", "BadRequest", "Busy", "EvaluationFailed", "Unavailable", "RewardConfig", "reward"]
