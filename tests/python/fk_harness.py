"""A real ZooKeeper and real fencekeeper sidecars for Python tests (the Python side of
tests/support/sidecar_cluster.h).

Binaries come from $FK_BUILD_DIR (default: <repo>/build): sidecar/fk-zk-harness,
sidecar/fencekeeper and client_lib/fencectl. Set FK_KEEP_TMP=1 to keep the temporary directory
(ZooKeeper's and the sidecars' logs) after the run.

`Cluster` starts ZooKeeper (fk-zk-harness, loopback only) and sidecars in a temporary directory
and stops them by PID. `ClusterTestCase` holds one Cluster with one sidecar per test class
(setUpClass/tearDownClass, also stopped at exit on Ctrl-C) and prints the logs when a test of the
class failed. Every wait is a bounded polling loop.
"""
import atexit
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("FK_BUILD_DIR") or os.path.join(REPO, "build")


# Prefixed to the sidecars' command line: util-linux's setpriv sets PR_SET_PDEATHSIG, so a test
# killed outright takes its sidecars with it. Start them from the test's main thread: the signal
# comes when the thread that started them ends.
DIE_WITH_PARENT = ["setpriv", "--pdeathsig", "KILL", "--"]


def find_binary(*candidates):
    """The first of the paths (relative to the build directory) that is an executable."""
    for rel in candidates:
        path = os.path.join(BUILD, rel)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise RuntimeError("none of %s built in %s (FK_BUILD_DIR)" % (", ".join(candidates), BUILD))


def wait_until(predicate, timeout, what, interval=0.05):
    """Polls predicate() until it returns a truthy value (returned) or the deadline passes."""
    deadline = time.monotonic() + timeout
    while True:
        last = predicate()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.1f s waiting for %s" % (timeout, what))
        time.sleep(interval)


def descendants(pid):
    """Every live descendant of pid (read from /proc), deepest last."""
    found = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            tids = os.listdir("/proc/%d/task" % parent)
        except OSError:
            continue
        for tid in tids:
            try:
                with open("/proc/%d/task/%s/children" % (parent, tid)) as f:
                    kids = [int(k) for k in f.read().split()]
            except (OSError, ValueError):
                continue
            found.extend(kids)
            todo.extend(kids)
    return found


def stop_process(proc, grace=10.0):
    """SIGTERM, bounded wait, SIGKILL fallback (to it and to whatever it started). Returns the
    exit status, or None when it had to be killed."""
    if proc.poll() is not None:
        return proc.returncode
    kids = descendants(proc.pid)
    try:
        proc.send_signal(signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        return proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    for pid in [proc.pid] + descendants(proc.pid) + kids:
        for target in (pid, -pid):  # fencectl's CMD leads its own process group
            try:
                os.kill(target, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    return None


class Sidecar:
    """A running fencekeeper daemon: its process, socket and log file."""

    def __init__(self, proc, socket, log):
        self.proc = proc
        self.socket = socket
        self.log = log


class Cluster:
    """ZooKeeper and sidecars in a temporary directory; stop() stops everything it started."""

    def __init__(self, prefix="fk-py-"):
        self.harness = find_binary("sidecar/fk-zk-harness", "sidecar/devzk/fk-zk-harness",
                                   "fk-zk-harness")
        self.fencekeeper = find_binary("sidecar/fencekeeper")
        self.fencectl_bin = find_binary("client_lib/fencectl")
        self.tmp = tempfile.mkdtemp(prefix=prefix)
        self.zk_dir = os.path.join(self.tmp, "zk")
        self.zk_pids = []
        self.zk_proc = None
        self.connect = None
        self.sidecars = []
        self._stopped = False

    def start_zookeeper(self):
        """Starts a standalone ZooKeeper on loopback; returns its connect string. The harness
        stays in the foreground (`serve`), and it and the servers die with this process."""
        os.makedirs(self.zk_dir)
        log = open(os.path.join(self.tmp, "zk-harness.log"), "w")
        self.zk_proc = subprocess.Popen(
            ["setpriv", "--pdeathsig", "KILL", "--", self.harness, "serve", "--dir", self.zk_dir],
            stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT)
        connect_file = os.path.join(self.zk_dir, "connect")
        try:
            wait_until(lambda: os.path.exists(connect_file) or self.zk_proc.poll() is not None,
                       90, "fk-zk-harness serve to start ZooKeeper")
        finally:
            self.zk_pids = self._read_zk_pids()
        if not os.path.exists(connect_file):
            with open(log.name) as f:
                raise RuntimeError("fk-zk-harness serve failed (%s):\n%s" %
                                   (self.zk_proc.returncode, f.read()))
        with open(connect_file) as f:
            self.connect = f.read().strip()
        for host in self.connect.split("/")[0].split(","):
            if not host.startswith("127.0.0.1:"):
                raise RuntimeError("ZooKeeper not on loopback: %s" % self.connect)
        return self.connect

    def start_sidecar(self, *extra_args, session_timeout="4s", socket=None):
        """Starts a sidecar on this ZooKeeper (at `socket`, default one in the temp directory)
        and waits until `fencectl status` shows it connected and vouching for its session."""
        i = len(self.sidecars)
        socket = socket or os.path.join(self.tmp, "fk%d.sock" % i)
        log_path = os.path.join(self.tmp, "fencekeeper%d.log" % i)
        if "--status-socket" not in extra_args:
            # A name the tests know (the default, NAME.status, is named after the socket).
            extra_args += ("--status-socket", os.path.join(self.tmp, "fk%d.status.sock" % i))
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                DIE_WITH_PARENT + [self.fencekeeper, "--zk", self.connect, "--socket", socket,
                 "--session-timeout", session_timeout] + list(extra_args),
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        sidecar = Sidecar(proc, socket, log_path)
        self.sidecars.append(sidecar)

        def ready():
            if proc.poll() is not None:
                raise RuntimeError("fencekeeper exited with %d before it was ready" %
                                   proc.returncode)
            r = self.fencectl(socket, "status", timeout=10)
            # Connected and vouched for: grants need two heartbeats a quarter-session apart.
            return r.returncode == 0 and re.search(
                r"^zookeeper:\s+connected\b.*vouched for [1-9]", r.stdout, re.M)

        wait_until(ready, 30, "fencectl status to show a connected, vouched-for sidecar",
                   interval=0.1)
        return sidecar

    def fencectl(self, socket, *args, timeout=30):
        return subprocess.run([self.fencectl_bin, "--socket", socket] + list(args),
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout)

    def _read_zk_pids(self):
        try:
            with open(os.path.join(self.zk_dir, "pids")) as f:
                return [int(p) for p in f.read().split()]
        except (OSError, ValueError):
            return []

    def stop(self, print_logs=False):
        """Stops the sidecars (SIGTERM must make each exit 0) and ZooKeeper; prints the
        sidecars' logs when asked or when something went wrong. Returns the problems found."""
        if self._stopped:
            return []
        self._stopped = True
        problems = []
        for i, sidecar in enumerate(self.sidecars):
            rc = stop_process(sidecar.proc, grace=15)
            if rc != 0:
                problems.append("fencekeeper %d did not exit 0 on SIGTERM (status %s)" % (i, rc))
        if os.path.isdir(self.zk_dir):
            pids = self.zk_pids or self._read_zk_pids()
            if self.zk_proc is not None:
                for pid in pids:  # a frozen server must run to stop
                    try:
                        os.kill(pid, signal.SIGCONT)
                    except OSError:
                        pass
                self.zk_proc.stdin.close()  # serve stops the servers and exits
                try:
                    self.zk_proc.wait(30)
                except subprocess.TimeoutExpired:
                    self.zk_proc.kill()
                    self.zk_proc.wait()
                    problems.append("fk-zk-harness serve did not exit when told")
            for pid in pids:  # fallback: only a still-running ZooKeeper JVM
                try:
                    with open("/proc/%d/cmdline" % pid, "rb") as f:
                        if b"zookeeper" not in f.read().lower():
                            continue
                    os.kill(pid, signal.SIGKILL)
                    problems.append("ZooKeeper pid %d survived fk-zk-harness stop" % pid)
                except (OSError, ProcessLookupError):
                    pass
        if print_logs or problems:
            for sidecar in self.sidecars:
                if os.path.exists(sidecar.log):
                    with open(sidecar.log, errors="replace") as f:
                        sys.stderr.write("\n----- fencekeeper log (%s) -----\n%s----- end of log "
                                         "-----\n" % (sidecar.log, f.read()))
        if os.environ.get("FK_KEEP_TMP"):
            sys.stderr.write("[fk_harness] kept %s\n" % self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)
        return problems


class ClusterTestCase(unittest.TestCase):
    """Gives each test class a Cluster with ZooKeeper and one sidecar (`cls.cluster`,
    `cls.socket`), started with SIDECAR_ARGS; tearDownClass fails when stopping found a problem
    (e.g. a sidecar that did not exit 0 on SIGTERM)."""

    SIDECAR_ARGS = ()
    cluster = None
    socket = None
    any_failed = False

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.any_failed = False
        cls.cluster = Cluster(prefix="fk-%s-" % cls.__name__.lower())
        atexit.register(cls.cluster.stop)  # also on Ctrl-C, which skips tearDownClass
        try:
            started = time.monotonic()
            cls.cluster.start_zookeeper()
            cls.socket = cls.cluster.start_sidecar(*cls.SIDECAR_ARGS).socket
            sys.stderr.write("[%s] ZooKeeper %s and sidecar ready after %.2f s\n" %
                             (cls.__name__, cls.cluster.connect, time.monotonic() - started))
        except BaseException:
            cls.cluster.stop(print_logs=True)
            raise

    @classmethod
    def tearDownClass(cls):
        problems = cls.cluster.stop(print_logs=cls.any_failed)
        super().tearDownClass()
        if problems:
            raise AssertionError("; ".join(problems))

    def run(self, result=None):
        # Notes whether this test failed, so tearDownClass prints the sidecar's log.
        if result is None:
            return super().run(result)
        before = len(result.failures) + len(result.errors)
        try:
            return super().run(result)
        finally:
            if len(result.failures) + len(result.errors) > before:
                type(self).any_failed = True

    def fencectl(self, *args, timeout=30):
        """Runs `fencectl --socket <the sidecar> ARGS...`."""
        return self.cluster.fencectl(self.socket, *args, timeout=timeout)
