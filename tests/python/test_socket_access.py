"""Who may connect (docs/security.md): the sidecar's socket directory whatever the umask, its own
subdirectory where the configured directory is writable by others, an impostor under another uid
refused by fencectl and the Python client (the C ABI over the C++ client), --expect-uid, only the
sidecar's own socket removed; the sidecar's detail and NUL names in the Python client.

The impostor is tests/fk-fake-sidecar (every answer: limitReached with a detail) run with
`setpriv --reuid=65534`: these tests run as root, as the README's test command does.
"""

import os
import socket as socketlib
import stat
import subprocess
import unittest

import fencekeeper

import fk_harness

OTHER = 65534
DETAIL = "fake sidecar: maxLeases 1 reached (raise --max-leases)"


def mode_of(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


class SocketAccessTest(unittest.TestCase):
    """One ZooKeeper for the class; each test starts the sidecars and impostors it needs."""

    @classmethod
    def setUpClass(cls):
        cls.cluster = fk_harness.Cluster(prefix="fk-access-")
        cls.cluster.start_zookeeper()
        os.chmod(cls.cluster.tmp, 0o755)  # the other uid must reach the directories inside
        cls.fake_bin = fk_harness.find_binary("tests/fk-fake-sidecar")

    @classmethod
    def tearDownClass(cls):
        problems = cls.cluster.stop()
        if problems:
            raise AssertionError("; ".join(problems))

    def setUp(self):
        self.dir = os.path.join(self.cluster.tmp, self.id().rsplit(".", 1)[-1][5:25])
        os.mkdir(self.dir)
        os.chmod(self.dir, 0o755)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def shared_dir(self, name="shared"):
        """A directory everyone may write, as a Kubernetes emptyDir is."""
        path = self.path(name)
        os.mkdir(path)
        os.chmod(path, 0o777)
        return path

    def start_sidecar(self, socket, *args, umask=None):
        old = os.umask(umask) if umask is not None else None
        try:
            return self.cluster.start_sidecar(*args, socket=socket)
        finally:
            if old is not None:
                os.umask(old)

    def stop_sidecar(self, sidecar):
        self.assertEqual(fk_harness.stop_process(sidecar.proc, grace=15), 0)
        self.cluster.sidecars.remove(sidecar)

    def failed_start(self, socket):
        """Runs a sidecar that must refuse to start; returns its output."""
        r = subprocess.run(fk_harness.DIE_WITH_PARENT +
                           [self.cluster.fencekeeper, "--zk", self.cluster.connect, "--socket",
                            socket], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=30)
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        return r.stdout + r.stderr

    def as_other(self, *argv):
        return ["setpriv", "--reuid=%d" % OTHER, "--regid=%d" % OTHER, "--clear-groups",
                "--pdeathsig", "KILL", "--"] + list(argv)

    def start_impostor(self, socket):
        """The fake sidecar at `socket` exactly, under the other uid, until the test ends."""
        proc = subprocess.Popen(self.as_other(self.fake_bin, socket, DETAIL),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
        self.addCleanup(proc.stdout.close)
        self.addCleanup(fk_harness.stop_process, proc, 5)
        self.assertEqual(proc.stdout.readline().strip(), "ready")
        return proc

    def fencectl(self, socket, *args, env=None):
        return subprocess.run([self.cluster.fencectl_bin, "--socket", socket] + list(args),
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=30, env=env)

    def assert_refused(self, socket, server_uid, expected_uid):
        """fencectl and the Python client refuse the server at `socket`, naming both uids."""
        r = self.fencectl(socket, "status")
        self.assertEqual(r.returncode, 69, r.stdout + r.stderr)
        for uid in (server_uid, expected_uid):
            self.assertIn("uid %d" % uid, r.stderr)
        self.assertNotIn(DETAIL, r.stderr)  # nothing was asked of it
        with self.assertRaises(fencekeeper.SidecarUnavailable) as caught:
            fencekeeper.Client(socket)
        for uid in (server_uid, expected_uid):
            self.assertIn("uid %d" % uid, str(caught.exception))

    # ---- the sidecar's directory -------------------------------------------------------------

    def test_umask_000_gives_a_0750_directory_and_a_0660_socket(self):
        socket = self.path("run", "fk", "fk.sock")
        sidecar = self.start_sidecar(socket, umask=0)
        self.assertEqual(mode_of(self.path("run", "fk")), 0o750)
        self.assertEqual(mode_of(self.path("run")), 0o755)
        self.assertEqual(mode_of(socket), 0o660)
        self.stop_sidecar(sidecar)
        self.assertFalse(os.path.exists(socket))

    def test_socket_world_gives_a_0755_directory(self):
        socket = self.path("world", "fk.sock")
        sidecar = self.start_sidecar(socket, "--socket-world", umask=0o077)
        self.assertEqual(mode_of(self.path("world")), 0o755)
        self.assertEqual(mode_of(socket), 0o777)
        self.stop_sidecar(sidecar)

    def test_a_directory_others_can_write_gets_a_subdirectory_of_its_own(self):
        shared = self.shared_dir()
        configured = os.path.join(shared, "fk.sock")
        sidecar = self.start_sidecar(configured, umask=0)  # ready: fencectl found it
        real = os.path.join(shared, "fk.sock.d", "fk.sock")
        self.assertFalse(os.path.lexists(configured))
        self.assertEqual(mode_of(os.path.dirname(real)), 0o750)
        self.assertTrue(stat.S_ISSOCK(os.lstat(real).st_mode))
        with fencekeeper.Client(configured) as client:
            with client.lock("access/shared", ttl=5) as lease:
                self.assertGreater(lease.token, 0)
        self.assertEqual(mode_of(shared), 0o777)  # not the sidecar's to change
        self.stop_sidecar(sidecar)
        self.assertFalse(os.path.exists(real))

    def test_a_directory_of_another_uid_is_refused(self):
        other = self.path("other")
        os.mkdir(other)
        os.chown(other, OTHER, OTHER)
        out = self.failed_start(os.path.join(other, "fk.sock"))
        self.assertIn("owned by uid %d" % OTHER, out)

    # ---- impostors ---------------------------------------------------------------------------

    def test_an_impostor_that_pre_created_the_subdirectory_is_refused(self):
        shared = self.shared_dir()
        configured = os.path.join(shared, "fk.sock")
        subprocess.run(self.as_other("mkdir", "-m", "0755", configured + ".d"), check=True)
        self.start_impostor(os.path.join(configured + ".d", "fk.sock"))
        out = self.failed_start(configured)
        self.assertIn("owned by uid %d" % OTHER, out)
        self.assert_refused(configured, OTHER, 0)
        # Told that the other uid is the sidecar's, the clients trust it: the check is what refused.
        r = self.fencectl(configured, "--expect-uid", str(OTHER), "status")
        self.assertIn(DETAIL, r.stderr)
        with fencekeeper.Client(configured, expect_uid=OTHER) as client:
            with self.assertRaises(fencekeeper.LimitReached) as caught:
                client.acquire("access/x")
            self.assertEqual(str(caught.exception), "limit reached: " + DETAIL)

    def test_an_impostor_that_replaced_the_subdirectory_is_refused_and_its_socket_kept(self):
        shared = self.shared_dir()
        configured = os.path.join(shared, "fk.sock")
        sidecar = self.start_sidecar(configured)
        own = configured + ".d"
        # In a directory without the sticky bit anyone may rename what is in it.
        subprocess.run(self.as_other("mv", own, os.path.join(shared, "moved")), check=True)
        subprocess.run(self.as_other("mkdir", "-m", "0755", own), check=True)
        impostor = os.path.join(own, "fk.sock")
        self.start_impostor(impostor)
        self.assert_refused(configured, OTHER, 0)
        inode = os.lstat(impostor).st_ino
        self.stop_sidecar(sidecar)
        self.assertEqual(os.lstat(impostor).st_ino, inode)  # not the sidecar's: left alone

    def test_a_socket_in_a_directory_others_can_write_is_not_used(self):
        # The observed attack: a 0777 socket directory (umask 000), the socket replaced there.
        legacy = self.shared_dir("legacy")
        socket = os.path.join(legacy, "fk.sock")
        self.start_impostor(socket)
        r = self.fencectl(socket, "status")  # looks in legacy/fk.sock.d/: nobody there
        self.assertEqual(r.returncode, 69, r.stderr)
        self.assertNotIn(DETAIL, r.stderr)
        with self.assertRaises(fencekeeper.SidecarUnavailable):
            fencekeeper.Client(socket)

    # ---- --expect-uid ------------------------------------------------------------------------

    def test_expect_uid(self):
        socket = self.path("run", "fk.sock")
        sidecar = self.start_sidecar(socket)
        r = self.fencectl(socket, "--expect-uid", "0", "status")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.fencectl(socket, "--expect-uid", "12345", "status")
        self.assertEqual(r.returncode, 69)
        self.assertIn("runs as uid 0, expected uid 12345", r.stderr)
        env = dict(os.environ, FENCEKEEPER_EXPECT_UID="12345")
        r = self.fencectl(socket, "status", env=env)
        self.assertIn("expected uid 12345", r.stderr)
        self.assertEqual(self.fencectl(socket, "--expect-uid", "x", "status").returncode, 64)
        with fencekeeper.Client(socket, expect_uid=0) as client:
            self.assertFalse(client.holder("access/expect").held)
        with self.assertRaises(fencekeeper.SidecarUnavailable) as caught:
            fencekeeper.Client(socket, expect_uid=12345)
        self.assertIn("runs as uid 0, expected uid 12345", str(caught.exception))
        with self.assertRaises(fencekeeper.InvalidArgument):
            fencekeeper.Client(socket, expect_uid=-1)
        self.stop_sidecar(sidecar)

    # ---- which socket the sidecar removes ----------------------------------------------------

    def test_the_sidecar_removes_only_the_socket_it_created(self):
        socket = self.path("run", "fk.sock")
        sidecar = self.start_sidecar(socket)
        os.unlink(socket)
        successor = socketlib.socket(socketlib.AF_UNIX)
        self.addCleanup(successor.close)
        successor.bind(socket)
        successor.listen()
        inode = os.lstat(socket).st_ino
        self.stop_sidecar(sidecar)
        self.assertEqual(os.lstat(socket).st_ino, inode)

    def test_a_live_servers_socket_is_not_removed_at_start(self):
        os.mkdir(self.path("run"), 0o750)
        socket = self.path("run", "fk.sock")
        live = socketlib.socket(socketlib.AF_UNIX)
        self.addCleanup(live.close)
        live.bind(socket)
        live.listen(1)
        inode = os.lstat(socket).st_ino
        self.assertIn("another sidecar is serving", self.failed_start(socket))
        self.assertEqual(os.lstat(socket).st_ino, inode)

    def test_a_stale_socket_of_another_uid_is_not_removed(self):
        os.mkdir(self.path("run"), 0o750)
        socket = self.path("run", "fk.sock")
        stale = socketlib.socket(socketlib.AF_UNIX)
        stale.bind(socket)
        stale.close()  # nobody listens: stale
        os.chown(socket, OTHER, OTHER)
        self.assertIn("socket of uid %d" % OTHER, self.failed_start(socket))
        self.assertTrue(os.path.lexists(socket))


class DetailAndNulTest(unittest.TestCase):
    """Against the fake sidecar (as root, in a private directory): its detail in the exception
    text and fencectl's stderr; NUL refused before anything is sent (the fake would answer
    limitReached)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = fk_harness.tempfile.mkdtemp(prefix="fk-detail-")
        cls.socket = os.path.join(cls.tmp, "fk.sock")
        cls.fake = subprocess.Popen(
            ["setpriv", "--pdeathsig", "KILL", "--", fk_harness.find_binary("tests/fk-fake-sidecar"),
             cls.socket, DETAIL], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
        assert cls.fake.stdout.readline().strip() == "ready"

    @classmethod
    def tearDownClass(cls):
        fk_harness.stop_process(cls.fake, 5)
        cls.fake.stdout.close()
        fk_harness.shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.client = fencekeeper.Client(self.socket)
        self.addCleanup(self.client.close)

    def test_the_detail_is_in_the_exception_and_on_fencectls_stderr(self):
        with self.assertRaises(fencekeeper.LimitReached) as caught:
            self.client.acquire("jobs")
        self.assertEqual(str(caught.exception), "limit reached: " + DETAIL)
        with self.assertRaises(fencekeeper.LimitReached) as caught:
            self.client.holder("jobs")
        self.assertIn(DETAIL, str(caught.exception))
        fencectl = fk_harness.find_binary("client_lib/fencectl")
        for args in (["holder", "jobs"], ["status"], ["lock", "jobs", "--", "true"]):
            r = subprocess.run([fencectl, "--socket", self.socket] + args, capture_output=True,
                               text=True, timeout=30, stdin=subprocess.DEVNULL)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn(DETAIL, r.stderr, args)

    def test_nul_in_a_name_or_owner_is_refused(self):
        with self.assertRaises(fencekeeper.InvalidName):
            self.client.acquire("jobs\x00-tenant-b")
        with self.assertRaises(fencekeeper.InvalidOwner):
            self.client.acquire("jobs", owner="me\x00you")
        with self.assertRaises(fencekeeper.InvalidName):
            self.client.holder("jobs\x00-tenant-b")


if __name__ == "__main__":
    unittest.main()
