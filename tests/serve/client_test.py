"""kbv_client (python/) against the real kbv serve on loopback: concurrent evaluations through a
queue too small for them (busy answers retried), typed errors, and the reward mapping."""

import math
import os
import re
import signal
import sqlite3
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

from kbv_client import BadRequest, Client, RewardConfig, Unavailable, reward
from kbv_client.latency import describe

BINARY = os.environ["KBV_BINARY"]
EXAMPLES = Path(os.environ["KBV_EXAMPLES_DIR"])
PROBLEM = EXAMPLES / "problems/1_ReLU.py"
HONEST = (EXAMPLES / "candidates/1_ReLU/cpu_honest.py").read_text()
IDENTITY = (EXAMPLES / "candidates/1_ReLU/cpu_identity.py").read_text()


class Served:
    """A kbv serve of its own per test class, holding QUEUE requests beyond the one it evaluates."""
    QUEUE = 1

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.db = Path(cls.dir.name) / "serve.sqlite"
        cls.log = open(Path(cls.dir.name) / "serve.log", "w+")
        cls.serve = subprocess.Popen([BINARY, "serve", "--port", "0", "--queue", str(cls.QUEUE), "--db", str(cls.db)],
                                     stdout=cls.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            cls.log.seek(0)
            found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", cls.log.read())
            if found:
                cls.client = Client(found.group(1))
                return
            time.sleep(0.1)
        cls.serve.kill()
        raise RuntimeError("kbv serve did not start")

    @classmethod
    def tearDownClass(cls):
        cls.serve.send_signal(signal.SIGTERM)
        cls.serve.wait(timeout=300)
        cls.log.close()
        cls.dir.cleanup()


class ServedTest(Served, unittest.TestCase):
    def test_concurrent_clients_through_a_full_queue_each_get_their_record(self):
        requests = [dict(problem=PROBLEM, candidate_source=HONEST, run="step-1", sample=i) for i in range(6)]
        requests += [dict(problem=PROBLEM, candidate_source=IDENTITY, run="step-1", sample=6),
                     dict(problem_source=PROBLEM.read_text(), problem_name="1_ReLU.py", level=1,
                          candidate_source=HONEST, run="step-1", sample=7)]
        answers = self.client.evaluate_many(requests, concurrency=8)
        for i, answer in enumerate(answers):
            self.assertIsInstance(answer, dict, answer)
            verdict = answer["record"]["verdict"]
            self.assertEqual(verdict, "incorrect" if i == 6 else "pass", answer["record"].get("verdict_reason"))
        # One lane, one request held: the others were answered busy and sent again.
        metrics = self.client.metrics()
        self.assertGreater(metrics["evaluations"]["refused_busy"], 0)
        self.assertGreater(max(a["attempts"] for a in answers), 1)
        with sqlite3.connect(self.db) as store:
            samples = store.execute("SELECT c.sample FROM records r JOIN candidates c ON c.id = r.candidate_id "
                                    "JOIN runs n ON n.id = c.run_id WHERE n.name = 'step-1'").fetchall()
        self.assertEqual(sorted(s for (s,) in samples), list(range(8)))
        # The rewards: a pass is worth about 1 (its speedup's log added), the identity "ReLU" 0.
        self.assertEqual(reward(answers[6]), 0.0)
        for answer in answers[:6]:
            speedup = answer["record"]["timing"]["speedup"]
            self.assertAlmostEqual(reward(answer), 1.0 + 0.5 * math.log(min(max(speedup, 0.1), 10.0)) / math.log(10.0))

    def test_a_request_that_cannot_be_evaluated_is_a_bad_request(self):
        with self.assertRaises(BadRequest) as raised:
            self.client.evaluate(HONEST, problem="/nonexistent/1_ReLU.py")
        self.assertEqual(raised.exception.status, 400)
        self.assertIn("no problem file", str(raised.exception))
        with self.assertRaises(BadRequest):
            self.client.evaluate(HONEST, problem=PROBLEM, protocol="fast")

    def test_health(self):
        self.assertEqual(self.client.health()["status"], "ok")


class LoadTest(Served, unittest.TestCase):
    """200 requests from 8 concurrent clients: each answered once, each one record."""
    QUEUE = 4

    def test_two_hundred_requests_from_eight_clients(self):
        count = 200
        requests = [dict(problem=PROBLEM, candidate_source=IDENTITY if i % 10 in (8, 9) else HONEST, run="load", sample=i,
                         protocol="kernelbench" if i % 2 else "verified") for i in range(count)]
        started = time.monotonic()
        answers = self.client.evaluate_many(requests, concurrency=8)
        wall = time.monotonic() - started
        self.assertTrue(all(isinstance(a, dict) for a in answers), [a for a in answers if not isinstance(a, dict)][:3])
        self.assertEqual(len({a["id"] for a in answers}), count)
        for i, answer in enumerate(answers):
            # The service's spans of a request lie within the client's round trip of it.
            spans = answer["admission_seconds"] + answer["queued_seconds"] + answer["evaluation_seconds"]
            self.assertLessEqual(spans, answer["service_seconds"], answer["id"])
            self.assertLessEqual(answer["service_seconds"], answer["client_seconds"], answer["id"])
            # The problem's own inputs are [0, 1), where the identity is ReLU: it passes kernelbench only.
            expected = "incorrect" if i % 10 == 8 else "pass"
            self.assertEqual(answer["record"]["verdict"], expected, (i, answer["record"].get("verdict_reason")))
        with sqlite3.connect(self.db) as store:
            rows = store.execute("SELECT c.sample, COUNT(*) FROM records r JOIN candidates c ON c.id = r.candidate_id "
                                 "JOIN runs n ON n.id = c.run_id WHERE n.name = 'load' GROUP BY c.sample").fetchall()
        self.assertEqual(sorted(rows), [(i, 1) for i in range(count)])
        metrics = self.client.metrics()
        self.assertEqual(metrics["lanes"][0]["warm_problems"], 2)  # one problem under two protocols
        # What the service adds to an evaluation, as its clients see it (measured, not asserted).
        print("\nkbv serve, %d requests from 8 clients on the CPU: %.1f s, %.1f evaluations/min, %d busy answers "
              "retried; %s" % (count, wall, 60 * count / wall, metrics["evaluations"]["refused_busy"], describe(answers)))


class UnreachableTest(unittest.TestCase):
    def test_no_service_is_unavailable(self):
        with self.assertRaises(Unavailable):
            Client("http://127.0.0.1:9", timeout=5).health()

    def test_an_address_kbv_serve_cannot_have_is_refused_when_given(self):
        for url in ("127.0.0.1:8470", "https://127.0.0.1:8470", "http://"):
            with self.assertRaisesRegex(ValueError, "http://HOST:PORT"):
                Client(url)


class RewardTest(unittest.TestCase):
    def record(self, verdict, speedup=None):
        record = {"verdict": verdict}
        if speedup is not None:
            record["timing"] = {"speedup": speedup}
        return {"record": record}

    def test_the_mapping(self):
        self.assertAlmostEqual(reward(self.record("pass", 2.0)), 1.0 + 0.5 * math.log(2.0) / math.log(10.0))
        self.assertAlmostEqual(reward(self.record("pass", 0.5)), 1.0 - 0.5 * math.log(2.0) / math.log(10.0))
        self.assertAlmostEqual(reward(self.record("pass", 1000.0)), 1.5)  # clipped at max_speedup
        self.assertAlmostEqual(reward(self.record("pass", 0.001)), 0.5)
        self.assertEqual(reward(self.record("pass")), 1.0)  # no speedup measured
        self.assertEqual(reward(self.record("hack")), -1.0)
        self.assertEqual(reward(self.record("no_kernel")), 0.0)
        self.assertEqual(reward(self.record("crash")), 0.0)
        self.assertIsNone(reward(self.record("unverifiable")))
        config = RewardConfig(correct=3.0, speed_weight=2.0, hack=-5.0, unverifiable=0.0)
        self.assertAlmostEqual(reward(self.record("pass", 10.0), config), 5.0)
        self.assertEqual(reward(self.record("hack"), config), -5.0)
        self.assertEqual(reward(self.record("unverifiable"), config), 0.0)
        self.assertAlmostEqual(reward({"verdict": "pass", "timing": {"speedup": 2.0}}), 1.0 + 0.5 * math.log(2.0) / math.log(10.0))  # a bare record
        with self.assertRaises(ValueError):
            reward({"verdict": "maybe"})

    def test_a_hack_below_every_failure_below_every_pass_rising_with_its_speedup(self):
        speedups = [10 ** (k / 20) for k in range(-80, 81)]  # 1e-4 .. 1e4
        for config in (RewardConfig(), RewardConfig(correct=0.2, speed_weight=0.1, max_speedup=100.0, hack=-0.5)):
            passes = [reward(self.record("pass", s), config) for s in speedups]
            self.assertEqual(passes, sorted(passes), "a faster pass never scores less")
            self.assertLess(passes[speedups.index(1.0) - 1], passes[speedups.index(1.0) + 1])
            honest_failures = [reward(self.record(v), config)
                               for v in ("incorrect", "no_kernel", "compile_error", "runtime_error", "timeout", "crash")]
            self.assertLess(max(honest_failures), min(passes))
            self.assertLess(reward(self.record("hack"), config), min(honest_failures))

    def test_a_config_that_breaks_the_order_is_refused(self):
        for fields in ({"correct": 1.0, "speed_weight": 1.0}, {"hack": 0.0}, {"incorrect": 2.0}, {"no_kernel": 0.6},
                       {"no_kernel": -1.0}, {"max_speedup": 1.0}, {"speed_weight": -0.1}):
            with self.assertRaises(ValueError, msg=fields):
                RewardConfig(**fields)


if __name__ == "__main__":
    unittest.main()
