"""`kbv run --ray`'s driver: evaluates the requests kbv run hands it on a Ray cluster (KbvCluster) and
prints each answer as one JSON line as it arrives, for kbv run to write into its store.

    python -m kbv_client.ray_run --address ADDRESS --binary KBV --requests FILE [--gpus-per-node N]

FILE holds JSON lines {"key": ..., "request": {kbv serve's /evaluate fields}}; each output line is
{"key": ..., "answer": {...}} or {"key": ..., "error": "...", "status": HTTP status or null}, and the
last {"lanes": [{lane, wall_seconds, device_seconds, evaluations}]}, each live node's lanes.
"""

import argparse
import json
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import ray

from kbv_client.errors import KbvError
from kbv_client.ray_cluster import KbvCluster


def main(argv=None):
    parser = argparse.ArgumentParser(prog="kbv_client.ray_run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--address", required=True, help="the Ray cluster (ray.init's address)")
    parser.add_argument("--binary", required=True, help="the kbv binary, at this path on every node")
    parser.add_argument("--requests", required=True, help="JSON lines: {key, request}")
    parser.add_argument("--gpus-per-node", type=int, default=0, help="GPUs each node's kbv serve holds (0: the CPU)")
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight over the cluster")
    parser.add_argument("--serve-arg", action="append", default=[], help="an argument for every kbv serve (repeatable)")
    args = parser.parse_args(argv)

    with open(args.requests) as lines:
        items = [json.loads(line) for line in lines if line.strip()]
    ray.init(address=args.address, logging_level="warning", log_to_driver=False)
    kbv = KbvCluster(args.binary, serve_args=args.serve_arg, gpus_per_node=args.gpus_per_node)
    printing = threading.Lock()

    def one(item):
        try:
            line = {"key": item["key"], "answer": kbv.evaluate(**item["request"])}
        except KbvError as error:
            line = {"key": item["key"], "error": str(error), "status": error.status}
        with printing:
            sys.stdout.write(json.dumps(line) + "\n")
            sys.stdout.flush()

    try:
        with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
            list(pool.map(one, items))
        # Each live node's lanes over its uptime (a lost node's are gone with it), for kbv run's store.
        lanes = [{"lane": "%s %s" % (url, lane["gpu"]), "wall_seconds": metrics["uptime_seconds"],
                  "device_seconds": lane["device_seconds"], "evaluations": lane["evaluations"]}
                 for url, metrics in kbv.metrics().items() for lane in metrics["lanes"]]
        sys.stdout.write(json.dumps({"lanes": lanes}) + "\n")
        sys.stdout.flush()
    finally:
        kbv.shutdown()
        ray.shutdown()


if __name__ == "__main__":
    main()
