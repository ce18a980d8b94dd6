"""`fencectl health [--ready]`, the probe of the status socket: against a stand-in HTTP server on
a Unix socket (200, 503, no socket, a server that never answers, one that is not HTTP, where the
socket is looked for, bad arguments), then against a real sidecar (healthy and ready; not ready
while its ZooKeeper is frozen, yet still healthy).

    FK_BUILD_DIR=build PYTHONPATH=client_lib/python /usr/bin/python3 -m unittest discover -v \\
        -s tests/python -p test_fencectl_health.py
"""
import http.server
import os
import shutil
import signal
import socket as socketlib
import socketserver
import subprocess
import tempfile
import threading
import time
import unittest

import fk_harness

EXIT_UNHEALTHY = 1
EXIT_USAGE = 64


class StandInStatusSocket:
    """An HTTP/1.1 server on the Unix socket `path` answering every GET with (code, body);
    `paths` records what was asked."""

    def __init__(self, path, code, body):
        self.paths = []
        paths = self.paths

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                paths.append(self.path)
                data = body.encode()
                self.send_response(code)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def address_string(self):  # a Unix peer has no address
                return "unix"

            def log_message(self, *args):
                pass

        self.server = socketserver.ThreadingUnixStreamServer(path, Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


class HealthAgainstAStandInTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="fk-health-")  # 0700: no <name>.d/ subdirectory
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.fencectl_bin = fk_harness.find_binary("client_lib/fencectl")
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("FENCEKEEPER_SOCKET", "FENCEKEEPER_STATUS_SOCKET")}

    def path(self, name):
        return os.path.join(self.dir, name)

    def serve(self, name, code, body):
        server = StandInStatusSocket(self.path(name), code, body)
        self.addCleanup(server.close)
        return server

    def fencectl(self, *args, env=None):
        return subprocess.run([self.fencectl_bin] + list(args), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, env=env or self.env, timeout=30)

    def test_200_exits_0_and_prints_the_answer(self):
        server = self.serve("status.sock", 200, "ok\n")
        r = self.fencectl("health", "--status-socket", self.path("status.sock"))
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "ok\n", ""))
        self.assertEqual(server.paths, ["/healthz"])

    def test_ready_asks_readyz_and_503_exits_1_with_the_reason(self):
        reason = "ZooKeeper session connecting, not vouched for: no lease can be granted\n"
        server = self.serve("status.sock", 503, reason)
        r = self.fencectl("health", "--ready", "--status-socket", self.path("status.sock"))
        self.assertEqual((r.returncode, r.stdout), (EXIT_UNHEALTHY, reason), r.stderr)
        self.assertRegex(r.stderr, r"^fencectl: health: .*status\.sock answered 503 on /readyz\n$")
        self.assertEqual(server.paths, ["/readyz"])

    def test_no_socket_exits_1_saying_why(self):
        for path in (self.path("missing.sock"), self.path("dead.sock")):
            if path.endswith("dead.sock"):  # a socket file nobody listens on
                s = socketlib.socket(socketlib.AF_UNIX, socketlib.SOCK_STREAM)
                s.bind(path)
                s.close()
            with self.subTest(path=os.path.basename(path)):
                r = self.fencectl("health", "--status-socket", path)
                self.assertEqual((r.returncode, r.stdout), (EXIT_UNHEALTHY, ""), r.stderr)
                self.assertTrue(r.stderr.startswith("fencectl: health: "), r.stderr)
                self.assertIn(path, r.stderr)

    def test_a_server_that_never_answers_times_out(self):
        silent = socketlib.socket(socketlib.AF_UNIX, socketlib.SOCK_STREAM)
        self.addCleanup(silent.close)
        silent.bind(self.path("silent.sock"))
        silent.listen(4)  # connects complete in the backlog; nothing is ever read or written
        started = time.monotonic()
        r = self.fencectl("health", "--status-socket", self.path("silent.sock"),
                          "--timeout", "300ms")
        took = time.monotonic() - started
        self.assertEqual((r.returncode, r.stdout), (EXIT_UNHEALTHY, ""), r.stderr)
        self.assertIn("no answer", r.stderr)
        self.assertIn("within 300 ms", r.stderr)
        self.assertGreaterEqual(took, 0.3)
        self.assertLess(took, 5, "the timeout did not bound the probe")

    def test_an_answer_that_is_not_http_exits_1(self):
        garbage = socketlib.socket(socketlib.AF_UNIX, socketlib.SOCK_STREAM)
        self.addCleanup(garbage.close)
        garbage.bind(self.path("garbage.sock"))
        garbage.listen(4)

        def answer():
            conn, _ = garbage.accept()
            conn.recv(4096)
            conn.sendall(b"hello, I am not HTTP\n")
            conn.close()
        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        r = self.fencectl("health", "--status-socket", self.path("garbage.sock"))
        thread.join(10)
        self.assertEqual((r.returncode, r.stdout), (EXIT_UNHEALTHY, ""), r.stderr)
        self.assertTrue(r.stderr.startswith("fencectl: health: "), r.stderr)

    def test_the_status_socket_is_looked_for_beside_the_lease_socket(self):
        # Named after the lease socket (in this private directory: no NAME.d/).
        beside = self.serve("fencekeeper.sock.status", 200, "ok\n")
        elsewhere = self.serve("elsewhere.sock", 503, "elsewhere\n")
        lease_socket = self.path("fencekeeper.sock")  # need not exist: only its directory counts
        r = self.fencectl("--socket", lease_socket, "health")
        self.assertEqual((r.returncode, r.stdout), (0, "ok\n"), r.stderr)
        env = dict(self.env, FENCEKEEPER_SOCKET=lease_socket)
        r = self.fencectl("health", env=env)
        self.assertEqual((r.returncode, r.stdout), (0, "ok\n"), r.stderr)
        # $FENCEKEEPER_STATUS_SOCKET wins over the lease socket's directory ...
        env["FENCEKEEPER_STATUS_SOCKET"] = self.path("elsewhere.sock")
        r = self.fencectl("health", env=env)
        self.assertEqual((r.returncode, r.stdout), (EXIT_UNHEALTHY, "elsewhere\n"), r.stderr)
        # ... and --status-socket over both.
        r = self.fencectl("health", "--status-socket", self.path("fencekeeper.sock.status"),
                          env=env)
        self.assertEqual((r.returncode, r.stdout), (0, "ok\n"), r.stderr)
        self.assertEqual((len(beside.paths), len(elsewhere.paths)), (3, 1))

    def test_bad_arguments_exit_64(self):
        for args in (["health", "--timeout", "soon"], ["health", "--timeout", "0"],
                     ["health", "--status-socket"], ["health", "--frobnicate"],
                     ["health", "extra"]):
            with self.subTest(args=args):
                r = self.fencectl(*args)
                self.assertEqual(r.returncode, EXIT_USAGE, r.stdout + r.stderr)
                self.assertTrue(r.stderr.startswith("fencectl: "), r.stderr)


class HealthAgainstARealSidecarTest(fk_harness.ClusterTestCase):
    def status_socket(self):
        # fk_harness gives each sidecar a status socket of its own (--status-socket).
        return os.path.join(self.cluster.tmp, "fk0.status.sock")

    def health(self, *args):
        return self.fencectl("health", "--status-socket", self.status_socket(), *args)

    def test_healthy_and_ready(self):
        r = self.health()
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "ok\n", ""))
        r = self.health("--ready")
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "ready\n", ""))

    def test_default_status_socket_of_a_sidecar_beside_its_lease_socket(self):
        sub = os.path.join(self.cluster.tmp, "beside")
        os.mkdir(sub, 0o750)
        # Where the sidecar puts it by default (fk_harness names one for each sidecar).
        self.cluster.start_sidecar("--status-socket", os.path.join(sub, "fk.sock.status"),
                                   socket=os.path.join(sub, "fk.sock"))
        r = self.cluster.fencectl(os.path.join(sub, "fk.sock"), "health", "--ready")
        self.assertEqual((r.returncode, r.stdout), (0, "ready\n"), r.stderr)

    def test_not_ready_while_zookeeper_is_frozen_yet_healthy(self):
        pids = self.cluster.zk_pids
        self.assertTrue(pids, "no ZooKeeper pid to freeze")

        def resume():
            for pid in pids:
                os.kill(pid, signal.SIGCONT)
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        self.addCleanup(resume)
        # Vouching ends within the session timeout (4 s) of the last answer.

        def not_ready():
            r = self.health("--ready")
            return r if r.returncode == EXIT_UNHEALTHY else None
        r = fk_harness.wait_until(not_ready, 20, "/readyz to answer 503")
        self.assertIn("not vouched for", r.stdout)
        self.assertIn("answered 503 on /readyz", r.stderr)
        r = self.health()
        self.assertEqual((r.returncode, r.stdout), (0, "ok\n"), r.stderr)
        resume()
        fk_harness.wait_until(lambda: self.health("--ready").returncode == 0, 30,
                              "/readyz to answer 200 again")


if __name__ == "__main__":
    unittest.main()
