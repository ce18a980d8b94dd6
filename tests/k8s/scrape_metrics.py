#!/usr/bin/env python3
"""A real sidecar's /metrics (fencekeeper --dev, one lease taken and released), checked against
tests/k8s/metric-names.txt and the dashboard by check_dashboard.py: the list is what the sidecar
exports, not only what its contract says.

usage: scrape_metrics.py SOURCE_DIR BUILD_DIR
"""
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SOURCE, BUILD = sys.argv[1], sys.argv[2]


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=5)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(5)
        self.sock.connect(self.unix_path)


def get(path, what):
    conn = UnixHTTPConnection(path)
    conn.request("GET", what)
    r = conn.getresponse()
    return r.status, r.read().decode()


def main():
    work = tempfile.mkdtemp(prefix="fk-scrape-")
    lease_socket = os.path.join(work, "fk.sock")
    status_socket = lease_socket + ".status"  # the default (work is 0700: no fk.sock.d/)
    log = open(os.path.join(work, "log"), "w")
    sidecar = subprocess.Popen([os.path.join(BUILD, "sidecar", "fencekeeper"), "--dev",
                                "--dev-data", os.path.join(work, "zk"), "--socket", lease_socket,
                                "--session-timeout", "4s"],
                               stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if get(status_socket, "/readyz")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or sidecar.poll() is not None:
                print(open(os.path.join(work, "log")).read())
                sys.exit("FAIL the sidecar's /readyz was not 200 within 60 s")
            time.sleep(0.1)
        subprocess.run([os.path.join(BUILD, "client_lib", "fencectl"), "--socket", lease_socket,
                        "lock", "scrape", "--ttl", "5s", "--", "true"], check=True, timeout=30)
        code, text = get(status_socket, "/metrics")
        if code != 200:
            sys.exit(f"FAIL /metrics answered {code}")
        scrape = os.path.join(work, "metrics.txt")
        with open(scrape, "w") as f:
            f.write(text)
        return subprocess.run([sys.executable, os.path.join(SOURCE, "tests", "k8s",
                                                            "check_dashboard.py"), SOURCE,
                               scrape]).returncode
    finally:
        sidecar.send_signal(signal.SIGTERM)
        try:
            sidecar.wait(timeout=30)
        except subprocess.TimeoutExpired:
            sidecar.kill()
            sidecar.wait()
        log.close()
        shutil.rmtree(work)


if __name__ == "__main__":
    sys.exit(main())
