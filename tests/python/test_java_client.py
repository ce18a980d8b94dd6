"""The Java client (client_lib/java, fencekeeper.jar) against a real ZooKeeper and sidecar:
JUnit 5 (Debian's junit5, its console launcher) runs ClientTest with the cluster's socket,
ZooKeeper address and pids in its environment (kazoo, through /usr/bin/python3, deletes a
holder's node behind its back; SIGSTOP freezes ZooKeeper).

    FK_BUILD_DIR=build /usr/bin/python3 -m unittest discover -v -s tests/python \\
        -p test_java_client.py
"""
import os
import subprocess
import unittest

import fk_harness

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
JARS = "/usr/share/java"


class JavaClientTest(fk_harness.ClusterTestCase):
    SIDECAR_ARGS = ("--session-timeout", "4s")

    def test_junit_passes_against_the_sidecar(self):
        jar = os.path.join(os.environ["FK_BUILD_DIR"], "client_lib", "fencekeeper.jar")
        self.assertTrue(os.path.exists(jar), "%s is not built" % jar)
        classes = os.path.join(self.cluster.tmp, "java-test-classes")
        classpath = ":".join([jar, JARS + "/jna.jar", JARS + "/junit-jupiter-api.jar",
                              JARS + "/apiguardian-api.jar", JARS + "/opentest4j.jar"])
        test = os.path.join(SOURCE, "client_lib", "java", "test", "dev", "fencekeeper",
                            "ClientTest.java")
        # (-try: a resource held for the block, never referenced, is how a test holds a lease.)
        r = subprocess.run(["javac", "-Xlint:all,-try", "-Werror", "-d", classes, "-cp", classpath,
                            test], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        env = dict(os.environ,
                   FENCEKEEPER_SOCKET=self.socket,
                   FK_ZK_CONNECT=self.cluster.connect,
                   FK_ZK_PIDS=" ".join(str(p) for p in self.cluster.zk_pids))
        r = subprocess.run(
            ["java", "-jar", JARS + "/junit-platform-console-standalone.jar", "--disable-banner",
             "--disable-ansi-colors",
             "--details=tree", "-cp", classpath + ":" + classes,
             "--select-class", "dev.fencekeeper.ClientTest", "--fail-if-no-tests"],
            env=env, capture_output=True, text=True, timeout=300)
        print(r.stdout[-4000:])
        self.assertEqual(r.returncode, 0, r.stdout[-8000:] + r.stderr[-4000:])


if __name__ == "__main__":
    unittest.main()
