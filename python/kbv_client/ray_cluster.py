"""kbv serve on every machine of a Ray cluster, and a dispatcher in front of them (docs/serve.md, "On a Ray cluster").

Each node that offers the custom resource `kbv_node` (`ray start ... --resources '{"kbv_node": 1}'`)
gets one `KbvNode` actor holding the node's GPUs, which runs `kbv serve` there. `KbvCluster` spreads
requests over them by load, keeps a problem's requests on the node that has its baseline warm, and
sends a request whose node is lost to another: every request is answered once.
"""

import ctypes
import hashlib
import os
import re
import signal
import subprocess
import tempfile
import threading
import time

import ray

from kbv_client.client import Client, evaluate_all, request_body
from kbv_client.errors import Busy, KbvError, Unavailable

_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    # kbv serve (and the workers it starts) go when the actor's process goes, as when its node is lost.
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


@ray.remote(num_cpus=0, resources={"kbv_node": 1}, max_restarts=0)
class KbvNode:
    """One kbv serve on this actor's node, over the GPUs Ray gave the actor (none: on the CPU)."""

    def __init__(self, binary, serve_args, store_dir, start_timeout):
        node = ray.get_runtime_context().get_node_id()
        self._dir = store_dir or tempfile.mkdtemp(prefix="kbv-node-")
        os.makedirs(self._dir, exist_ok=True)
        self.db = os.path.join(self._dir, "kbv-serve-%s.sqlite" % node[:12])
        host = ray.util.get_node_ip_address()
        args = [binary, "serve", "--host", host, "--port", "0", "--db", self.db]
        gpus = [str(g) for g in ray.get_gpu_ids()]
        if gpus:  # physical ids: each lane sets CUDA_VISIBLE_DEVICES to its own
            args += ["--device", "cuda", "--gpus", ",".join(gpus)]
        self._log = open(self.db + ".log", "w+")
        self._process = subprocess.Popen(args + list(serve_args), stdout=self._log, stderr=subprocess.STDOUT,
                                         preexec_fn=_die_with_parent)
        deadline = time.monotonic() + start_timeout
        while True:
            self._log.seek(0)
            found = re.search(r"listening on (http://\S+)", self._log.read())
            if found:
                self.url = found.group(1)
                return
            if self._process.poll() is not None or time.monotonic() > deadline:
                self._process.kill()
                self._log.seek(0)
                raise RuntimeError("kbv serve did not start on node %s: %s" % (node, self._log.read()[-2000:]))
            time.sleep(0.1)

    def where(self):
        return {"url": self.url, "db": self.db, "node": ray.get_runtime_context().get_node_id(),
                "serving": self._process.poll() is None}

    def stop(self, timeout=3600):
        """Stops kbv serve as SIGTERM does: every request it holds is answered first. Its exit status."""
        self._process.send_signal(signal.SIGTERM)
        return self._process.wait(timeout=timeout)


def problem_key(request):
    """Requests with equal keys share a reference side: the same problem under the same protocol."""
    problem = request.get("problem")
    if problem is None:
        problem = hashlib.sha256(request.get("problem_source", "").encode()).hexdigest()
    return str(problem), request.get("protocol", "verified")


class _Node:
    def __init__(self, actor, where):
        self.actor = actor
        self.url = where["url"]
        self.db = where["db"]
        self.node_id = where["node"]
        self.client = Client(self.url, busy_retries=0)
        self.in_flight = 0
        self.busy_until = 0.0
        self.lost = False


class KbvCluster:
    """kbv serve on each node offering `kbv_node` (at most `nodes`), `gpus_per_node` GPUs each.

    `serve_args` go to every kbv serve (e.g. ["--queue", "16", "--warm", "8"]); `store_dir`, a
    folder each node writes its store into (default: a temporary folder on the node). A problem's
    requests go to the node that last took one, unless it holds `affinity_slack` more requests in
    flight than the least loaded node.
    """

    def __init__(self, binary="kbv", serve_args=(), gpus_per_node=0, nodes=None, store_dir=None,
                 affinity_slack=4, start_timeout=300):
        offering = [n for n in ray.nodes() if n["Alive"] and n["Resources"].get("kbv_node", 0) >= 1]
        count = len(offering) if nodes is None else min(nodes, len(offering))
        if count == 0:
            raise KbvError("no node of the Ray cluster offers the resource kbv_node")
        actors = [KbvNode.options(num_gpus=gpus_per_node).remote(binary, list(serve_args), store_dir, start_timeout)
                  for _ in range(count)]
        self._nodes = [_Node(actor, where) for actor, where in zip(actors, ray.get([a.where.remote() for a in actors]))]
        self._affinity = {}
        self._slack = affinity_slack
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)

    @property
    def nodes(self):
        """Per node: its url, store, Ray node id, requests in flight, and whether it was lost."""
        with self._lock:
            return [{"url": n.url, "db": n.db, "node": n.node_id, "in_flight": n.in_flight, "lost": n.lost}
                    for n in self._nodes]

    def _choose(self, key):
        # Called with the lock held: a node that is not lost nor busy, or None.
        now = time.monotonic()
        ready = [n for n in self._nodes if not n.lost and n.busy_until <= now]
        if not ready:
            return None
        least = min(ready, key=lambda n: n.in_flight)
        warm = self._affinity.get(key)
        if warm in ready and warm.in_flight <= least.in_flight + self._slack:
            chosen = warm
        else:
            chosen = least
            if warm is None or warm.busy_until <= now:  # a busy warm node keeps its problem
                self._affinity[key] = chosen
        chosen.in_flight += 1
        return chosen

    def _lose(self, node):
        with self._lock:
            node.lost = True
            self._affinity = {k: n for k, n in self._affinity.items() if n is not node}
            self._changed.notify_all()

    def _alive(self, node):
        try:
            return ray.get(node.actor.where.remote(), timeout=30)["serving"]
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            return False

    def evaluate(self, candidate_source, problem=None, problem_source=None, **fields):
        """Client.evaluate's answer, with "node": the url of the kbv serve that answered."""
        request = request_body(candidate_source, problem, problem_source, **fields)
        key = problem_key(request)
        while True:
            with self._lock:
                node = self._choose(key)
                while node is None:
                    if all(n.lost for n in self._nodes):
                        raise Unavailable("every kbv serve of the cluster is lost")
                    wake = min(n.busy_until for n in self._nodes if not n.lost)
                    self._changed.wait(timeout=max(0.05, wake - time.monotonic()))
                    node = self._choose(key)
            try:
                answer = node.client.evaluate(**request)
                answer["node"] = node.url
                return answer
            except Busy as busy:
                with self._lock:
                    node.busy_until = time.monotonic() + busy.answer.get("retry_after", 1.0)
            except Unavailable:
                # Its node or its kbv serve was lost (the request goes elsewhere), or the connection
                # broke: asked again.
                if not self._alive(node):
                    self._lose(node)
                else:
                    time.sleep(0.5)
            finally:
                with self._lock:
                    node.in_flight -= 1
                    self._changed.notify_all()

    def evaluate_many(self, requests, concurrency=8):
        """Each dict of `requests` (evaluate's arguments), `concurrency` at a time: in order, each
        answer or the KbvError it ended in."""
        return evaluate_all(self.evaluate, requests, concurrency)

    def metrics(self):
        """Each live node's GET /metrics, by url."""
        return {n.url: n.client.metrics() for n in self._nodes if not n.lost}

    def shutdown(self, timeout=3600):
        """Stops every live kbv serve gracefully (what each holds is answered first)."""
        live = [n for n in self._nodes if not n.lost]
        for node, code in zip(live, ray.get([n.actor.stop.remote(timeout) for n in live])):
            if code != 0:
                raise KbvError("kbv serve at %s exited %s" % (node.url, code))
        for node in live:
            ray.kill(node.actor)
