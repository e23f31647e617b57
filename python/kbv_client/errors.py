"""What a request to kbv serve can end in besides a record, one type per cause."""


class KbvError(Exception):
    """Any answer of kbv serve other than a record. `status`: the HTTP status (None: no answer)."""

    def __init__(self, message, status=None, answer=None):
        super().__init__(message)
        self.status = status
        self.answer = answer or {}


class BadRequest(KbvError):
    """400: the request cannot be evaluated as sent (fix the request, do not retry)."""


class Busy(KbvError):
    """503: the service holds all it may, or is stopping. Retried by the client up to its limit."""


class EvaluationFailed(KbvError):
    """500: the evaluation could not be carried out (the problem or the evaluator failed)."""


class Unavailable(KbvError):
    """No answer: the service cannot be reached, or the connection broke."""
