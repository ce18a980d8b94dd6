"""The Python package (client_lib/python, over libfencekeeper.so) against a real ZooKeeper and a
real sidecar, and its offline install into a venv.

Run by ctest with Debian's interpreter:

    FK_BUILD_DIR=build PYTHONPATH=client_lib/python \\
    FENCEKEEPER_LIB=build/client_lib/libfencekeeper.so \\
    /usr/bin/python3 -m unittest discover -v -s tests/python
"""
import datetime
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

import fencekeeper
from fencekeeper import ErrorCode, LossReason

import fk_harness


class ClientTest(fk_harness.ClusterTestCase):

    def setUp(self):
        self.client = fencekeeper.Client(self.socket)
        self.addCleanup(self.client.close)

    def wait_free(self, name):
        fk_harness.wait_until(lambda: not self.client.holder(name).held, 10, "%s to be free" % name)

    def test_with_statement_holds_then_releases(self):
        with self.client.lock("py/with", ttl=5, owner="py-with") as lease:
            self.assertEqual(lease.name, "py/with")
            self.assertGreater(lease.token, 0)
            self.assertFalse(lease.lost)
            self.assertTrue(0 < lease.valid_for <= 5, lease.valid_for)
            info = self.client.holder("py/with")
            self.assertTrue(info.held)
            self.assertEqual((info.token, info.owner), (lease.token, "py-with"))
            self.assertGreater(lease.check(), 0)
            self.assertGreater(lease.renew(8), 0)
            self.assertGreater(lease.renew(), 0)
        self.assertEqual(lease.valid_for, 0.0)
        self.assertFalse(lease.lost)
        self.wait_free("py/with")
        with self.assertRaises(fencekeeper.NotHeld):
            lease.release()

    def test_validity_comes_from_the_sidecars_lease_table(self):
        uses, where = self.client.uses_lease_table()
        self.assertTrue(uses, where)
        self.assertTrue(where.endswith(".leases"), where)
        with self.client.lock("py/table", ttl=5) as lease:
            self.assertTrue(0 < lease.valid_for <= 5, lease.valid_for)
            self.assertTrue(self.client.table_shows_valid("py/table", lease.token))
            self.assertFalse(self.client.table_shows_valid("py/table", lease.token + 1))
            with self.assertRaises(fencekeeper.InvalidName):
                self.client.table_shows_valid("py/table\x00x", lease.token)
        self.assertEqual(lease.valid_for, 0.0)
        self.assertFalse(self.client.table_shows_valid("py/table", lease.token))

    def test_token_rises_across_two_holders(self):
        with fencekeeper.Client(self.socket) as other:
            first = self.client.acquire("py/rising")
            got = {}
            waiter = threading.Thread(
                target=lambda: got.update(lease=other.acquire("py/rising", wait=10)))
            waiter.start()
            fk_harness.wait_until(lambda: self.client.holder("py/rising").waiters == 1, 10,
                                  "the second client to queue")
            first.release()
            waiter.join(15)
            self.assertIn("lease", got, "the queued acquire did not return the lease")
            second = got["lease"]
            self.assertGreater(second.token, first.token)
            self.assertEqual(self.client.holder("py/rising").token, second.token)
            second.release()

    def test_try_lock_on_a_held_lock_raises_timed_out(self):
        with self.client.lock("py/busy"), fencekeeper.Client(self.socket) as other:
            with self.assertRaises(fencekeeper.TimedOut) as caught:
                other.lock("py/busy")
            self.assertEqual(caught.exception.code, ErrorCode.TIMED_OUT)
            self.assertIsInstance(caught.exception, TimeoutError)
            started = time.monotonic()
            with self.assertRaises(fencekeeper.TimedOut):
                other.lock("py/busy", wait=0.4)
            self.assertGreaterEqual(time.monotonic() - started, 0.35)

    def test_bad_names_and_arguments_raise_typed_errors(self):
        for name in ["", "a//b", "../x", "bad name", "x" * 201]:
            with self.subTest(name=name), self.assertRaises(fencekeeper.InvalidName) as caught:
                self.client.lock(name)
            self.assertEqual(caught.exception.code, ErrorCode.INVALID_NAME)
            self.assertIsInstance(caught.exception, ValueError)
            self.assertTrue(str(caught.exception))
        for ttl in [0, -1, float("nan"), 0.05]:  # 0.05: below the sidecar's minimum TTL
            with self.subTest(ttl=ttl), self.assertRaises(fencekeeper.InvalidArgument):
                self.client.lock("py/args", ttl=ttl)
        with self.assertRaises(TypeError):
            self.client.lock("py/args", ttl="30")
        # Owner labels: UTF-8 without control characters (the sidecar's rule; a lone surrogate
        # has no UTF-8 and is refused before sending).
        for owner in ["red\x1b[31m", "two\nlines", "del\x7f", "c1\x9b", "\udcff"]:
            with self.subTest(owner=owner), self.assertRaises(fencekeeper.InvalidOwner) as caught:
                self.client.acquire("py/args", owner=owner)
            self.assertEqual(caught.exception.code, ErrorCode.INVALID_OWNER)
            self.assertIsInstance(caught.exception, ValueError)
        with self.assertRaises(fencekeeper.SidecarUnavailable) as caught:
            fencekeeper.Client(os.path.join(self.cluster.tmp, "nothing.sock"))
        self.assertIsInstance(caught.exception, ConnectionError)

    def test_lost_callback_fires_on_ttl_expiry_without_check_in(self):
        calls = []
        from_callback = []
        done = threading.Event()

        def on_lost(token, reason):
            calls.append((token, reason))
            try:
                self.client.holder("py/any")
            except fencekeeper.FencekeeperError as e:
                from_callback.append(type(e))
            done.set()

        lease = self.client.acquire("py/no-check-in", ttl=0.6, renew_only_if_checked_in=True,
                                    on_lost=on_lost)
        self.assertIsNone(lease.loss_reason)
        self.assertTrue(done.wait(10), "on_lost was not called")
        time.sleep(0.3)
        self.assertEqual(calls, [(lease.token, LossReason.TTL_EXPIRED)])
        self.assertIsInstance(calls[0][1], LossReason)
        # The callback runs on the client's I/O thread: calls that need the sidecar refuse.
        self.assertEqual(from_callback, [fencekeeper.WrongThread])
        self.assertTrue(lease.lost)
        self.assertEqual(lease.loss_reason, LossReason.TTL_EXPIRED)
        self.assertEqual(lease.valid_for, 0.0)
        with self.assertRaises(fencekeeper.Expired) as caught:
            lease.renew()
        self.assertIsInstance(caught.exception, fencekeeper.Lost)
        del lease
        self.wait_free("py/no-check-in")

    def test_lost_callback_stays_silent_while_the_app_checks_in(self):
        calls = []
        with self.client.lock("py/check-in", ttl=0.6, renew_only_if_checked_in=True,
                              on_lost=lambda token, reason: calls.append(reason)) as lease:
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline:
                lease.check_in()
                time.sleep(0.1)
                self.assertFalse(lease.lost)
        time.sleep(0.8)
        self.assertEqual(calls, [])

    def test_keep_alive_toggle_and_a_block_that_lost_its_lease_raises(self):
        with self.assertRaises(fencekeeper.Expired):
            with self.client.lock("py/keep-alive", ttl=0.6, keep_alive=False) as lease:
                lease.set_keep_alive(True)
                time.sleep(1.5)
                self.assertFalse(lease.lost)
                self.assertGreater(lease.check(), 0)
                lease.set_keep_alive(False)
                fk_harness.wait_until(lambda: lease.lost, 10, "the lease to expire")

    def test_holder(self):
        free = self.client.holder("py/holder")
        self.assertEqual((free.held, free.token, free.owner, free.since), (False, 0, "", None))
        with self.client.lock("py/holder", owner="py-holder") as lease:
            info = self.client.holder("py/holder")
            self.assertIsInstance(info, fencekeeper.HolderInfo)
            self.assertTrue(info.held and info.this_sidecar)
            self.assertEqual((info.token, info.owner, info.waiters),
                             (lease.token, "py-holder", 0))
            now = datetime.datetime.now(datetime.timezone.utc)
            self.assertLess(abs((info.since - now).total_seconds()), 60)
            r = self.fencectl("holder", "py/holder", "--json")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(r.stdout)["token"], lease.token)

    def test_status_is_the_status_sockets_document(self):
        with self.client.lock("py/status", owner="py-status") as lease, \
                fencekeeper.Client(self.socket) as other:
            waiter = threading.Thread(
                target=lambda: other.acquire("py/status", wait=10, owner="py-waiter").release())
            waiter.start()
            self.addCleanup(waiter.join, 15)

            def queued():  # its node made and looked at
                st = self.client.status()
                return st if [w["state"] for w in st["waiterList"]] == ["waiting"] else None
            st = fk_harness.wait_until(queued, 10, "the waiter to be queued")
            self.assertEqual((st["zkState"], st["ready"], st["healthy"]),
                             ("connected", True, True), st)
            self.assertEqual((st["leasesHeld"], st["listingTruncated"]), (1, False), st)
            self.assertGreater(st["safeForMs"], 0)
            self.assertTrue(st["version"] and st["instanceId"], st)
            [held] = [l for l in st["leases"] if l["name"] == "py/status"]
            self.assertEqual((int(held["token"]), held["ownerLabel"], held["state"],
                              held["clientPid"]), (lease.token, "py-status", "held", os.getpid()))
            self.assertGreaterEqual(int(held["heldForMs"]), 0)
            [queued] = st["waiterList"]
            self.assertEqual((queued["name"], queued["ownerLabel"], queued["state"],
                              queued["position"]), ("py/status", "py-waiter", "waiting", 1))
        waiter.join(15)
        self.assertFalse(waiter.is_alive())
        # Not connected: refused like every other call.
        closed = fencekeeper.Client(self.socket)
        closed.close()
        with self.assertRaises(fencekeeper.SidecarUnavailable):
            closed.status()

    def test_close_releases_leases_and_default_socket_comes_from_the_environment(self):
        os.environ["FENCEKEEPER_SOCKET"] = self.socket
        try:
            client = fencekeeper.Client()
        finally:
            del os.environ["FENCEKEEPER_SOCKET"]
        lease = client.acquire("py/close", owner="py-close")
        self.assertTrue(client.connected)
        client.close()
        client.close()
        self.assertTrue(client.closed)
        self.assertFalse(client.connected)
        self.assertIsNone(lease.loss_reason)  # released by its owner, not lost
        self.assertEqual(lease.valid_for, 0.0)
        with self.assertRaises(fencekeeper.SidecarUnavailable):
            lease.renew()
        with self.assertRaises(fencekeeper.SidecarUnavailable):
            client.holder("py/close")
        self.wait_free("py/close")

    def test_the_client_reconnects_by_itself_after_the_sidecar_restarts(self):
        socket = os.path.join(self.cluster.tmp, "restart.sock")
        first = self.cluster.start_sidecar(socket=socket)
        client = fencekeeper.Client(socket)
        self.addCleanup(client.close)
        reasons = []
        lease = client.acquire("py/restart", ttl=30,
                               on_lost=lambda token, reason: reasons.append(reason))
        first.proc.kill()  # no goodbye: the connection just drops
        first.proc.wait()
        self.cluster.sidecars.remove(first)  # stop() wants the others to exit 0 on SIGTERM
        fk_harness.wait_until(lambda: reasons, 10, "the loss to be reported")
        self.assertEqual(reasons, [LossReason.CONNECTION_LOST])
        self.assertTrue(lease.lost)
        self.assertEqual(lease.loss_reason, LossReason.CONNECTION_LOST)
        self.assertFalse(client.connected)
        with self.assertRaises(fencekeeper.SidecarUnavailable) as raised:
            client.holder("py/restart")
        self.assertIn("not connected to the sidecar", str(raised.exception))

        self.cluster.start_sidecar(socket=socket)  # the same socket, a new sidecar
        fk_harness.wait_until(lambda: client.connected, 10, "the client to reconnect")
        # The old session's node goes when that session expires; then the same client gets it.
        with client.lock("py/restart", wait=15) as again:
            self.assertGreater(again.token, lease.token)
            self.assertTrue(client.holder("py/restart").held)

    def make_venv(self):
        """A fresh venv (Debian's interpreter, system site packages for setuptools) and the
        environment to run it in; skips where venv or pip is missing."""
        python = "/usr/bin/python3"
        probe = subprocess.run([python, "-c", "import venv, ensurepip"], capture_output=True)
        if probe.returncode != 0:
            self.skipTest("%s has no venv/ensurepip (python3-venv, python3-pip: scripts/setup.sh "
                          "installs them)" % python)
        tmp = tempfile.mkdtemp(prefix="fk-venv-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        venv = os.path.join(tmp, "venv")
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "FENCEKEEPER_LIB", "FK_BUILD_DIR")}
        env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PIP_NO_INDEX="1")
        self.run_ok([python, "-m", "venv", "--system-site-packages", venv], env, tmp)
        return tmp, venv, env

    def run_ok(self, cmd, env, cwd):
        r = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, "%s:\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
        return r.stdout

    def lock_with(self, venv, env, cwd):
        """Takes a lock with the venv's package; returns where the package and the library it
        loaded are."""
        script = ("import fencekeeper\n"
                  "from fencekeeper import _native\n"
                  "with fencekeeper.Client(%r) as c, c.lock('py/venv') as lease:\n"
                  "    assert lease.token > 0\n"
                  "print(fencekeeper.__file__, _native.lib()._name)\n" % self.socket)
        return self.run_ok([os.path.join(venv, "bin", "python"), "-c", script], env, cwd).split()

    def test_installs_offline_into_a_venv_leaving_the_source_tree_as_it_was(self):
        tmp, venv, env = self.make_venv()
        source = os.path.join(fk_harness.REPO, "client_lib", "python")
        before = sorted(os.listdir(source))
        self.run_ok([os.path.join(venv, "bin", "pip"), "install", "--no-build-isolation", source],
                    dict(env, FENCEKEEPER_LIB=os.path.abspath(os.environ["FENCEKEEPER_LIB"])),
                    tmp)
        self.assertEqual(sorted(os.listdir(source)), before, "pip wrote into the source tree")
        package, _ = self.lock_with(
            venv, dict(env, FENCEKEEPER_LIB=os.path.abspath(os.environ["FENCEKEEPER_LIB"])), tmp)
        self.assertTrue(package.startswith(venv + os.sep), package)

    def test_a_wheel_carries_the_library_and_needs_nothing_else(self):
        tmp, venv, env = self.make_venv()
        dist = os.path.join(tmp, "dist")
        self.run_ok(["bash", os.path.join(fk_harness.REPO, "client_lib", "python", "build_wheel.sh"),
                     os.path.abspath(os.environ["FENCEKEEPER_LIB"]), dist], env, tmp)
        wheels = os.listdir(dist)
        self.assertEqual(len(wheels), 1, wheels)
        self.assertRegex(wheels[0], r"^fencekeeper-0\.1\.0-py3-none-linux_\w+\.whl$")
        self.run_ok([os.path.join(venv, "bin", "pip"), "install", os.path.join(dist, wheels[0])],
                    env, tmp)
        # No FENCEKEEPER_LIB, no build tree: the library comes from the wheel.
        package, library = self.lock_with(venv, env, tmp)
        self.assertTrue(package.startswith(venv + os.sep), package)
        self.assertEqual(os.path.dirname(library), os.path.dirname(package))


if __name__ == "__main__":
    unittest.main()
