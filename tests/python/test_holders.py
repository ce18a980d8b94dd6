"""Holder watches and leader election from Python, against a real ZooKeeper and sidecar: the
iterator and the async iterator, fencekeeper.Election, `fencectl elect` (standbys, FENCE_TOKEN,
exit 76 on a loss, --rerun), and kazoo's Election on the same path taking its turn in queue order.

Needs kazoo (Debian's python3-kazoo), as test_kazoo_interop.py.
"""
import asyncio
import os
import signal
import subprocess
import threading
import time
import unittest

from kazoo.recipe.election import Election as KazooElection

import fencekeeper
import fk_harness
from kazoo_case import KazooClusterTestCase

LOCKS = "/fencekeeper/locks"
EXIT_LEASE_LOST = 76


def next_change(watch, state, timeout=15):
    """Reads `watch` until a change in `state` comes (bounded); returns it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        change = watch.get(timeout=max(0.0, deadline - time.monotonic()))
        if change is not None and change.state is state:
            return change
    raise AssertionError("no %s change within %s s" % (state, timeout))


class HolderWatchTest(fk_harness.ClusterTestCase):
    # kazoo caches that a lock parent exists: the sidecar must not create CONTAINER parents.
    SIDECAR_ARGS = ("--persistent-parents",)

    def setUp(self):
        self.client = fencekeeper.Client(self.socket)
        self.addCleanup(self.client.close)
        self.other = fencekeeper.Client(self.socket)
        self.addCleanup(self.other.close)

    def test_the_iterator_gives_the_holder_now_then_each_change(self):
        with self.client.watch_holder("py/watch") as watch:
            first = next_change(watch, fencekeeper.HolderState.FREE)
            self.assertIsNone(first.holder)
            with self.other.lock("py/watch", owner="worker-1") as lease:
                held = next_change(watch, fencekeeper.HolderState.HELD)
                self.assertEqual(held.holder.token, lease.token)
                self.assertEqual(held.holder.owner, "worker-1")
            next_change(watch, fencekeeper.HolderState.FREE)
        self.assertEqual(list(watch), [], "a closed watch ends its iteration")

    def test_the_async_iterator_in_an_event_loop(self):
        async def scenario():
            async with fencekeeper.AsyncClient(self.socket) as client:
                async with client.watch_holder("py/async-watch") as watch:
                    seen = []

                    async def read():
                        async for change in watch:
                            seen.append(change)
                            if change.state is fencekeeper.HolderState.HELD:
                                return change

                    reader = asyncio.ensure_future(read())
                    async with client.lock("py/async-watch", owner="async-1") as lease:
                        held = await asyncio.wait_for(reader, 15)
                        self.assertEqual(held.holder.token, lease.token)
                        self.assertEqual(held.holder.owner, "async-1")
                    self.assertEqual(seen[0].state, fencekeeper.HolderState.FREE)

        asyncio.run(scenario())

    def test_an_invalid_name_is_refused_with_why(self):
        with self.assertRaises(fencekeeper.InvalidName) as e:
            self.client.watch_holder("../x")
        self.assertIn(":", str(e.exception))

    def test_election_campaign_resign_and_observe(self):
        a = self.client.election("py/elect", owner="node-a", ttl=10)
        b = self.other.election("py/elect", owner="node-b", ttl=10)
        with a.observe() as watch:
            leading_a = a.campaign(wait=5)
            self.assertEqual(next_change(watch, fencekeeper.HolderState.HELD).holder.owner,
                             "node-a")
            self.assertEqual(a.leader.owner, "node-a")
            self.assertEqual(a.leader.token, leading_a.token)
            got = {}
            standby = threading.Thread(target=lambda: got.update(lease=b.campaign()))
            standby.start()
            fk_harness.wait_until(lambda: self.client.holder("py/elect").waiters == 1, 10,
                                  "node-b to stand by")
            self.assertTrue(standby.is_alive(), "b campaigns while a leads")
            a.resign()
            standby.join(15)
            self.assertFalse(standby.is_alive())
            change = next_change(watch, fencekeeper.HolderState.HELD)
            self.assertEqual(change.holder.owner, "node-b")
            self.assertGreater(got["lease"].token, leading_a.token)
            b.resign()
            next_change(watch, fencekeeper.HolderState.FREE)


class ElectionInteropTest(KazooClusterTestCase):
    def setUp(self):
        super().setUp()
        self.client = fencekeeper.Client(self.socket)
        self.addCleanup(self.client.close)

    def elect(self, name, owner, command, *extra):
        """Starts `fencectl elect NAME --owner OWNER ... -- sh -c COMMAND` in its own session."""
        log = open(os.path.join(self.cluster.tmp, "elect-%s.log" % owner), "w+")
        self.addCleanup(log.close)
        proc = subprocess.Popen(
            [self.cluster.fencectl_bin, "--socket", self.socket, "elect", name, "--owner", owner,
             "--ttl", "6s"] + list(extra) + ["--", "sh", "-c", command],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.addCleanup(fk_harness.stop_process, proc, 5)
        return proc, log

    def read(self, log):
        log.flush()
        with open(log.name) as f:
            return f.read()

    def test_fencectl_elect_and_a_kazoo_election_lead_in_queue_order(self):
        name = "py/interop"
        marks = self.cluster.tmp
        # fencectl leads first; CMD writes the leader's token, then waits to be told to resign.
        first, first_log = self.elect(
            name, "fk-first",
            'echo "$FENCE_TOKEN" > %s/first.token; while [ ! -e %s/first.done ]; do sleep 0.05; '
            'done' % (marks, marks))
        fk_harness.wait_until(lambda: os.path.exists(os.path.join(marks, "first.token")), 15,
                              "fencectl elect to lead")
        # kazoo's Election queues next, a second fencectl after it.
        kazoo_leads = threading.Event()
        kazoo_resign = threading.Event()

        def kazoo_leader():
            kazoo_leads.set()
            kazoo_resign.wait(30)

        kazoo_election = KazooElection(self.kazoo, LOCKS + "/" + name, "kazoo-contender")
        kazoo_thread = threading.Thread(target=kazoo_election.run, args=(kazoo_leader,))
        kazoo_thread.start()
        self.addCleanup(kazoo_thread.join, 15)
        self.addCleanup(kazoo_resign.set)
        fk_harness.wait_until(lambda: self.client.holder(name).waiters == 1, 15,
                              "kazoo to stand by")
        second, second_log = self.elect(
            name, "fk-second", 'echo "$FENCE_TOKEN" > %s/second.token; sleep 30' % marks)
        fk_harness.wait_until(lambda: self.client.holder(name).waiters == 2, 15,
                              "the second fencectl to stand by")
        self.assertEqual(kazoo_election.contenders()[:3], ["fk-first", "kazoo-contender",
                                                           "fk-second"])
        self.assertIn("owner 'fk-first'", self.read(second_log), "standbys print the leader")

        open(os.path.join(marks, "first.done"), "w").close()  # the first leader resigns
        self.assertEqual(first.wait(15), 0)
        self.assertTrue(kazoo_leads.wait(15), "kazoo leads next, in queue order")
        self.assertFalse(os.path.exists(os.path.join(marks, "second.token")))
        self.assertEqual(self.client.holder(name).owner, "kazoo-contender")
        kazoo_resign.set()  # kazoo's leader function returns: it resigns
        fk_harness.wait_until(lambda: os.path.exists(os.path.join(marks, "second.token")), 15,
                              "the second fencectl to lead after kazoo")
        self.assertGreater(self.token(marks, "second"), self.token(marks, "first"))

    @staticmethod
    def token(marks, who):
        with open(os.path.join(marks, "%s.token" % who)) as f:
            return int(f.read())

    def test_a_lost_leadership_exits_76_or_campaigns_again_with_rerun(self):
        for rerun in (False, True):
            name = "py/lost-%s" % rerun
            extra = ("--rerun",) if rerun else ()
            proc, log = self.elect(name, "leader", "sleep 60", *extra)
            fk_harness.wait_until(lambda: self.client.holder(name).held, 15, "fencectl to lead")
            token = self.client.holder(name).token
            # The leader's node deleted behind its back (an operator): leadership is lost.
            node = [c for c in self.kazoo.get_children(LOCKS + "/" + name)][0]
            self.kazoo.delete(LOCKS + "/" + name + "/" + node)
            if not rerun:
                self.assertEqual(proc.wait(15), EXIT_LEASE_LOST, self.read(log))
                continue
            fk_harness.wait_until(
                lambda: self.client.holder(name).held and self.client.holder(name).token > token,
                15, "fencectl --rerun to lead again")
            self.assertIn("campaigning again", self.read(log))
            self.assertIsNone(proc.poll())


if __name__ == "__main__":
    unittest.main()
