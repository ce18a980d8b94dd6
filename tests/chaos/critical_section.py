"""CMD of a campaign worker, run by `fencectl lock`: one increment of the fenced counter.

    critical_section.py --port P --events FILE --worker NAME --hold-ms MS

Reads the counter with the grant's token (FENCE_TOKEN), holds it a random while, writes it + 1,
and appends each step to FILE (one line each, CLOCK_MONOTONIC ns first; see checker.py). A
SIGTERM (fencectl's, on loss or at --grace) is logged as the end before it exits.
"""

import argparse
import http.client
import os
import random
import signal
import sys
import time

LOCK = KEY = "counter"


class Events:
    def __init__(self, path, worker, token):
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._prefix = "%s cs token=%d" % (worker, token)

    def log(self, what):
        # One write a line, O_APPEND: lines of processes sharing the file never interleave.
        os.write(self._fd, ("%d %s %s\n" % (time.monotonic_ns(), self._prefix, what)).encode())


def request(port, method, token, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, "/objects/" + KEY, body=body,
                     headers={"Fence-Lock": LOCK, "Fence-Token": str(token)})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--events", required=True)
    parser.add_argument("--worker", required=True)
    parser.add_argument("--hold-ms", type=int, default=200)
    args = parser.parse_args()
    token = int(os.environ["FENCE_TOKEN"])
    events = Events(args.events, args.worker, token)

    def on_term(signum, _frame):
        events.log("end reason=signal%d" % signum)
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    events.log("start")
    status, body = request(args.port, "GET", token)
    value = int(body) if status == 200 else 0
    events.log("get status=%d value=%d" % (status, value))
    if status not in (200, 404):
        events.log("end reason=get%d" % status)
        return 3
    time.sleep(random.uniform(0, args.hold_ms) / 1000)
    status, _ = request(args.port, "PUT", token, body=str(value + 1))
    events.log("put status=%d value=%d" % (status, value + 1))
    events.log("end reason=done")
    return 0 if status == 200 else 3


if __name__ == "__main__":
    sys.exit(main())
