"""The campaign's processes: a ZooKeeper ensemble driven through `fk-zk-harness serve`, sidecars
each running as a uid of its own (so that partition.py can cut one), and the fenced store."""

import os
import signal
import subprocess
import time

SIDECAR_UID_BASE = 6101
ZK_UID_BASE = 6201


def wait_until(predicate, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


class Ensemble:
    """Three ZooKeeper nodes, each as its own uid; commands over the harness's stdin."""

    def __init__(self, build, workdir, size=3):
        self.dir = os.path.join(workdir, "zk")
        os.makedirs(self.dir, exist_ok=True)
        self.uids = [ZK_UID_BASE + i for i in range(size)]
        harness = os.path.join(build, "sidecar", "fk-zk-harness")
        self._proc = subprocess.Popen(
            ["setpriv", "--pdeathsig", "KILL", harness, "serve", "--dir", self.dir,
             "--ensemble", str(size), "--uids", ",".join(map(str, self.uids))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=open(os.path.join(workdir, "zk-harness.log"), "w"), text=True)
        self.connect = self._proc.stdout.readline().strip()
        if not self.connect:
            raise RuntimeError("fk-zk-harness did not start (see zk-harness.log)")
        self.size = size
        self.ports = [self.command("ports %d" % i).split() for i in range(size)]
        self.client_ports = [int(p[0]) for p in self.ports]

    def command(self, line):
        self._proc.stdin.write(line + "\n")
        self._proc.stdin.flush()
        answer = self._proc.stdout.readline().rstrip("\n")
        if not answer.startswith("ok"):
            raise RuntimeError("fk-zk-harness %r: %s" % (line, answer or "no answer"))
        return answer[3:]

    def leader(self):
        return int(self.command("leader"))

    def serving(self, i):
        return self.command("mode %d" % i) != ""

    def quorum_port_pair(self, i):
        """Node i's peer and election ports."""
        return int(self.ports[i][1]), int(self.ports[i][2])

    def close(self):
        if self._proc.poll() is None:
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


class Sidecar:
    """One fencekeeper daemon as uid SIDECAR_UID_BASE + index, restartable."""

    def __init__(self, build, workdir, index, zk_connect, session_timeout):
        self.index = index
        self.uid = SIDECAR_UID_BASE + index
        self.dir = os.path.join(workdir, "sidecar%d" % index)
        os.makedirs(self.dir, exist_ok=True)
        os.chown(self.dir, self.uid, self.uid)
        self.socket = os.path.join(self.dir, "fk.sock")
        self.log = os.path.join(workdir, "sidecar%d.log" % index)
        self._argv = ["setpriv", "--reuid", str(self.uid), "--regid", str(self.uid),
                      "--clear-groups", "--pdeathsig", "KILL",
                      os.path.join(build, "sidecar", "fencekeeper"), "--zk", zk_connect,
                      "--socket", self.socket, "--session-timeout", session_timeout,
                      "--log-level", "debug"]
        self.proc = None
        self.start()

    def start(self):
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen(self._argv, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT)
        if not wait_until(lambda: os.path.exists(self.socket), 20):
            raise RuntimeError("sidecar %d did not bind %s" % (self.index, self.socket))

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        if self.alive():
            os.kill(self.proc.pid, sig)

    def kill(self):
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGKILL)
        if self.proc:
            self.proc.wait()

    def stop(self):
        """SIGTERM, as Kubernetes does; SIGKILL after 15 s."""
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.kill()


class Store:
    """The reference fenced store on a free loopback port."""

    def __init__(self, build, workdir):
        data = os.path.join(workdir, "store")
        os.makedirs(data, exist_ok=True)
        port_file = os.path.join(workdir, "store.port")
        self.log = os.path.join(workdir, "store.log")
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(
                ["setpriv", "--pdeathsig", "KILL",
                 os.path.join(build, "examples", "fenced_store", "fenced-store"),
                 "--listen", "127.0.0.1:0", "--data", data, "--port-file", port_file],
                stdout=log, stderr=subprocess.STDOUT)
        if not wait_until(lambda: os.path.exists(port_file) and open(port_file).read().strip(),
                          10):
            raise RuntimeError("fenced-store did not start")
        self.port = int(open(port_file).read())

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)

