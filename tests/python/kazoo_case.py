"""A ClusterTestCase with a kazoo client beside the sidecar, for the tests where kazoo and
fencekeeper share a lock queue. Needs kazoo, which only Debian's interpreter has
(python3-kazoo): run these tests with /usr/bin/python3, as ctest does."""
import sys
import warnings

try:
    from kazoo.client import KazooClient
    from kazoo.exceptions import LockTimeout
except ImportError as e:  # pragma: no cover - depends on the interpreter
    # Fail, do not skip: the interop coverage must not vanish silently.
    raise ImportError("kazoo is not importable from %s; run the interop tests with "
                      "/usr/bin/python3 (Debian's python3-kazoo): %s" % (sys.executable, e)) from e

import fk_harness


class KazooClusterTestCase(fk_harness.ClusterTestCase):
    """`self.kazoo`: a started KazooClient on the class's ZooKeeper, closed after each test."""

    # kazoo caches that a lock parent exists: the sidecar must not create CONTAINER parents.
    SIDECAR_ARGS = ("--persistent-parents", "--session-timeout", "4s")

    @classmethod
    def setUpClass(cls):
        # kazoo 2.8 calls Event.isSet(); unittest's runner would print that on every wait.
        warnings.filterwarnings("ignore", r"isSet\(\) is deprecated", DeprecationWarning)
        super().setUpClass()

    def setUp(self):
        super().setUp()
        self.kazoo = KazooClient(hosts=self.cluster.connect, timeout=5)
        self.kazoo.start(timeout=15)
        self.addCleanup(self._close_kazoo)

    def _close_kazoo(self):
        try:
            self.kazoo.stop()
        finally:
            self.kazoo.close()

    @staticmethod
    def try_kazoo(lock, timeout):
        """kazoo 2.8 raises LockTimeout where newer versions may return False."""
        try:
            return lock.acquire(timeout=timeout)
        except LockTimeout:
            return False
