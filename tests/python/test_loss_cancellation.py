"""Loss as cancellation in the Python client: a lease whose node is deleted behind its back (by
kazoo, as an operator would) sets its ``lost_event``, makes its ``loss_fd`` readable, cancels
the ``async with`` body (which raises the typed loss), and with ``interrupt_main`` interrupts the
main thread's ``with`` body. And jeopardy: a frozen ZooKeeper (SIGSTOP) puts a lease at risk
before it is lost (``on_risk``, and ``fencectl lock --at-risk-signal``), and a short freeze is
safe again. Against a real ZooKeeper and sidecar.

    FK_BUILD_DIR=build /usr/bin/python3 -m unittest discover -v -s tests/python \\
        -p test_loss_cancellation.py
"""
import asyncio
import os
import select
import signal
import subprocess
import threading
import time
import unittest

import fencekeeper
import fk_harness
from kazoo_case import KazooClusterTestCase

LOCKS = "/fencekeeper/locks"
BOUND = 10  # seconds: every wait below is bounded by it


class LossCancellationTest(KazooClusterTestCase):
    def setUp(self):
        super().setUp()
        self.client = fencekeeper.Client(self.socket)
        self.addCleanup(self.client.close)

    def delete_behind_its_back(self, name):
        for child in self.kazoo.get_children(LOCKS + "/" + name):
            self.kazoo.delete(LOCKS + "/" + name + "/" + child)

    def test_a_loss_sets_the_event_and_makes_the_fd_readable(self):
        name = "cancel/sync"
        lease = self.client.acquire(name)
        self.assertFalse(lease.lost_event.is_set())
        fd = lease.loss_fd
        self.assertGreaterEqual(fd, 0)
        self.assertEqual(select.select([fd], [], [], 0)[0], [])
        self.delete_behind_its_back(name)
        deleted = time.monotonic()
        self.assertTrue(lease.lost_event.wait(BOUND), "lost_event not set")
        print("lost_event set %.1f ms after kazoo's delete returned" %
              ((time.monotonic() - deleted) * 1000))
        self.assertEqual(select.select([fd], [], [], BOUND)[0], [fd])
        self.assertEqual(lease.loss_reason, fencekeeper.LossReason.RELEASED_ELSEWHERE)
        with self.assertRaises(fencekeeper.Lost):  # the work was not covered to the end
            lease.release()

    def test_b_a_release_leaves_the_event_and_the_fd_alone(self):
        lease = self.client.acquire("cancel/released")
        fd = lease.loss_fd
        lease.release()
        with self.client.lock("cancel/released", wait=5):  # the release went through
            self.assertFalse(lease.lost_event.is_set())
            self.assertEqual(select.select([fd], [], [], 0)[0], [])

    def test_c_the_async_body_is_cancelled_and_raises_the_typed_loss(self):
        name = "cancel/async"
        reached = {}

        async def main():
            client = fencekeeper.AsyncClient(self.socket)
            try:
                with self.assertRaises(fencekeeper.Lost) as caught:
                    async with client.lock(name) as lease:
                        threading.Thread(target=self.delete_behind_its_back, args=(name,)).start()
                        reached["started"] = time.monotonic()
                        await asyncio.sleep(BOUND)  # the work: cut short by the loss
                        reached["finished"] = True
                reached["reason"] = caught.exception.reason
                reached["token"] = lease.token
                # The task itself was not cancelled: it goes on.
                await asyncio.sleep(0)
                reached["after"] = True
            finally:
                client.close()

        asyncio.run(asyncio.wait_for(main(), 3 * BOUND))
        self.assertNotIn("finished", reached)
        self.assertTrue(reached.get("after"))
        self.assertEqual(reached["reason"], fencekeeper.LossReason.RELEASED_ELSEWHERE)

    def test_d_a_task_cancelled_by_its_caller_is_not_turned_into_a_loss(self):
        async def main():
            client = fencekeeper.AsyncClient(self.socket)
            try:
                async def body():
                    async with client.lock("cancel/caller"):
                        await asyncio.sleep(BOUND)
                task = asyncio.create_task(body())
                await asyncio.sleep(0.1)
                task.cancel()
                with self.assertRaises(asyncio.CancelledError):
                    await task
            finally:
                client.close()
        asyncio.run(main())

    def test_e_interrupt_main_turns_the_with_body_into_the_typed_loss(self):
        # Python's own SIGINT handler, whatever this process was started with (a background job
        # of a script starts with SIGINT ignored, and then interrupt_main is refused).
        self.addCleanup(signal.signal, signal.SIGINT,
                        signal.signal(signal.SIGINT, signal.default_int_handler))
        name = "cancel/interrupt"
        steps = 0
        with self.assertRaises(fencekeeper.Lost) as caught:
            with self.client.lock(name, interrupt_main=True):
                threading.Thread(target=self.delete_behind_its_back, args=(name,)).start()
                deadline = time.monotonic() + BOUND
                while time.monotonic() < deadline:  # the work: pure Python, interruptible
                    steps += 1
                    time.sleep(0.001)
        self.assertEqual(caught.exception.reason, fencekeeper.LossReason.RELEASED_ELSEWHERE)
        self.assertIsInstance(caught.exception.__cause__, KeyboardInterrupt)
        self.assertGreater(steps, 0)

    def test_f_interrupt_main_is_refused_where_sigint_would_interrupt_nobody(self):
        self.addCleanup(signal.signal, signal.SIGINT, signal.signal(signal.SIGINT, signal.SIG_IGN))
        with self.assertRaises(fencekeeper.InvalidArgument) as caught:
            self.client.acquire("cancel/ignored", interrupt_main=True)
        self.assertIn("ignored", str(caught.exception))



class _Freezing(fk_harness.ClusterTestCase):
    """Freezes the class's ZooKeeper (and thaws it whatever happens). A freeze past the loss may
    end in the session's expiry a moment after the thaw, losing whatever is held then: each class
    has one such freeze, last."""

    SIDECAR_ARGS = ("--session-timeout", "4s")

    def setUp(self):
        self.client = fencekeeper.Client(self.socket)
        self.addCleanup(self.client.close)
        self.heard = []
        self.heard_lock = threading.Lock()

    def hear(self, what, left=0.0):
        with self.heard_lock:
            self.heard.append((what, left))

    def has(self, what):
        with self.heard_lock:
            return any(w == what for w, _ in self.heard)

    def freeze(self):
        for pid in self.cluster.zk_pids:
            os.kill(pid, signal.SIGSTOP)
        self.addCleanup(self.thaw)

    def thaw(self):
        for pid in self.cluster.zk_pids:
            os.kill(pid, signal.SIGCONT)

    def lock(self, name):
        return self.client.acquire(
            name, wait=10, on_risk=lambda token, at_risk, left:
            self.hear("risk" if at_risk else "safe", left),
            on_lost=lambda token, reason: self.hear("lost"))



class JeopardyTest(_Freezing):
    def test_b_a_frozen_zookeeper_puts_the_lease_at_risk_before_it_is_lost(self):
        lease = self.lock("jeopardy/frozen")
        self.freeze()
        fk_harness.wait_until(lambda: self.has("lost"), 3 * BOUND, "the lease to be lost")
        self.thaw()
        with self.heard_lock:
            heard = list(self.heard)
        self.assertEqual(heard[0][0], "risk", heard)
        self.assertTrue(0 < heard[0][1] < 4, heard)
        self.assertEqual(heard[-1][0], "lost", heard)
        self.assertTrue(lease.lost)
        # The sidecar vouches again once ZooKeeper answers: a new lease is granted.
        with self.client.lock("jeopardy/frozen", wait=BOUND):
            pass

    def test_a_a_short_freeze_is_at_risk_then_safe_again(self):
        lease = self.lock("jeopardy/short")
        self.freeze()
        fk_harness.wait_until(lambda: self.has("risk"), 3 * BOUND, "the lease to be at risk")
        self.assertTrue(lease.at_risk)
        self.thaw()
        fk_harness.wait_until(lambda: self.has("safe"), 3 * BOUND, "the lease to be safe again")
        self.assertFalse(self.has("lost"))
        self.assertFalse(lease.at_risk)
        self.assertGreater(lease.check(), 0)
        lease.release()



class FencectlJeopardyTest(_Freezing):
    def test_fencectl_forwards_at_risk_to_cmd_as_the_signal_asked_for(self):
        name = "jeopardy/fencectl"
        heard = os.path.join(self.cluster.tmp, "cmd-heard")
        ready = os.path.join(self.cluster.tmp, "cmd-ready")
        script = ('trap \'echo at-risk >> "$0"\' USR1; touch "$1"; '
                  'while :; do sleep 0.05; done')
        proc = subprocess.Popen(
            [self.cluster.fencectl_bin, "--socket", self.socket, "lock", name, "--wait", "10s",
             "--at-risk-signal", "USR1", "--", "sh", "-c", script, heard, ready],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True, start_new_session=True)
        self.addCleanup(fk_harness.stop_process, proc, 5)
        fk_harness.wait_until(lambda: os.path.exists(ready), BOUND, "CMD to start")
        self.freeze()
        fk_harness.wait_until(lambda: proc.poll() is not None, 3 * BOUND, "fencectl to end")
        self.thaw()
        stderr = proc.stderr.read()
        proc.stderr.close()
        self.assertEqual(proc.returncode, 76, stderr)  # the lease was lost
        with open(heard) as f:
            self.assertIn("at-risk", f.read())
        self.assertLess(stderr.index("at risk"), stderr.index("lost"), stderr)
        r = self.fencectl("lock", name, "--at-risk-signal", "NOPE", "--", "true")
        self.assertEqual(r.returncode, 64, r.stderr)


if __name__ == "__main__":
    unittest.main()
