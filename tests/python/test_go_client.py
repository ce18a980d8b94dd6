"""The Go client (client_lib/go) against a real ZooKeeper and sidecar: `go test` with the
cluster's socket, ZooKeeper address and pids in its environment (the Go tests use kazoo, through
/usr/bin/python3, to delete a holder's node behind its back, and SIGSTOP to freeze ZooKeeper).

    FK_BUILD_DIR=build /usr/bin/python3 -m unittest discover -v -s tests/python \\
        -p test_go_client.py
"""
import os
import shutil
import subprocess
import unittest

import fk_harness

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class GoClientTest(fk_harness.ClusterTestCase):
    SIDECAR_ARGS = ("--session-timeout", "4s")

    def test_go_test_passes_against_the_sidecar(self):
        go = shutil.which("go") or "/usr/lib/go/bin/go"
        self.assertTrue(os.path.exists(go), "no Go toolchain: Debian's golang-go (setup.sh)")
        lib = os.path.dirname(os.environ["FENCEKEEPER_LIB"])
        env = dict(os.environ,
                   FENCEKEEPER_SOCKET=self.socket,
                   FK_ZK_CONNECT=self.cluster.connect,
                   FK_ZK_PIDS=" ".join(str(p) for p in self.cluster.zk_pids),
                   CGO_CFLAGS="-I" + os.path.join(SOURCE, "client_lib", "include"),
                   CGO_LDFLAGS="-L" + lib,
                   LD_LIBRARY_PATH=lib,
                   GOCACHE=os.path.join(self.cluster.tmp, "go-cache"),
                   GOFLAGS="-mod=mod", GOTOOLCHAIN="local", GO111MODULE="on")
        r = subprocess.run([go, "test", "-count=1", "-v", "."], cwd=os.path.join(
            SOURCE, "client_lib", "go"), env=env, capture_output=True, text=True, timeout=300)
        print(r.stdout[-4000:])
        self.assertEqual(r.returncode, 0, r.stdout[-8000:] + r.stderr[-4000:])
        self.assertNotIn("--- SKIP", r.stdout)


if __name__ == "__main__":
    unittest.main()
