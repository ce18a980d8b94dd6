"""Shared locks and semaphores end to end: the Python client (sync and asyncio), fencectl, and
kazoo's ReadLock and WriteLock on the same queue, against a real ZooKeeper and sidecar
(fk_harness.ClusterTestCase; --persistent-parents, as kazoo caches that a lock parent exists).

    FK_BUILD_DIR=build /usr/bin/python3 -m unittest discover -v -s tests/python \\
        -p test_lock_modes.py
"""
import asyncio
import json
import threading
import time
import unittest

import fencekeeper
import fk_harness
from kazoo_case import KazooClusterTestCase

LOCKS = "/fencekeeper/locks"
EXIT_USAGE = 64
EXIT_NOT_ACQUIRED = 75


class LockModesTest(KazooClusterTestCase):
    def setUp(self):
        super().setUp()
        self.client = fencekeeper.Client(self.socket)
        self.addCleanup(self.client.close)

    def kazoo_lock(self, kind, name, identifier):
        return getattr(self.kazoo, kind)(LOCKS + "/" + name, identifier=identifier)

    def czxid(self, name, node):
        return self.kazoo.get(LOCKS + "/" + name + "/" + node)[1].czxid

    def holder_json(self, name):
        r = self.fencectl("holder", name, "--json", timeout=10)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    # ---- shared locks and kazoo ----------------------------------------------------------------

    def test_a_kazoo_write_lock_keeps_fencekeeper_readers_out(self):
        name = "modes/kazoo-writer"
        writer = self.kazoo_lock("WriteLock", name, "kazoo-writer")
        self.assertTrue(writer.acquire(timeout=5))
        writer_token = self.czxid(name, writer.node)
        try:
            with self.assertRaises(fencekeeper.TimedOut):
                self.client.acquire(name, shared=True, wait=0.5)
            info = self.client.holder(name)
            self.assertEqual([(h.token, h.mode) for h in info.holders],
                             [(writer_token, fencekeeper.LockMode.EXCLUSIVE)])
        finally:
            writer.release()
        with self.client.lock(name, shared=True, wait=5) as a, \
                self.client.lock(name, shared=True, wait=5) as b:
            self.assertGreater(a.token, writer_token)
            self.assertGreater(b.token, a.token)

    def test_b_fencekeeper_readers_share_with_kazoo_read_locks_and_exclude_its_writers(self):
        name = "modes/kazoo-readers"
        with self.client.lock(name, shared=True, owner="fk-reader") as lease:
            reader = self.kazoo_lock("ReadLock", name, "kazoo-reader")
            self.assertTrue(reader.acquire(timeout=5), "kazoo's ReadLock waited for a reader")
            try:
                info = self.client.holder(name)
                self.assertEqual([(h.owner, h.mode, h.this_sidecar) for h in info.holders],
                                 [("fk-reader", fencekeeper.LockMode.SHARED, True),
                                  ("kazoo-reader", fencekeeper.LockMode.SHARED, False)])
                self.assertEqual(info.token, lease.token)  # the first holder's
                writer = self.kazoo_lock("WriteLock", name, "kazoo-writer")
                self.assertFalse(self.try_kazoo(writer, 1), "kazoo wrote under two readers")
            finally:
                reader.release()
            self.assertTrue(lease.valid_for > 0)

    def test_c_queue_order_holds_across_both_clients(self):
        """fencekeeper reader R1 holds; a kazoo writer W queues; a fencekeeper reader R2 queued
        after W waits for W (readers never starve a writer), and the tokens rise R1 < W < R2."""
        name = "modes/order"
        r1 = self.client.acquire(name, shared=True)
        writer = self.kazoo_lock("WriteLock", name, "kazoo-writer")
        got = {}

        def write():
            got["w"] = writer.acquire(timeout=20)
            got["w_token"] = self.czxid(name, writer.node)
            time.sleep(0.3)  # the writer's critical section: R2 must not be granted in it
            got["w_done"] = time.monotonic()
            writer.release()
        t = threading.Thread(target=write)
        t.start()
        fk_harness.wait_until(lambda: len(self.kazoo.get_children(LOCKS + "/" + name)) == 2, 10,
                              "kazoo's writer to queue")
        result = {}

        def read_again():
            lease = self.client.acquire(name, shared=True, wait=20)
            result["at"] = time.monotonic()
            result["lease"] = lease
        t2 = threading.Thread(target=read_again)
        t2.start()
        fk_harness.wait_until(lambda: len(self.kazoo.get_children(LOCKS + "/" + name)) == 3, 10,
                              "the second reader to queue")
        self.assertNotIn("lease", result, "a reader queued behind a writer was granted")
        r1.release()
        t.join(30)
        t2.join(30)
        self.assertTrue(got.get("w"), got)
        r2 = result["lease"]
        self.assertGreaterEqual(result["at"], got["w_done"])
        self.assertLess(r1.token, got["w_token"])
        self.assertLess(got["w_token"], r2.token)
        r2.release()

    def test_d_a_fencekeeper_writer_keeps_kazoo_readers_out(self):
        name = "modes/fk-writer"
        with self.client.lock(name):
            reader = self.kazoo_lock("ReadLock", name, "kazoo-reader")
            self.assertFalse(self.try_kazoo(reader, 1), "kazoo read under a writer")

    # ---- semaphores ----------------------------------------------------------------------------

    def test_e_a_semaphore_holds_n_and_admits_the_next_when_one_leaves(self):
        name = "modes/semaphore"
        a = self.client.semaphore(name, permits=2, owner="a")
        b = self.client.semaphore(name, permits=2, owner="b")
        with self.assertRaises(fencekeeper.TimedOut):
            self.client.semaphore(name, permits=2, wait=0.3)
        info = self.client.holder(name)
        self.assertEqual([(h.owner, h.mode, h.permits) for h in info.holders],
                         [("a", fencekeeper.LockMode.PERMITS, 2),
                          ("b", fencekeeper.LockMode.PERMITS, 2)])
        status = self.client.status()
        modes = {lease["ownerLabel"]: (lease["mode"], lease["permits"])
                 for lease in status["leases"] if lease["name"] == name}
        self.assertEqual(modes, {"a": ("permits", 2), "b": ("permits", 2)}, status["leases"])
        got = {}
        t = threading.Thread(target=lambda: got.setdefault(
            "c", self.client.semaphore(name, permits=2, wait=10, owner="c")))
        t.start()
        fk_harness.wait_until(lambda: len(self.kazoo.get_children(LOCKS + "/" + name)) == 3, 10,
                              "the third permit to queue")
        a.release()
        t.join(15)
        self.assertIn("c", got)
        self.assertGreater(got["c"].token, b.token)
        self.assertEqual(len({a.token, b.token, got["c"].token}), 3)
        b.release()
        got["c"].release()

    def test_f_another_n_or_mode_is_refused_naming_both(self):
        name = "modes/conflict"
        with self.client.semaphore(name, permits=2):
            with self.assertRaises(fencekeeper.ModeConflict) as caught:
                self.client.semaphore(name, permits=3, wait=1)
            self.assertIn("3 permits", str(caught.exception))
            self.assertIn("2 permits", str(caught.exception))
            with self.assertRaises(fencekeeper.ModeConflict):
                self.client.lock(name, wait=1)
            r = self.fencectl("lock", name, "--permits", "5", "--wait", "1s", "--", "true")
            self.assertEqual(r.returncode, EXIT_USAGE, r.stderr)
            self.assertIn("5 permits", r.stderr)
            self.assertIn("2 permits", r.stderr)
        with self.assertRaises(fencekeeper.InvalidArgument):
            self.client.lock(name, shared=True, permits=2)
        with self.assertRaises(fencekeeper.InvalidArgument):
            self.client.semaphore(name, permits=0)

    def test_g_asyncio_shared_locks_and_semaphores(self):
        async def main():
            client = fencekeeper.AsyncClient(self.socket)
            try:
                async with client.lock("modes/aio", shared=True) as a, \
                        client.lock("modes/aio", shared=True) as b:
                    self.assertNotEqual(a.token, b.token)
                async with client.semaphore("modes/aio-sem", permits=1) as s:
                    with self.assertRaises(fencekeeper.TimedOut):
                        await client.acquire("modes/aio-sem", permits=1, wait=0.2)
                    return s.token
            finally:
                client.close()
        self.assertGreater(asyncio.run(main()), 0)

    # ---- fencectl ------------------------------------------------------------------------------

    def test_h_fencectl_shared_and_permits_run_cmd_beside_other_holders(self):
        name = "modes/fencectl"
        with self.client.lock(name, shared=True, owner="py-reader") as lease:
            r = self.fencectl("lock", name, "--shared", "--wait", "5s", "--", "sh", "-c",
                              "echo $FENCE_TOKEN")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertGreater(int(r.stdout), lease.token)
            # A writer waits for the reader: tried once, it is turned away.
            r = self.fencectl("lock", name, "--", "true")
            self.assertEqual(r.returncode, EXIT_NOT_ACQUIRED, r.stderr)
            info = self.holder_json(name)
            self.assertEqual([(h["owner"], h["mode"]) for h in info["holders"]],
                             [("py-reader", "shared")], info)
            text = self.fencectl("holder", name).stdout
            self.assertIn("held by 1 (shared)", text)
        sem = "modes/fencectl-sem"
        with self.client.semaphore(sem, permits=2, owner="py-permit"):
            r = self.fencectl("lock", sem, "--permits", "2", "--wait", "5s", "--", "sh", "-c",
                              '"$0" --socket "$1" holder "$2" --json',
                              self.cluster.fencectl_bin, self.socket, sem)
            self.assertEqual(r.returncode, 0, r.stderr)
            listed = json.loads(r.stdout)["holders"]
            self.assertEqual([(h["mode"], h["permits"]) for h in listed], [("permits", 2)] * 2)
        r = self.fencectl("lock", name, "--shared", "--permits", "2", "--", "true")
        self.assertEqual(r.returncode, EXIT_USAGE)
        self.assertIn("one or the other", r.stderr)
        r = self.fencectl("lock", name, "--permits", "0", "--", "true")
        self.assertEqual(r.returncode, EXIT_USAGE)


if __name__ == "__main__":
    unittest.main()
