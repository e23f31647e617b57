"""kbv_client.ray_cluster on a local Ray cluster of real Ray processes (a head and two nodes that
offer `kbv_node`, each running its own kbv serve): requests spread by load and kept with their
problem's warm node, and one node killed mid-run with every request still answered once."""

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

import ray
from ray.cluster_utils import Cluster

from kbv_client.ray_cluster import KbvCluster

BINARY = os.environ["KBV_BINARY"]
EXAMPLES = Path(os.environ["KBV_EXAMPLES_DIR"])
PROBLEMS = [EXAMPLES / "problems/1_ReLU.py", EXAMPLES / "problems/2_SumReduction.py"]
CANDIDATES = [(EXAMPLES / "candidates/1_ReLU/cpu_honest.py").read_text(),
              (EXAMPLES / "candidates/2_SumReduction/cpu_honest.py").read_text()]


def records(dbs, run):
    """(sample, count) of the run's records over the nodes' stores."""
    counts = {}
    for db in dbs:
        if not Path(db).exists():
            continue
        with sqlite3.connect(db) as store:
            for (sample,) in store.execute("SELECT c.sample FROM records r JOIN candidates c ON c.id = r.candidate_id "
                                           "JOIN runs n ON n.id = c.run_id WHERE n.name = ?", (run,)):
                counts[sample] = counts.get(sample, 0) + 1
    return counts


class RayClusterTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
        self.workers = [self.cluster.add_node(num_cpus=1, resources={"kbv_node": 1}) for _ in range(2)]
        self.cluster.wait_for_nodes()
        ray.init(address=self.cluster.address, logging_level="warning")

    def start_kbv(self):
        self.kbv = KbvCluster(BINARY, serve_args=["--queue", "2"], store_dir=self.dir.name, affinity_slack=2)

    def tearDown(self):
        ray.shutdown()
        self.cluster.shutdown()
        self.dir.cleanup()

    def requests(self, count, run):
        return [dict(problem=PROBLEMS[i % 2], candidate_source=CANDIDATES[i % 2], run=run, sample=i) for i in range(count)]

    def test_requests_spread_over_the_nodes_and_stay_with_their_problem(self):
        self.start_kbv()
        # Two clients: no node ever holds more than the slack beyond the other, so each problem
        # stays on the node it went to first (its baseline timed there once), and the two problems
        # went to different nodes (the least loaded when each came).
        answers = self.kbv.evaluate_many(self.requests(16, "spread"), concurrency=2)
        self.assertTrue(all(isinstance(a, dict) for a in answers), [a for a in answers if not isinstance(a, dict)])
        self.assertTrue(all(a["record"]["verdict"] == "pass" for a in answers))
        by_problem = [{a["node"] for i, a in enumerate(answers) if i % 2 == p} for p in range(2)]
        self.assertEqual([len(nodes) for nodes in by_problem], [1, 1], by_problem)
        self.assertNotEqual(by_problem[0], by_problem[1])
        for metrics in self.kbv.metrics().values():
            self.assertEqual(metrics["lanes"][0]["warm_problems"], 1)
        self.kbv.shutdown()
        self.assertEqual(records([n["db"] for n in self.kbv.nodes], "spread"), {i: 1 for i in range(16)})

    def test_a_node_lost_mid_run_loses_no_request(self):
        self.start_kbv()
        count = 24
        answered = []
        lost = threading.Event()

        def kill_when_started():
            while len(answered) < 4:
                time.sleep(0.05)
            self.cluster.remove_node(self.workers[1])
            lost.set()

        killer = threading.Thread(target=kill_when_started)
        killer.start()

        def one(request):
            answer = self.kbv.evaluate(**request)
            answered.append(answer)
            return answer

        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=6) as pool:
            answers = list(pool.map(one, self.requests(count, "lost")))
        killer.join()
        self.assertTrue(lost.is_set())
        self.assertEqual(len({a["id"] for a in answers}), count)
        self.assertTrue(all(a["record"]["verdict"] == "pass" for a in answers))
        nodes = self.kbv.nodes
        self.assertEqual(sum(n["lost"] for n in nodes), 1, nodes)
        self.kbv.shutdown()
        # Every request has one record, on the node that answered it.
        self.assertEqual(records([n["db"] for n in nodes], "lost"), {i: 1 for i in range(count)})

    def test_kbv_run_on_the_cluster_gathers_every_record_into_its_store(self):
        manifest = Path(self.dir.name) / "sweep.csv"
        rows = ["problem,candidate,run,sample"]
        for i in range(6):
            candidate = Path(self.dir.name) / ("sample_%d.py" % i)
            candidate.write_text(CANDIDATES[i % 2])
            rows.append("%s,%s,sweep,%d" % (PROBLEMS[i % 2], candidate, i))
        manifest.write_text("\n".join(rows) + "\n")
        db = Path(self.dir.name) / "sweep.sqlite"
        command = [BINARY, "run", "--manifest", str(manifest), "--db", str(db), "--ray", self.cluster.address,
                   "--ray-python", sys.executable, "--limit", "file=3G"]
        first = subprocess.run(command, capture_output=True, text=True, timeout=900)
        self.assertEqual(first.returncode, 0, first.stdout + first.stderr)
        self.assertIn("12 evaluated (pass 12)", first.stdout)
        with sqlite3.connect(db) as store:
            self.assertEqual(store.execute("SELECT COUNT(*), COUNT(DISTINCT candidate_id || protocol) FROM records").fetchone(), (12, 12))
            # Each node timed its own baselines: one row per distinct measurement, each record citing one.
            self.assertEqual(store.execute("SELECT COUNT(*) FROM records WHERE baseline_id IS NULL").fetchone(), (0,))
            # The nodes' lanes, kept for the report's device busy share: one per node, all 12 evaluations.
            (lanes,) = store.execute("SELECT lanes FROM sessions WHERE command = 'run'").fetchone()
            self.assertEqual(len(json.loads(lanes)), 2, lanes)
            self.assertEqual(sum(lane["evaluations"] for lane in json.loads(lanes)), 12)
            # The nodes ran the candidates under this command's sandbox options.
            for (record,) in store.execute("SELECT record FROM records"):
                self.assertEqual(json.loads(record)["sandbox"]["limits"]["file_bytes"], 3 << 30)
        again = subprocess.run(command, capture_output=True, text=True, timeout=900)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("12 records already in the store", again.stderr)


if __name__ == "__main__":
    unittest.main()
