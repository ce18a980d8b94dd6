"""`fencectl status` against a real sidecar: --json is the status socket's /status document
(Cap'n Proto's JSON codec of the schema's Status), the text for people lists leases and waiters
as aligned tables (a label cannot move the cursor), and --watch refreshes until SIGINT (a "---"
line between refreshes, the screen cleared on a terminal, one JSON document a line with --json).

    FK_BUILD_DIR=build PYTHONPATH=client_lib/python /usr/bin/python3 -m unittest discover -v \\
        -s tests/python -p test_fencectl_status.py
"""
import http.client
import json
import os
import re
import signal
import socket as socketlib
import unittest

import fk_harness
from test_fencectl import FencectlCase


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socketlib.socket(socketlib.AF_UNIX, socketlib.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def table_after(text, title):
    """The lines of the table under the line `title` (up to the next unindented line)."""
    lines = text.splitlines()
    start = lines.index(title) + 1
    end = start
    while end < len(lines) and lines[end].startswith("  "):
        end += 1
    return lines[start:end]


def cells(line):
    return re.split(r"\s{2,}", line.strip())


class FencectlStatusTest(FencectlCase):
    def status_json(self):
        r = self.fencectl("status", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.count("\n"), 1, "one line: %r" % r.stdout)
        return json.loads(r.stdout)

    def get_status_socket(self):
        conn = UnixHTTPConnection(os.path.join(self.cluster.tmp, "fk0.status.sock"), 10)
        try:
            conn.request("GET", "/status")
            answer = conn.getresponse()
            self.assertEqual(answer.status, 200)
            return json.loads(answer.read())
        finally:
            conn.close()

    def hold(self, name, owner):
        run = self.spawn("lock", name, "--owner", owner, "--", "sleep", "30")
        info = self.wait_held(name, run)
        self.addCleanup(self.wait_free, name)
        self.addCleanup(self.end, run)
        return run, info

    def end(self, run):
        """Ends `fencectl lock ... sleep` (CMD's SIGTERM is its exit status)."""
        if run.proc.poll() is None:
            run.signal(signal.SIGTERM)
        self.assertEqual(run.wait(5), 128 + signal.SIGTERM, run.log())

    def wait_queued(self, name):
        def queued():
            st = self.status_json()
            return st if [(w["name"], w["state"]) for w in st["waiterList"]] == \
                [(name, "waiting")] else None
        return fk_harness.wait_until(queued, 15, "a waiter queued for %s" % name)

    def test_json_is_the_status_sockets_document(self):
        _, info = self.hold("st/json", "job-42")
        ours = self.status_json()
        served = self.get_status_socket()
        self.assertEqual(set(ours), set(served))
        for key in ("version", "build", "zkServers", "instanceId", "root", "sessionId",
                    "leasesHeld"):  # (listingCap: 1,000 by default on the status socket)
            self.assertEqual(ours[key], served[key], key)
        self.assertEqual(ours["sessionTimeoutMs"], 2000, ours)  # SIDECAR_ARGS' 2 s
        self.assertEqual((ours["zkState"], ours["leasesHeld"], ours["ready"], ours["healthy"]),
                         ("connected", 1, True, True), ours)
        [lease] = ours["leases"]
        [servedLease] = served["leases"]
        self.assertEqual(set(lease), set(servedLease))
        # The codec's names and its 64-bit numbers as strings.
        self.assertEqual((lease["name"], lease["token"], lease["ownerLabel"], lease["state"]),
                         ("st/json", str(info["token"]), "job-42", "held"), lease)
        self.assertEqual(lease["token"], servedLease["token"])

    def test_text_lists_leases_and_waiters_as_aligned_tables(self):
        holder, info = self.hold("st/table", "job-42")
        # (A label with an escape sequence is refused now: OwnerLabel tests a foreign one's.)
        waiter = self.spawn("lock", "st/table", "--wait", "30s", "--owner", "second",
                            "--", "true")
        st = self.wait_queued("st/table")
        [lease], [queued] = st["leases"], st["waiterList"]
        r = self.fencectl("status")
        self.assertEqual(r.returncode, 0, r.stderr)
        text = r.stdout
        self.assertRegex(text, r"(?m)^zookeeper:\s+connected, session 0x[0-9a-f]+, timeout "
                         r"2000 ms, vouched for [1-9]\d* ms$")
        self.assertRegex(text, r"(?m)^ready:\s+yes$")
        self.assertRegex(text, r"(?m)^healthy:\s+yes$")
        self.assertRegex(text, r"(?m)^leases held: 1, waiting: 1, connections: \d+")
        self.assertIn(st["instanceId"], text)

        header, row = table_after(text, "leases:")
        self.assertEqual(cells(header), ["LOCK", "TOKEN", "MODE", "OWNER", "PID/UID", "STATE",
                                         "VALID FOR", "HELD FOR"])
        got = cells(row)
        self.assertEqual(got[:6], ["st/table", str(info["token"]), "exclusive", "job-42",
                                   "%d/%d" % (lease["clientPid"], lease["clientUid"]), "held"])
        for duration in got[6:]:
            self.assertRegex(duration, r"^(\d+ms|\d+\.\ds|\d+m\d\ds)$")
        # Text columns start where their header does; numbers end where theirs ends.
        self.assertEqual(header.index("OWNER"), row.index("job-42"))
        token = str(info["token"])
        self.assertEqual(header.index("TOKEN") + len("TOKEN"), row.index(token) + len(token))

        header, row = table_after(text, "waiters:")
        self.assertEqual(cells(header), ["LOCK", "MODE", "OWNER", "PID/UID", "STATE",
                                         "POSITION", "WAITED"])
        got = cells(row)
        self.assertEqual(got[:6], ["st/table", "exclusive", "second",
                                   "%d/%d" % (queued["clientPid"], queued["clientUid"]),
                                   "waiting", "1"])
        self.assertEqual(header.index("STATE"), row.index("waiting"))
        self.assertRegex(got[6], r"^(\d+ms|\d+\.\ds)$")
        self.end(holder)
        self.assertEqual(waiter.wait(10), 0, waiter.log())  # granted next, ran `true`

    def test_no_lease_no_waiter_says_none(self):
        fk_harness.wait_until(lambda: self.status_json()["leasesHeld"] == 0, 10, "no lease")
        r = self.fencectl("status")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"(?m)^leases:\s+none\n(.*\n)?waiters:\s+none$")

    def test_watch_refreshes_until_sigint_and_exits_0(self):
        run = self.spawn("status", "--watch", "--interval", "200ms")
        fk_harness.wait_until(lambda: run.log().count("\n--- ") >= 2, 15, "three refreshes")
        log = run.log()
        self.assertTrue(log.startswith("--- "), log[:200])
        frames = log.split("--- ")[1:]
        for frame in frames[:-1]:  # the last may be half written
            self.assertRegex(frame, r"(?m)^zookeeper:\s+connected\b")
        run.signal(signal.SIGINT)
        self.assertEqual(run.wait(10), 0, run.log()[-2000:])

    def test_watch_json_prints_one_document_a_line(self):
        run = self.spawn("status", "--watch", "--json", "--interval", "200ms")
        fk_harness.wait_until(lambda: run.log().count("\n") >= 2, 15, "two documents")
        for line in run.log().splitlines()[:2]:
            self.assertEqual(json.loads(line)["zkState"], "connected")
        run.signal(signal.SIGTERM)
        self.assertEqual(run.wait(10), 0, run.log()[-2000:])

    def test_watch_on_a_terminal_clears_the_screen_and_ends_on_ctrl_c(self):
        proc, master, output = self.on_a_terminal(
            "exec %s --socket %s status --watch --interval 200ms" %
            (self.cluster.fencectl_bin, self.socket))
        clear = "\x1b[H\x1b[2J"
        fk_harness.wait_until(lambda: output().count(clear) >= 2, 15, "two refreshes")
        self.assertRegex(output(), r"every 200ms: fencectl status")
        self.assertNotIn("\n--- ", output())
        os.write(master, b"\x03")  # ^C: the terminal sends SIGINT to its foreground group
        self.assertEqual(proc.wait(10), 0, output()[-2000:])

    def test_interval_needs_watch_and_a_duration(self):
        for args in (["status", "--interval", "1s"], ["status", "--watch", "--interval", "0"],
                     ["status", "--watch", "--interval", "soon"], ["status", "--frobnicate"]):
            with self.subTest(args=args):
                r = self.fencectl(*args)
                self.assertEqual(r.returncode, 64, r.stdout + r.stderr)
                self.assertTrue(r.stderr.startswith("fencectl: "), r.stderr)


if __name__ == "__main__":
    unittest.main()
