"""A client of kbv serve's HTTP/JSON API, standard library only."""

import http.client
import json
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

from kbv_client.errors import BadRequest, Busy, EvaluationFailed, KbvError, Unavailable

_FIELDS = ("problem", "problem_source", "problem_name", "level", "candidate_source", "protocol", "run", "sample")


def request_body(candidate_source, problem=None, problem_source=None, **fields):
    """POST /evaluate's body from evaluate's arguments; BadRequest for a field kbv serve has not."""
    request = dict(fields, candidate_source=candidate_source)
    if problem is not None:
        request["problem"] = str(problem)
    if problem_source is not None:
        request["problem_source"] = problem_source
    unknown = set(request) - set(_FIELDS)
    if unknown:
        raise BadRequest("unknown field(s): " + ", ".join(sorted(unknown)))
    return request


def evaluate_all(evaluate, requests, concurrency):
    """`evaluate(**request)` for each of `requests`, `concurrency` at a time: in order, each answer
    or the KbvError it ended in."""

    def one(request):
        try:
            return evaluate(**request)
        except KbvError as error:
            return error

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        return list(pool.map(one, requests))


class Client:
    """One kbv serve at `url` (e.g. "http://127.0.0.1:8470").

    A busy answer (503) is retried after its Retry-After, up to `busy_retries` times over at most
    `busy_patience` seconds; `timeout` bounds one evaluation's wait (an evaluation of a large problem
    that builds its kernel takes minutes).
    """

    def __init__(self, url, timeout=3600.0, busy_retries=1000, busy_patience=3600.0):
        self.url = url.rstrip("/")
        self._where = urllib.parse.urlsplit(self.url)
        if self._where.scheme != "http" or not self._where.hostname:
            raise ValueError("kbv serve's address is http://HOST:PORT, not %r" % url)
        self.timeout = timeout
        self.busy_retries = busy_retries
        self.busy_patience = busy_patience

    def health(self):
        return self._call("GET", "/health")

    def metrics(self):
        return self._call("GET", "/metrics")

    def evaluate(self, candidate_source, problem=None, problem_source=None, **fields):
        """The answer of one evaluation: {"id", "record", "stored", "admission_seconds", "queued_seconds",
        "evaluation_seconds", "service_seconds"} and, from this client, "attempts" (busy answers retried,
        plus one) and "client_seconds" (the answered attempt's round trip; kbv_client.latency splits it).

        Give the problem as `problem` (a file on the serving machine) or `problem_source` (its text,
        optionally with `problem_name` and `level`); `protocol`, `run`, `sample` as docs/serve.md has them.
        """
        request = request_body(candidate_source, problem, problem_source, **fields)
        waited_since = time.monotonic()
        for attempt in range(self.busy_retries + 1):
            try:
                sent = time.monotonic()
                answer = self._call("POST", "/evaluate", request)
                answer["attempts"] = attempt + 1
                answer["client_seconds"] = time.monotonic() - sent  # the answered attempt's round trip
                return answer
            except Busy as busy:
                pause = float(busy.answer.get("retry_after", 1.0))
                if attempt == self.busy_retries or time.monotonic() - waited_since + pause > self.busy_patience:
                    raise
                time.sleep(pause)
        raise AssertionError("unreachable")

    def evaluate_many(self, requests, concurrency=8):
        """Evaluates each dict of `requests` (evaluate's arguments) with `concurrency` at a time.

        Returns one entry per request, in order: its answer, or the KbvError it ended in.
        """
        return evaluate_all(self.evaluate, requests, concurrency)

    def _call(self, method, path, body=None):
        # http.client, not urllib: kbv serve speaks plain HTTP, and urllib's first requests (one per
        # thread that finds no opener yet) each load the system's TLS trust store (Python >= 3.12).
        data = None if body is None else json.dumps(body).encode()
        connection = http.client.HTTPConnection(self._where.hostname, self._where.port, timeout=self.timeout)
        try:
            connection.request(method, self._where.path + path, body=data, headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            status, retry_after, raw = response.status, response.getheader("Retry-After", "1"), response.read()
        except (OSError, http.client.HTTPException) as error:
            raise Unavailable("kbv serve at %s: %s" % (self.url, error)) from None
        finally:
            connection.close()
        try:
            answer = json.loads(raw)
        except ValueError:
            if status == 200:
                raise KbvError("kbv serve at %s answered 200 with no JSON" % self.url, status, {}) from None
            answer = {}
        if status == 200:
            return answer
        message = answer.get("error", "HTTP %d" % status)
        if status == 503:
            answer["retry_after"] = float(retry_after)
            raise Busy(message, status, answer)
        if status == 500 and "id" in answer:
            raise EvaluationFailed(message, status, answer)
        if 400 <= status < 500:
            raise BadRequest(message, status, answer)
        raise KbvError(message, status, answer)
