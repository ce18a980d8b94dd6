"""The Python tests' own harness: a test process that dies (SIGKILL, a crash) takes the
ZooKeeper it started with it, through fk-zk-harness serve under setpriv --pdeathsig."""
import os
import re
import subprocess
import sys
import unittest

import fk_harness

CRASHING_TEST = """
import os, signal, sys
sys.path.insert(0, %r)
import fk_harness
cluster = fk_harness.Cluster()
cluster.start_zookeeper()
print("pids", " ".join(str(p) for p in cluster.zk_pids), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
""" % os.path.dirname(os.path.abspath(__file__))


def gone(pid):
    """Gone, or a zombie nobody reaps (PID 1 in a container may not)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


class HarnessCleanupTest(unittest.TestCase):
    def test_a_killed_test_process_takes_its_zookeeper_with_it(self):
        r = subprocess.run([sys.executable, "-c", CRASHING_TEST], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, -9, r.stdout + r.stderr)
        m = re.search(r"^pids ([\d ]+)$", r.stdout, re.M)
        self.assertIsNotNone(m, r.stdout + r.stderr)
        pids = [int(p) for p in m.group(1).split()]
        self.assertTrue(pids)
        fk_harness.wait_until(lambda: all(gone(p) for p in pids), 5,
                              "ZooKeeper %s to die with the test that started it" % pids)


if __name__ == "__main__":
    unittest.main()
