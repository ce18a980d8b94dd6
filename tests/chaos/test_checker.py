"""checker.py on made-up histories: each failure it must find, and what it must let pass."""

import datetime
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import checker  # noqa: E402

MS = 1_000_000


class History:
    """A campaign directory written by hand: critical sections, the store's log, the journal."""

    def __init__(self, test):
        self.dir = tempfile.mkdtemp(prefix="fk-checker-test-")
        test.addCleanup(shutil.rmtree, self.dir, True)
        os.makedirs(os.path.join(self.dir, "workers"))
        self.events = {}
        self.store = []
        self.journal = []
        self.seq = 0
        self.meta = {"session_timeout_ms": 1000, "ttl_ms": 1000, "wall_minus_mono_ns": 0,
                     "start_mono_ns": 0, "end_mono_ns": 100_000 * MS, "nodes_left": [],
                     "final_value": None}

    def _log(self, worker, ns, text):
        self.events.setdefault(worker, []).append("%d %s %s" % (ns, worker, text))

    def section(self, worker, token, start_ms, get_ms, put_ms, value, get_status=200,
                put_status=200, end_ms=None, put_stored_ms=None):
        """One critical section: GET at get_ms, PUT of `value` at put_ms (None: no PUT), each
        stamped by the store when the worker logs its answer unless put_stored_ms says earlier."""
        self._log(worker, start_ms * MS, "run-start pid=%d" % (1000 + token))
        self._log(worker, start_ms * MS, "cs token=%d start" % token)
        self._store("GET", token, get_status, get_ms)
        self._log(worker, get_ms * MS, "cs token=%d get status=%d value=%d" % (
            token, get_status, value - 1))
        if put_ms is not None:
            self._store("PUT", token, put_status,
                        put_stored_ms if put_stored_ms is not None else put_ms)
            self._log(worker, put_ms * MS, "cs token=%d put status=%d value=%d" % (
                token, put_status, value))
        last = end_ms if end_ms is not None else (put_ms or get_ms) + 1
        self._log(worker, last * MS, "cs token=%d end reason=done" % token)
        self._log(worker, last * MS, "run-end pid=%d rc=0" % (1000 + token))

    def _store(self, method, token, status, at_ms):
        if status in (200, 404):
            self.seq += 1
            verdict = "accepted seq=%d" % self.seq
        else:
            verdict = "stale, highest 99"
        stamp = datetime.datetime.fromtimestamp(at_ms / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")
        self.store.append("[%s] [info] %s key=counter lock=counter token=%d -> %d %s" % (
            stamp[:-3], method, token, status, verdict))

    def freeze(self, pid, from_ms, to_ms):
        pids = "%d,%d" % (pid, pid + 1)
        self.journal.append("%d fault-start kind=holder-freeze target=%s" % (from_ms * MS, pids))
        self.journal.append("%d frozen pids=%s" % (from_ms * MS, pids))
        self.journal.append("%d thawed pids=%s" % (to_ms * MS, pids))

    def check(self):
        for worker, lines in self.events.items():
            with open(os.path.join(self.dir, "workers", worker + ".events"), "w") as f:
                f.write("\n".join(sorted(lines, key=lambda l: int(l.split()[0]))) + "\n")
        with open(os.path.join(self.dir, "store.log"), "w") as f:
            f.write("\n".join(self.store) + "\n")
        with open(os.path.join(self.dir, "nemesis.log"), "w") as f:
            f.write("\n".join(self.journal) + ("\n" if self.journal else ""))
        with open(os.path.join(self.dir, "sidecar0.log"), "w") as f:
            f.write("")
        with open(os.path.join(self.dir, "meta.json"), "w") as f:
            json.dump(self.meta, f)
        failures, rows, _ = checker.check(self.dir)
        return failures, rows


class CheckerTest(unittest.TestCase):
    def test_a_clean_history_passes(self):
        h = History(self)
        h.section("w0", 10, 0, 1, 2, 1)
        h.section("w1", 11, 5, 6, 7, 2)
        h.meta["final_value"] = 2
        failures, _ = h.check()
        self.assertEqual(failures, [])

    def test_a_lower_token_accepted_after_a_higher_one_fails(self):
        h = History(self)
        h.section("w0", 11, 0, 1, 2, 1)
        h.section("w1", 10, 5, 6, 7, 2)
        failures, _ = h.check()
        self.assertTrue(any("token 10 after token 11" in f for f in failures), failures)

    def test_a_lost_increment_fails(self):
        h = History(self)
        h.section("w0", 10, 0, 1, 2, 1)
        h.section("w1", 11, 5, 6, 7, 1)  # read 0 again: the first write was lost
        failures, _ = h.check()
        self.assertTrue(any("lost or doubled increment" in f for f in failures), failures)

    def test_a_final_value_that_does_not_count_the_writes_fails(self):
        h = History(self)
        h.section("w0", 10, 0, 1, 2, 1)
        h.meta["final_value"] = 3
        failures, _ = h.check()
        self.assertTrue(any("the counter is 3 after 1" in f for f in failures), failures)

    def test_one_token_in_two_critical_sections_fails(self):
        h = History(self)
        h.section("w0", 10, 0, 1, 2, 1)
        h.section("w1", 10, 5, 6, None, 2)
        failures, _ = h.check()
        self.assertTrue(any("token 10 ran 2" in f for f in failures), failures)

    def test_overlapping_sections_fail(self):
        h = History(self)
        h.section("w0", 10, 0, 1, 8, 1)   # its write lands inside w1's section
        h.section("w1", 11, 5, 6, 9, 2)
        failures, _ = h.check()
        self.assertTrue(any("critical sections overlap" in f for f in failures), failures)

    def test_an_overlap_of_a_frozen_holder_whose_requests_were_refused_is_fenced(self):
        h = History(self)
        h.section("w0", 10, 0, 1, 20, 1, put_status=412)  # frozen 2..15, its write refused
        h.freeze(1010, 2, 15)
        h.section("w1", 11, 5, 6, 7, 1)
        failures, rows = h.check()
        self.assertEqual(failures, [])
        self.assertEqual(rows["holder-freeze"]["overlaps (fenced)"], 1)

    def test_a_frozen_holder_whose_request_was_accepted_inside_fails(self):
        h = History(self)
        h.section("w0", 10, 0, 1, 20, 1)
        h.freeze(1010, 2, 15)
        h.section("w1", 11, 5, 6, None, 1)
        failures, _ = h.check()
        self.assertTrue(any("accepted inside" in f for f in failures), failures)

    def test_a_holder_frozen_after_its_write_was_accepted_is_fenced_not_inside(self):
        # The store took the PUT at 2 ms; the freeze held its answer back until 20 ms.
        h = History(self)
        h.section("w0", 10, 0, 1, 20, 1, put_stored_ms=2)
        h.freeze(1010, 3, 19)
        h.section("w1", 11, 5, 6, 7, 2)
        failures, rows = h.check()
        self.assertEqual(failures, [])
        self.assertEqual(rows["holder-freeze"]["overlaps (fenced)"], 1)

    def test_nodes_left_and_a_fencectl_past_its_bound_fail(self):
        h = History(self)
        h.section("w0", 10, 0, 1, 2, 1)
        h._log("w0", 50 * MS, "run-outlived pid=77 bound_s=30")
        h.meta["nodes_left"] = ["/fencekeeper/locks/counter/x"]
        failures, _ = h.check()
        self.assertTrue(any("outlived its bound" in f for f in failures), failures)
        self.assertTrue(any("lock nodes left" in f for f in failures), failures)


if __name__ == "__main__":
    unittest.main()
