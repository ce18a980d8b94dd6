"""kazoo <-> fencekeeper interoperability: one lock queue shared by kazoo's Lock recipe and
fencekeeper's leases, on a real standalone ZooKeeper and a sidecar with --persistent-parents
(fk_harness.ClusterTestCase starts both per class and stops them by PID).

Needs kazoo, which only Debian's interpreter has (python3-kazoo); ctest's
python_client.test_kazoo_interop runs it:

    FK_BUILD_DIR=build /usr/bin/python3 -m unittest discover -v -s tests/python \\
        -p test_kazoo_interop.py
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unicodedata
import unittest
import warnings

import fk_harness
from kazoo_case import KazooClusterTestCase

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import make_acl

ROOT = "/fencekeeper"
LOCKS = ROOT + "/locks"

# fencectl's exit codes (see `fencectl --help`).
EXIT_NOT_ACQUIRED = 75

QUEUE_NODE = re.compile(r"__(?:r)?lock__(\d{10})$")


def _sequence(child):
    m = QUEUE_NODE.search(child)
    return int(m.group(1)) if m else None


class KazooInteropTest(KazooClusterTestCase):
    # ---- per-test fixture and helpers ----------------------------------------------------------

    def setUp(self):
        super().setUp()
        self.client = self.kazoo
        self.procs = []
        self.addCleanup(self._stop_procs)

    def _stop_procs(self):
        for proc, out in self.procs:
            fk_harness.stop_process(proc, grace=5)
            out.close()
            proc.stderr.close()

    def spawn_fencectl(self, name, *args):
        """Starts fencectl in its own session: stdout to a temporary file, stderr to a pipe."""
        out = tempfile.TemporaryFile(mode="w+", dir=self.cluster.tmp)
        proc = subprocess.Popen([self.cluster.fencectl_bin, "--socket", self.socket] + list(args),
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        self.procs.append((proc, out))
        return proc, out

    @staticmethod
    def output_of(out):
        out.seek(0)
        return out.read()

    def holder(self, name):
        r = self.fencectl("holder", name, "--json", timeout=10)
        self.assertEqual(r.returncode, 0, "fencectl holder %s: %s" % (name, r.stderr))
        return json.loads(r.stdout)

    def test_a_kazoo_holders_garbage_label_comes_out_repaired(self):
        """Node data is whatever another client wrote: holder's JSON stays strict UTF-8 JSON and
        its text carries no control character (each bad sequence is one U+FFFD)."""
        name = "interop/garbage-label"
        self.client.ensure_path(LOCKS + "/" + name)
        self.client.create(LOCKS + "/" + name + "/k__lock__", b"k\xff\x1b]0;pwned\x07\xc2\x9b!",
                           ephemeral=True, sequence=True)
        info = self.holder(name)  # decodes strictly: UTF-8, then JSON without raw controls
        self.assertEqual((info["held"], info["owner"]),
                         (True, "k\ufffd\ufffd]0;pwned\ufffd\ufffd!"), info)
        r = subprocess.run([self.cluster.fencectl_bin, "--socket", self.socket, "holder", name],
                           capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 0, r.stderr)
        text = r.stdout.decode("utf-8")
        self.assertIn("owner 'k\ufffd\ufffd]0;pwned\ufffd\ufffd!'", text)
        self.assertFalse([c for c in text if c != "\n" and unicodedata.category(c) == "Cc"], text)

    def wait_held_by_fencectl(self, name, proc):
        def held():
            if proc.poll() is not None:
                raise AssertionError("fencectl lock %s exited with %d before holding it: %s" %
                                     (name, proc.returncode, proc.stderr.read()))
            info = self.holder(name)
            return info if info["held"] and info["thisSidecar"] else None
        info = fk_harness.wait_until(held, 15, "fencectl to hold %s" % name)
        self.assertEqual(info["owner"], "fencectl pid %d" % proc.pid)
        return info

    def queue(self, name):
        """The lock's queue nodes, lowest sequence first."""
        kids = [k for k in self.client.get_children(LOCKS + "/" + name)
                if _sequence(k) is not None]
        return sorted(kids, key=_sequence)

    def wait_queue_length(self, name, n, timeout=10):
        def reached():
            queue = self.queue(name)
            return queue if len(queue) == n else None
        return fk_harness.wait_until(reached, timeout,
                                     "%d queue node(s) under %s/%s" % (n, LOCKS, name))

    def czxid(self, name, child):
        return self.client.get(LOCKS + "/" + name + "/" + child)[1].czxid

    # ---- tests ---------------------------------------------------------------------------------

    def test_1_kazoo_holder_blocks_fencectl_and_is_reported(self):
        name = "interop1"
        lock = self.client.Lock(LOCKS + "/" + name, identifier="kazoo-holder")
        self.assertTrue(lock.acquire(timeout=5), "kazoo could not take a free lock")
        try:
            queue = self.queue(name)
            self.assertEqual(queue, [lock.node])
            kazoo_czxid = self.czxid(name, queue[0])

            r = self.fencectl("lock", name, "--wait", "1s", "--", "true", timeout=30)
            self.assertEqual(r.returncode, EXIT_NOT_ACQUIRED,
                             "fencectl lock while kazoo holds it: %s%s" % (r.stdout, r.stderr))
            # The withdrawn request leaves no node behind for kazoo to queue behind.
            self.wait_queue_length(name, 1)

            info = self.holder(name)
            self.assertTrue(info["held"], info)
            self.assertEqual(info["owner"], "kazoo-holder", info)
            self.assertEqual(info["token"], kazoo_czxid, info)
            self.assertFalse(info["thisSidecar"], info)
        finally:
            lock.release()

        r = self.fencectl("lock", name, "--wait", "5s", "--", "sh", "-c", "echo $FENCE_TOKEN",
                          timeout=30)
        self.assertEqual(r.returncode, 0, "fencectl lock after kazoo released: %s" % r.stderr)
        token = int(r.stdout.strip())
        self.assertGreater(token, kazoo_czxid)
        fk_harness.wait_until(lambda: not self.holder(name)["held"], 10,
                              "%s to be free again" % name)

    def test_2_fencectl_holder_blocks_kazoo_until_terminated(self):
        name = "interop2"
        holder, _ = self.spawn_fencectl(name, "lock", name, "--ttl", "10s", "--", "sleep", "30")
        token_h = self.wait_held_by_fencectl(name, holder)["token"]
        self.assertEqual(self.czxid(name, self.queue(name)[0]), token_h)

        lock = self.client.Lock(LOCKS + "/" + name, identifier="kazoo-2")
        self.assertFalse(self.try_kazoo(lock, 1), "kazoo took a lock fencectl holds")
        self.wait_queue_length(name, 1)  # kazoo withdrew its node
        self.assertIsNone(holder.poll(), "fencectl holder exited early")

        # kazoo waits on the holder's node; SIGTERM to fencectl stops CMD and releases.
        got = {}

        def contend():
            t0 = time.monotonic()
            got["acquired"] = self.try_kazoo(lock, 5)
            got["at"] = time.monotonic()
            got["waited"] = got["at"] - t0
        thread = threading.Thread(target=contend, daemon=True)
        thread.start()
        try:
            self.wait_queue_length(name, 2, timeout=4)
            sent = time.monotonic()
            holder.send_signal(signal.SIGTERM)
            rc = holder.wait(timeout=10)
            thread.join(timeout=10)
            self.assertFalse(thread.is_alive(), "kazoo acquire(timeout=5) did not return")
            self.assertTrue(got["acquired"],
                            "kazoo did not get the lock within 5 s of fencectl's SIGTERM")
            self.assertLess(got["at"] - sent, 5.0)
            # fencectl forwards SIGTERM to CMD and exits with CMD's status (128 + SIGTERM).
            self.assertEqual(rc, 128 + signal.SIGTERM,
                             "fencectl exit status: %s" % holder.stderr.read())

            info = self.holder(name)
            self.assertTrue(info["held"], info)
            self.assertEqual(info["owner"], "kazoo-2", info)
            self.assertEqual(info["token"], self.czxid(name, lock.node), info)
            self.assertGreater(info["token"], token_h)
        finally:
            thread.join(timeout=10)
            lock.release()

    def test_3_queue_order_mixes_kazoo_and_fencectl(self):
        name = "interop3"
        events = []  # (who, what, monotonic time)
        h, _ = self.spawn_fencectl(name, "lock", name, "--ttl", "10s", "--", "sleep", "30")
        token_h = self.wait_held_by_fencectl(name, h)["token"]

        # K1 queues behind H.
        k1 = self.client.Lock(LOCKS + "/" + name, identifier="kazoo-k1")
        k1_acquired = threading.Event()
        k1_release = threading.Event()
        k1_result = {}

        def k1_contend():
            try:
                k1_result["acquired"] = self.try_kazoo(k1, 15)
                if k1_result["acquired"]:
                    events.append(("K1", "acquired", time.monotonic()))
                    k1_acquired.set()
                    k1_release.wait(30)
                    events.append(("K1", "released", time.monotonic()))
                    k1.release()
            except Exception as e:  # reported by the main thread
                k1_result["error"] = e
            finally:
                k1_acquired.set()
        thread = threading.Thread(target=k1_contend, daemon=True)
        thread.start()
        try:
            queue = self.wait_queue_length(name, 2)
            self.assertFalse(k1_acquired.is_set(), "K1 got the lock while H holds it")
            k1_node = queue[1]

            # F2 queues behind K1.
            f2, f2_out = self.spawn_fencectl(name, "lock", name, "--wait", "15s", "--",
                                             "sh", "-c", "echo $FENCE_TOKEN")
            queue = self.wait_queue_length(name, 3)
            self.assertEqual(queue[1], k1_node, queue)
            self.assertIsNone(f2.poll(), "F2 finished while H holds the lock")
            czxid_k1 = self.czxid(name, k1_node)

            # Release H: K1 is next, F2 keeps waiting.
            events.append(("H", "terminated", time.monotonic()))
            h.send_signal(signal.SIGTERM)
            self.assertEqual(h.wait(timeout=10), 128 + signal.SIGTERM, h.stderr.read())
            self.assertTrue(k1_acquired.wait(10), "K1 did not get the lock after H released it")
            self.assertNotIn("error", k1_result)
            self.assertTrue(k1_result.get("acquired"), "K1's acquire(timeout=15) failed")
            info = self.holder(name)
            self.assertEqual((info["held"], info["owner"], info["token"]),
                             (True, "kazoo-k1", czxid_k1), info)
            # An observation window: F2 must not run while K1 holds the lock.
            window_end = time.monotonic() + 1.0
            while time.monotonic() < window_end:
                self.assertIsNone(f2.poll(), "F2 ran while K1 held the lock: %s" %
                                  self.output_of(f2_out))
                time.sleep(0.05)

            # Release K1: F2 gets it.
            k1_release.set()
            thread.join(timeout=10)
            self.assertFalse(thread.is_alive(), "K1's thread did not finish")
            rc = f2.wait(timeout=15)
            events.append(("F2", "finished", time.monotonic()))
            self.assertEqual(rc, 0, "F2 exit status: %s" % f2.stderr.read())
            token_f2 = int(self.output_of(f2_out).strip())
        finally:
            k1_release.set()
            thread.join(timeout=10)

        order = [who for who, _, _ in sorted(events, key=lambda e: e[2])]
        self.assertEqual(order, ["H", "K1", "K1", "F2"], events)
        self.assertLess(token_h, czxid_k1)
        self.assertLess(czxid_k1, token_f2)
        sys.stderr.write("[kazoo-interop] %s order H(token %d) -> K1(czxid %d) -> F2(token %d)\n"
                         % (name, token_h, czxid_k1, token_f2))


class KazooWithAuthTest(fk_harness.ClusterTestCase):
    """Sidecars with --zk-auth-file and kazoo clients that share the locks: kazoo authenticated as
    the same identity (the snippet of docs/security.md) contends as usual; one without the
    credentials can neither queue nor delete a holder's node."""

    AUTH = "app:s3cret"

    @classmethod
    def setUpClass(cls):
        warnings.filterwarnings("ignore", r"isSet\(\) is deprecated", DeprecationWarning)
        cls.auth_dir = tempfile.TemporaryDirectory(prefix="fk-kazoo-auth-")
        auth_file = os.path.join(cls.auth_dir.name, "zk-auth")
        with open(os.open(auth_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(cls.AUTH + "\n")
        cls.SIDECAR_ARGS = ("--persistent-parents", "--zk-auth-file", auth_file)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls.auth_dir.cleanup()

    def kazoo(self, auth):
        client = KazooClient(
            hosts=self.cluster.connect, timeout=5,
            auth_data=[("digest", self.AUTH)] if auth else None,
            default_acl=[make_acl("auth", "", all=True), make_acl("world", "anyone", read=True)]
            if auth else None)
        client.start(timeout=15)
        self.addCleanup(client.close)
        self.addCleanup(client.stop)
        return client

    def test_kazoo_with_the_same_auth_shares_the_locks_and_others_cannot(self):
        name = "shared"
        r = self.fencectl("lock", name, "--wait", "5s", "--", "true", timeout=30)
        self.assertEqual(r.returncode, 0, "fencectl lock: %s" % r.stderr)  # the sidecar's parents
        owner = self.kazoo(auth=True)
        lock = owner.Lock(LOCKS + "/" + name, identifier="kazoo-with-auth")
        self.assertTrue(lock.acquire(timeout=5))
        try:
            info = self.fencectl("holder", name, "--json", timeout=10)
            self.assertEqual(json.loads(info.stdout)["owner"], "kazoo-with-auth", info.stdout)
            r = self.fencectl("lock", name, "--wait", "1s", "--", "true", timeout=30)
            self.assertEqual(r.returncode, EXIT_NOT_ACQUIRED, r.stderr)

            stranger = self.kazoo(auth=False)
            self.assertEqual(len(stranger.get_children(LOCKS + "/" + name)), 1)  # it may read
            with self.assertRaises(NoAuthError):
                stranger.delete(LOCKS + "/" + name + "/" + lock.node)
            with self.assertRaises(NoAuthError):
                stranger.Lock(LOCKS + "/" + name, identifier="intruder").acquire(timeout=2)
        finally:
            lock.release()
        r = self.fencectl("lock", name, "--wait", "5s", "--", "true", timeout=30)
        self.assertEqual(r.returncode, 0, "fencectl lock after kazoo released: %s" % r.stderr)


if __name__ == "__main__":
    unittest.main()
