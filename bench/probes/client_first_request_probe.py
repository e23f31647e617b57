#!/usr/bin/env python3
"""What a concurrent client's first requests cost through urllib and through http.client (kbv_client
speaks http.client since a033c50): C threads post to a local plain-HTTP server that answers ~60 KB
of JSON, as kbv serve answers a record. Prints, for each way, the first C requests' round trips
(one per thread, each thread's first) and the median of the rest. Run it under each Python at hand:

    python3 bench/probes/client_first_request_probe.py [--threads 4] [--requests 12]

Python 3.12's urllib builds an HTTPS handler, with the system's TLS trust store, for every opener,
and threads that find no opener yet each build one.
"""
import argparse
import http.client
import http.server
import json
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

ANSWER = json.dumps({"record": "x" * 60000}).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--requests", type=int, default=12)
    args = parser.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]

    def through_urllib():
        request = urllib.request.Request("http://127.0.0.1:%d/evaluate" % port, data=b"{}", method="POST")
        with urllib.request.urlopen(request) as response:
            response.read()

    def through_http_client():
        connection = http.client.HTTPConnection("127.0.0.1", port)
        connection.request("POST", "/evaluate", body=b"{}")
        connection.getresponse().read()
        connection.close()

    print("Python %s, %d threads, %d requests each way" % (sys.version.split()[0], args.threads, args.requests))
    for name, post in (("urllib", through_urllib), ("http.client", through_http_client)):
        def timed(_):
            began = time.monotonic()
            post()
            return 1e3 * (time.monotonic() - began)
        with ThreadPoolExecutor(args.threads) as pool:
            ms = list(pool.map(timed, range(args.requests)))
        rest = sorted(ms[args.threads:])
        print("%-12s first requests %s ms; the rest's median %.1f ms"
              % (name, ", ".join("%.1f" % m for m in ms[:args.threads]), rest[len(rest) // 2] if rest else float("nan")))


if __name__ == "__main__":
    main()
