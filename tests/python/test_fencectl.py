"""fencectl, the shell's way to fenced leases, against a real ZooKeeper and real sidecars
(fk_harness): what CMD gets (FENCE_TOKEN, FENCE_LOCK, FENCE_TTL_MS), every exit code
(CMD's own status, 128 + signal, 64, 69, 75, 76, 126, 127), the socket from $FENCEKEEPER_SOCKET,
holder in JSON and for people (status: test_fencectl_status.py), and exec mode under faults: a lost lease kills CMD's
whole process group (also a grandchild behind `sh -c`), signals reach the group (then SIGCONT),
--grace acts before the validity runs out, nothing of CMD outlives a SIGKILLed fencectl (nor does
another holder get the lock first), CMD owns the terminal's foreground, a lost grant is queued for
again, and fencectl exits within its bound when the sidecar or ZooKeeper is frozen.

Run by ctest's python_client.test_fencectl with Debian's interpreter, or alone (the standby of
the frozen fencectl test is the Python package):

    FK_BUILD_DIR=build PYTHONPATH=client_lib/python /usr/bin/python3 -m unittest discover -v \\
        -s tests/python -p test_fencectl.py

PID 1 here may not reap orphans: a process counts as alive while /proc/PID/stat says it is not a
zombie.
"""
import fcntl
import json
import os
import pty
import re
import select
import signal
import socket as socketlib
import subprocess
import sys
import tempfile
import termios
import threading
import time
import unittest

import fencekeeper
import fk_harness

# fencectl's exit codes (see `fencectl --help`).
EXIT_USAGE = 64
EXIT_UNAVAILABLE = 69
EXIT_INTERNAL = 70
EXIT_NOT_ACQUIRED = 75
EXIT_LEASE_LOST = 76
EXIT_CANNOT_EXECUTE = 126
EXIT_NOT_FOUND = 127


def proc_stat(pid):
    """(state, process group) from /proc/PID/stat, or None when there is no such process."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            line = f.read()
    except (OSError, ValueError):
        return None
    fields = line[line.rfind(")") + 2:].split()  # after "pid (comm) "
    return fields[0], int(fields[2])


def parent_of(pid):
    """The parent's pid from /proc/PID/stat, or None when there is no such process."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def children_of(pid):
    """The children of every thread of pid."""
    found = []
    try:
        for task in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                found += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return found


def host_pid(pid_in_cmd, fencectl_pid):
    """A pid as CMD saw it ($$, $!), as this test sees it: CMD runs in a PID namespace of its
    supervisor's (fencectl's child) where the kernel allows one. None when it is gone."""
    supervisors = children_of(fencectl_pid)
    if not supervisors:
        return None
    namespace = os.readlink("/proc/%d/ns/pid" % supervisors[0])
    if namespace == os.readlink("/proc/self/ns/pid"):
        return pid_in_cmd
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.readlink("/proc/%s/ns/pid" % entry) != namespace:
                continue
            with open("/proc/%s/status" % entry) as f:
                nspid = next(l for l in f if l.startswith("NSpid:")).split()[1:]
        except (OSError, StopIteration):
            continue
        if int(nspid[-1]) == pid_in_cmd:
            return int(entry)
    return None


def in_own_pid_namespace(pid):
    return os.readlink("/proc/%d/ns/pid" % pid) != os.readlink("/proc/self/ns/pid")


def alive(pid):
    """True while pid is a live process; a zombie (nobody may reap it here) counts as dead."""
    stat = proc_stat(pid)
    return stat is not None and stat[0] != "Z"


def group_members(pgid):
    """The live (non-zombie) processes of process group pgid."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = proc_stat(int(entry))
            if stat is not None and stat[1] == pgid and stat[0] != "Z":
                members.append(int(entry))
    return members


def kill_group_members(pgid):
    """SIGKILL, by PID, to whatever still lives in process group pgid (a test's leftovers)."""
    for pid in group_members(pgid):
        kill_quietly(pid, signal.SIGKILL)


def kill_quietly(target, sig):
    try:
        os.kill(target, sig)
    except (ProcessLookupError, PermissionError):
        pass


def read_file(path):
    """The file's text, or None while it does not exist (CMD writes a temporary file and renames
    it, so a file that exists is complete)."""
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return None


def read_draining(output, path):
    """read_file(path), after draining a terminal's output (see on_a_terminal)."""
    output()
    return read_file(path)


class Run:
    """A fencectl started in its own session, its stdout and stderr in one log file."""

    def __init__(self, proc, log_path):
        self.proc = proc
        self.pid = proc.pid
        self.log_path = log_path

    def log(self):
        return read_file(self.log_path) or ""

    def wait(self, timeout):
        """The exit status, or None when it has not exited within timeout seconds."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def signal(self, sig):
        self.proc.send_signal(sig)


class FencectlCase(fk_harness.ClusterTestCase):
    """What fencectl's tests share (no tests of its own)."""
    # As fencectl's C++ tests had it: a 2 s session bounds every lease below the TTLs asked for.
    SIDECAR_ARGS = ("--session-timeout", "2s")

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=self._testMethodName[:40] + "-", dir=self.cluster.tmp)
        self.runs = 0

    # ---- helpers -------------------------------------------------------------------------------

    def path(self, name):
        return os.path.join(self.dir, name)

    def spawn(self, *args, socket=None, env=None, prefix=()):
        """Starts `[PREFIX...] fencectl --socket SOCKET ARGS...` in its own session (PREFIX: a
        command that execs it, such as setpriv); the test's cleanup stops it (SIGCONT first, in
        case it is frozen; then SIGTERM, SIGKILL to it and its group)."""
        self.runs += 1
        log_path = self.path("fencectl-%d.log" % self.runs)
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                list(prefix) + [self.cluster.fencectl_bin, "--socket", socket or self.socket] +
                list(args),
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                start_new_session=True)
        run = Run(proc, log_path)
        self.addCleanup(self._stop_run, run)
        return run

    @staticmethod
    def _stop_run(run):
        if run.proc.poll() is None:
            kill_quietly(run.pid, signal.SIGCONT)
            fk_harness.stop_process(run.proc, grace=5)

    def run_fencectl(self, *args, env=None, timeout=30):
        """Runs fencectl with exactly ARGS (no --socket added) to its end."""
        return subprocess.run([self.cluster.fencectl_bin] + list(args), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, env=env, timeout=timeout)

    def holder(self, name, socket=None):
        r = self.cluster.fencectl(socket or self.socket, "holder", name, "--json", timeout=10)
        self.assertEqual(r.returncode, 0, "fencectl holder %s: %s" % (name, r.stderr))
        return json.loads(r.stdout)

    def wait_held(self, name, run, socket=None):
        """Waits until `run` (a fencectl lock NAME) holds NAME; returns holder's JSON."""
        def held():
            if run.proc.poll() is not None:
                raise AssertionError("fencectl lock %s exited with %d before holding it:\n%s" %
                                     (name, run.proc.returncode, run.log()))
            info = self.holder(name, socket)
            return info if info["held"] else None
        return fk_harness.wait_until(held, 15, "fencectl to hold %s" % name)

    def wait_free(self, name, socket=None):
        fk_harness.wait_until(lambda: not self.holder(name, socket)["held"], 10,
                              "%s to be free" % name)

    def wait_file(self, path, run=None, timeout=15):
        """Waits for a file that CMD writes (and renames into place); returns its text."""
        def written():
            text = read_file(path)
            if text is None and run is not None and run.proc.poll() is not None:
                raise AssertionError("fencectl exited with %d before %s was written:\n%s" %
                                     (run.proc.returncode, path, run.log()))
            return text
        return fk_harness.wait_until(written, timeout, "%s to be written" % path)

    def cmd_pid(self, path, run):
        """The pid CMD wrote to path ($$, $!), translated to this test's PID namespace."""
        pid = host_pid(int(self.wait_file(path, run)), run.proc.pid)
        self.assertIsNotNone(pid, "the process CMD wrote to %s is gone" % path)
        return pid

    def write_cmd(self, path, what):
        """A shell snippet that writes `what` (shell words) to path atomically."""
        return 'printf "%%s\\n" %s > %s.tmp && mv %s.tmp %s' % (what, path, path, path)

    def on_a_terminal(self, script):
        """Runs `sh -c SCRIPT` as the session leader of a new pseudo-terminal; returns (proc,
        master, output) where output() drains the terminal and returns all it printed."""
        master, slave = pty.openpty()
        self.addCleanup(os.close, master)

        def controlling_terminal():
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        proc = subprocess.Popen(["sh", "-c", script], stdin=slave, stdout=slave, stderr=slave,
                                preexec_fn=controlling_terminal)
        os.close(slave)
        self.addCleanup(fk_harness.stop_process, proc, 5)
        printed = []

        def output():  # drained, so that nobody blocks writing to the terminal
            while select.select([master], [], [], 0)[0]:
                try:
                    printed.append(os.read(master, 4096))
                except OSError:
                    break
            return b"".join(printed).decode(errors="replace")
        return proc, master, output


class FencectlTest(FencectlCase):
    # ---- exec mode under faults (formerly tests/integration/fencectl_test.cc) ----------------

    def test_frozen_fencectl_kills_the_whole_group_when_it_runs_again(self):
        pid_file = self.path("grandchild.pid")
        run = self.spawn("lock", "frozen-ctl", "--ttl", "1s", "--", "sh", "-c",
                         "sleep 300 & %s; wait" % self.write_cmd(pid_file, "$!"))
        grandchild = self.cmd_pid(pid_file, run)
        self.assertTrue(alive(grandchild))
        group = proc_stat(grandchild)[1]  # CMD's process group, led by `sh`
        self.addCleanup(kill_group_members, group)
        self.assertNotEqual(group, os.getpgid(run.pid))
        self.assertIn(group, group_members(group))
        info = self.holder("frozen-ctl")
        self.assertTrue(info["held"] and info["thisSidecar"], info)
        token = info["token"]

        run.signal(signal.SIGSTOP)  # fencectl only: its command runs on, unaware
        with fencekeeper.Client(self.socket) as standby_client:
            # Granted once the frozen lease expires.
            standby = standby_client.acquire("frozen-ctl", wait=5, owner="standby")
            self.assertGreater(standby.token, token)
            self.assertTrue(alive(grandchild), "the group died while fencectl was frozen")

            run.signal(signal.SIGCONT)  # the moment it runs again, it kills the group
            self.assertEqual(run.wait(5), EXIT_LEASE_LOST, run.log())
            fk_harness.wait_until(lambda: not alive(grandchild), 3, "the grandchild to die")
            fk_harness.wait_until(lambda: not group_members(group), 3, "CMD's group to be empty")
            self.assertIn("lost", run.log())
            info = self.holder("frozen-ctl")
            self.assertEqual((info["held"], info["token"], info["owner"]),
                             (True, standby.token, "standby"), info)
            standby.release()
        self.wait_free("frozen-ctl")

    def test_signals_are_forwarded_to_the_commands_group(self):
        marker = self.path("trapped")
        started = self.path("started")
        run = self.spawn("lock", "signals", "--", "sh", "-c",
                         "trap 'echo TERM > %s; exit 3' TERM; : > %s; "
                         "while true; do sleep 0.05; done" % (marker, started))
        self.wait_held("signals", run)
        # The sidecar's grant comes before fencectl runs CMD: a signal in between ends fencectl
        # without running it (the test below). Here CMD must be running, its trap set.
        fk_harness.wait_until(lambda: os.path.exists(started), 15, "the command to start")
        run.signal(signal.SIGTERM)
        self.assertEqual(run.wait(5), 3, run.log())  # the command's own status
        self.assertTrue(os.path.exists(marker))
        self.wait_free("signals")  # and the lease released

    def test_a_signal_while_waiting_ends_fencectl_without_running_the_command(self):
        holder = self.spawn("lock", "queued", "--", "sleep", "300")
        self.wait_held("queued", holder)
        marker = self.path("ran")
        waiter = self.spawn("lock", "queued", "--wait", "60s", "--", "touch", marker)
        fk_harness.wait_until(lambda: self.holder("queued")["waiters"] == 1, 10, "the waiter")
        waiter.signal(signal.SIGTERM)
        self.assertEqual(waiter.wait(5), 128 + signal.SIGTERM, waiter.log())
        fk_harness.wait_until(lambda: self.holder("queued")["waiters"] == 0, 5,
                              "the waiter's node to go")
        holder.signal(signal.SIGTERM)
        self.assertEqual(holder.wait(5), 128 + signal.SIGTERM, holder.log())
        self.assertFalse(os.path.exists(marker), "CMD ran after fencectl gave up")

    def test_what_the_command_leaves_in_its_group_is_ended_before_the_release(self):
        pid_file, go = self.path("background.pid"), self.path("go")
        run = self.spawn("lock", "leftover", "--", "sh", "-c",
                         "sleep 300 & %s; while [ ! -e %s ]; do sleep 0.01; done; exit 0" % (
                             self.write_cmd(pid_file, "$!"), go))
        background = self.cmd_pid(pid_file, run)
        open(go, "w").close()
        self.assertEqual(run.wait(10), 0, run.log())
        self.assertFalse(alive(background), "a background job outlived the lease")
        self.wait_free("leftover")

    def test_grace_stops_the_command_before_the_validity_runs_out(self):
        # A sidecar of its own: freezing it costs its ZooKeeper session.
        sidecar = self.cluster.start_sidecar(session_timeout="2s")
        marker = self.path("graced")
        # The command ignores SIGTERM: it is killed when the validity runs out.
        run = self.spawn("lock", "grace", "--ttl", "2s", "--grace", "1s", "--", "sh", "-c",
                         "trap 'echo TERM > %s' TERM; while true; do sleep 0.05; done" % marker,
                         socket=sidecar.socket)
        # Cleanups run last-in first-out: the sidecar runs again before fencectl is stopped.
        self.addCleanup(kill_quietly, sidecar.proc.pid, signal.SIGCONT)
        self.wait_held("grace", run, socket=sidecar.socket)
        # A frozen sidecar answers no renew: the validity fencectl knows of drains away.
        sidecar.proc.send_signal(signal.SIGSTOP)
        frozen_at = time.monotonic()
        status = run.wait(6)
        elapsed = time.monotonic() - frozen_at
        sidecar.proc.send_signal(signal.SIGCONT)
        log = run.log()
        self.assertEqual(status, EXIT_LEASE_LOST, log)
        self.assertTrue(os.path.exists(marker), "no SIGTERM within the grace period")
        self.assertLessEqual(elapsed, 2.5, "killed later than the validity allowed")
        self.assertIn("not renewed", log)
        # SIGTERM at the grace, SIGKILL only once the validity had run out.
        self.assertIn("lost", log)
        self.assertLess(log.index("not renewed"), log.index("lost"), log)

    def test_ttl_longer_than_the_session_timeout_does_not_kill_the_command(self):
        # Regression: the sidecar vouches for less than a long TTL (its 2 s session bounds every
        # lease), so keep-alive must renew by the validity granted, not by the TTL.
        run = self.spawn("lock", "long-ttl", "--ttl", "30s", "--", "sleep", "4")
        self.assertEqual(run.wait(10), 0, run.log())

    def test_holder_speaks_json_and_plain_text(self):
        # Earlier tests' leases are gone before this one counts leases.
        fk_harness.wait_until(
            lambda: json.loads(self.fencectl("status", "--json").stdout)["leasesHeld"] == 0,
            10, "the sidecar to hold no lease")
        r = self.fencectl("holder", "json")
        self.assertEqual((r.returncode, r.stdout), (0, "json: not held\n"), r.stderr)

        run = self.spawn("lock", "json", "--owner", "job-42", "--", "sleep", "30")
        self.wait_held("json", run)
        who = self.fencectl("holder", "json", "--json")
        self.assertEqual(who.returncode, 0, who.stderr)
        self.assertIn('"held":true', who.stdout)
        self.assertIn('"owner":"job-42"', who.stdout)
        info = json.loads(who.stdout)
        self.assertEqual((info["lock"], info["held"], info["owner"], info["thisSidecar"],
                          info["waiters"]), ("json", True, "job-42", True, 0), info)
        self.assertGreater(info["token"], 0)
        self.assertLess(abs(info["sinceUnixMs"] / 1000 - time.time()), 60, info)

        plain = self.fencectl("holder", "json")
        self.assertEqual(plain.returncode, 0, plain.stderr)
        self.assertRegex(plain.stdout, r"^json: held, token %d, owner 'job-42', since "
                         r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z, 0 waiting "
                         r"\(through this sidecar\)\n$" % info["token"])

        run.signal(signal.SIGTERM)
        self.assertEqual(run.wait(5), 128 + signal.SIGTERM, run.log())
        self.wait_free("json")

    # ---- nothing of CMD outlives fencectl -------------------------------------------------------

    def start_tree(self, name):
        """fencectl lock NAME running a tree: `sh` (CMD, its group's leader) with a background
        `sleep` in its group, and a `sleep` that left with setsid and whose parent exited (an
        orphan, adopted by the supervisor). Returns (run, sh, in_group, escaped, supervisor)."""
        files = [self.path("%s-%s.pid" % (name.replace("/", "-"), what))
                 for what in ("sh", "group", "escaped")]
        script = ("%s; sleep 300 & %s; setsid sh -c 'sleep 300 & %s' & wait" %
                  (self.write_cmd(files[0], "$$"), self.write_cmd(files[1], "$!"),
                   self.write_cmd(files[2], "$!")))
        run = self.spawn("lock", name, "--", "sh", "-c", script)
        sh, in_group, escaped = (self.cmd_pid(f, run) for f in files)
        for pid in (sh, in_group, escaped):
            self.addCleanup(kill_quietly, pid, signal.SIGKILL)
        self.assertEqual(proc_stat(in_group)[1], sh)
        self.assertNotEqual(proc_stat(escaped)[1], sh, "the setsid sleep is still in CMD's group")
        supervisor = parent_of(sh)
        self.assertEqual(parent_of(supervisor), run.pid)
        fk_harness.wait_until(lambda: parent_of(escaped) == supervisor, 5,
                              "the orphan to be adopted by the supervisor")
        self.addCleanup(kill_quietly, supervisor, signal.SIGKILL)
        return run, sh, in_group, escaped, supervisor

    def test_fencectl_killed_by_sigkill_leaves_nothing_and_no_holder_before_that(self):
        for how in ("pid", "process group", "fencectl and its supervisor"):
            with self.subTest(how):
                name = "ctl/kill9-" + how.replace(" ", "-")
                run, sh, in_group, escaped, supervisor = self.start_tree(name)
                if how == "fencectl and its supervisor" and not in_own_pid_namespace(supervisor):
                    self.skipTest("no PID namespace here: fencectl said so at start")
                token = self.wait_held(name, run)["token"]
                granted = {}
                with fencekeeper.Client(self.socket) as standby_client:
                    def standby():
                        lease = standby_client.acquire(name, wait=10, owner="standby")
                        # What still lives of the first holder's CMD the moment this is granted.
                        granted["alive"] = [p for p in (sh, in_group, escaped) if alive(p)]
                        granted["token"] = lease.token
                        lease.release()
                    thread = threading.Thread(target=standby)
                    thread.start()
                    try:
                        fk_harness.wait_until(lambda: self.holder(name)["waiters"] == 1, 10,
                                              "the standby to queue")
                        killed_at = time.monotonic()
                        if how == "pid":
                            os.kill(run.pid, signal.SIGKILL)
                        elif how == "fencectl and its supervisor":
                            # As an OOM kill of the group: nothing of ours is left to kill CMD;
                            # the kernel ends the supervisor's PID namespace.
                            os.kill(run.pid, signal.SIGKILL)
                            os.kill(supervisor, signal.SIGKILL)
                        else:
                            os.killpg(run.pid, signal.SIGKILL)  # fencectl leads its session
                        fk_harness.wait_until(
                            lambda: not any(alive(p) for p in (sh, in_group, escaped)), 5,
                            "everything CMD started to die", interval=0.005)
                        elapsed = time.monotonic() - killed_at
                        sys.stderr.write("[%s] CMD's tree dead %.3f s after fencectl's SIGKILL "
                                         "(%s)\n" % (self._testMethodName, elapsed, how))
                        self.assertLessEqual(elapsed, 0.2)
                    finally:
                        thread.join(15)
                self.assertEqual(granted.get("alive"), [], granted)
                self.assertGreater(granted["token"], token)
                fk_harness.wait_until(lambda: not alive(supervisor), 5, "the supervisor to end")
                self.assertEqual(run.wait(5), -signal.SIGKILL)

    def test_what_the_command_leaves_outside_its_group_is_ended_before_the_release(self):
        run, sh, in_group, escaped, supervisor = self.start_tree("ctl/leftover-setsid")
        os.kill(sh, signal.SIGTERM)  # CMD ends; its background job and the setsid one live on
        self.assertEqual(run.wait(10), 128 + signal.SIGTERM, run.log())
        self.assertFalse(alive(in_group) or alive(escaped), "a process outlived the lease")
        self.assertFalse(alive(supervisor))
        self.wait_free("ctl/leftover-setsid")

    def test_a_killed_supervisor_ends_fencectl_with_70_and_all_of_the_command(self):
        run, sh, in_group, escaped, supervisor = self.start_tree("ctl/supervisor-killed")
        os.kill(supervisor, signal.SIGKILL)
        self.assertEqual(run.wait(5), EXIT_INTERNAL, run.log())
        self.assertEqual([p for p in (sh, in_group, escaped) if alive(p)], [])
        self.wait_free("ctl/supervisor-killed")

    def test_cmd_runs_in_a_pid_namespace_of_its_supervisor_or_fencectl_says_why_not(self):
        cases = (("own namespace", [], []),
                 ("not permitted", ["setpriv", "--bounding-set", "-sys_admin", "--"], []),
                 ("--no-pid-namespace", [], ["--no-pid-namespace"]))
        for case, prefix, flags in cases:
            with self.subTest(case):
                name = "ctl/pidns-" + case.strip("-").replace(" ", "-")
                pid_file = self.path(name.replace("/", "-") + ".pid")
                run = self.spawn("lock", name, *flags, "--", "sh", "-c",
                                 "%s; sleep 300" % self.write_cmd(pid_file, "$$"),
                                 prefix=prefix)
                seen_inside = int(self.wait_file(pid_file, run))
                sh = self.cmd_pid(pid_file, run)
                supervisor = parent_of(sh)
                warned = "without a PID namespace of its own" in run.log()
                if case == "own namespace":
                    self.assertTrue(in_own_pid_namespace(supervisor))
                    self.assertEqual(seen_inside, 2, "CMD is its supervisor's first child")
                    self.assertFalse(warned, run.log())
                else:
                    self.assertFalse(in_own_pid_namespace(supervisor))
                    self.assertEqual(seen_inside, sh)
                    self.assertEqual(warned, case == "not permitted", run.log())
                run.signal(signal.SIGTERM)
                self.assertEqual(run.wait(5), 128 + signal.SIGTERM, run.log())
                self.assertFalse(alive(sh))
                self.wait_free(name)

    def test_on_a_terminal_the_command_reads_stdin_and_gets_the_terminal_back_after(self):
        pgid_file, got_file, after_file = (self.path(n) for n in ("pgid", "got", "after"))
        inner = self.path("inner.sh")
        with open(inner, "w") as f:
            f.write("cut -d' ' -f5 /proc/$$/stat > %s.tmp && mv %s.tmp %s\nread line\n%s\n" %
                    (pgid_file, pgid_file, pgid_file, self.write_cmd(got_file, "$line")))
        # A non-interactive sh does no job control: it reads the terminal after fencectl only if
        # fencectl gave the foreground back to their group.
        outer = "%s --socket %s lock ctl/tty -- sh %s; echo fencectl=$?; read again; %s" % (
            self.cluster.fencectl_bin, self.socket, inner, self.write_cmd(after_file, "$again"))
        proc, master, drain = self.on_a_terminal(outer)
        pgid = int(fk_harness.wait_until(lambda: read_draining(drain, pgid_file), 15,
                                         "CMD to start"))
        self.assertNotEqual(pgid, proc.pid)
        self.assertEqual(os.tcgetpgrp(master), pgid, "CMD's group is not the foreground group")
        os.write(master, b"hello\n")
        got = fk_harness.wait_until(lambda: read_draining(drain, got_file), 5,
                                    "CMD to read its line:\n" + drain())
        self.assertEqual(got, "hello\n")
        fk_harness.wait_until(lambda: "fencectl=" in drain(), 10, "fencectl to end")
        self.assertIn("fencectl=0", drain())
        os.write(master, b"world\n")
        after = fk_harness.wait_until(lambda: read_draining(drain, after_file), 5,
                                      "the shell to read the terminal after fencectl:\n" + drain())
        self.assertEqual(after, "world\n")
        self.assertEqual(proc.wait(5), 0)
        self.wait_free("ctl/tty")

    def test_the_terminal_comes_back_when_fencectl_is_killed(self):
        ppid_file = self.path("supervisor.pid")
        outer = "%s --socket %s lock ctl/tty-killed -- sh -c '%s; read line'; exec sleep 300" % (
            self.cluster.fencectl_bin, self.socket, self.write_cmd(ppid_file, "$PPID"))
        proc, master, output = self.on_a_terminal(outer)
        supervisor = int(fk_harness.wait_until(lambda: read_draining(output, ppid_file),
                                               15, "CMD to start"))
        fencectl = parent_of(supervisor)
        self.addCleanup(kill_quietly, supervisor, signal.SIGKILL)
        self.assertNotEqual(os.tcgetpgrp(master), proc.pid)  # CMD's group has it
        os.kill(fencectl, signal.SIGKILL)
        # The supervisor gives it back to fencectl's group (the shell's: it does no job control).
        fk_harness.wait_until(lambda: os.tcgetpgrp(master) == proc.pid, 5,
                              "the shell's group to have the terminal again")
        self.wait_free("ctl/tty-killed")

    def test_ctrl_z_stops_the_job_and_fg_gives_the_command_the_terminal_again(self):
        got_file = self.path("got")
        # A shell with job control (set -m): it sees fencectl stopped, and `fg` resumes it.
        script = ("set -m; %s --socket %s lock ctl/ctrl-z -- sh -c 'echo reading; read line; %s';"
                  " echo stopped=$?; fg; echo fencectl=$?" %
                  (self.cluster.fencectl_bin, self.socket, self.write_cmd(got_file, "$line")))
        proc, master, output = self.on_a_terminal(script)
        fk_harness.wait_until(lambda: "reading" in output(), 15, "CMD to read the terminal")
        os.write(master, b"\x1a")  # ^Z
        fk_harness.wait_until(lambda: "stopped=%d" % (128 + signal.SIGTSTP) in output(), 5,
                              "the shell to see its job stopped:\n" + output())
        os.write(master, b"hello\n")  # read once `fg` gave CMD's group the terminal again
        got = fk_harness.wait_until(lambda: read_draining(output, got_file), 5,
                                    "CMD to read its line after fg:\n" + output())
        self.assertEqual(got, "hello\n")
        fk_harness.wait_until(lambda: "fencectl=" in output(), 10, "fencectl to end")
        self.assertIn("fencectl=0", output())
        self.assertEqual(proc.wait(5), 0)
        self.wait_free("ctl/ctrl-z")

    def test_forwarded_signals_are_followed_by_sigcont(self):
        pid_file, marker = self.path("cmd.pid"), self.path("trapped")
        run = self.spawn("lock", "ctl/sigcont", "--", "sh", "-c",
                         "trap 'echo TERM > %s; exit 3' TERM; %s; while true; do sleep 0.05; done"
                         % (marker, self.write_cmd(pid_file, "$$")))
        sh = self.cmd_pid(pid_file, run)
        os.kill(sh, signal.SIGSTOP)
        fk_harness.wait_until(lambda: proc_stat(sh)[0] == "T", 5, "CMD to stop")
        run.signal(signal.SIGTERM)  # a stopped CMD sees it only with the SIGCONT that follows
        self.assertEqual(run.wait(5), 3, run.log())
        self.assertTrue(os.path.exists(marker))
        self.wait_free("ctl/sigcont")

    def test_a_command_ignoring_sigterm_or_sigint_is_killed_after_grace(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(sig.name):
                name = "ctl/ignores-" + sig.name
                pid_file = self.path(sig.name + ".pid")
                run = self.spawn("lock", name, "--grace", "400ms", "--", "sh", "-c",
                                 "trap '' TERM INT; %s; while true; do sleep 0.05; done" %
                                 self.write_cmd(pid_file, "$$"))
                sh = self.cmd_pid(pid_file, run)
                self.addCleanup(kill_quietly, sh, signal.SIGKILL)
                signalled_at = time.monotonic()
                run.signal(sig)
                status = run.wait(6)
                elapsed = time.monotonic() - signalled_at
                self.assertEqual(status, 128 + signal.SIGKILL, run.log())
                self.assertTrue(0.35 <= elapsed <= 1.9, "ended %.2f s after the signal" % elapsed)
                self.assertFalse(alive(sh))
                self.wait_free(name)

    def test_a_command_that_cannot_run_exits_127_or_126(self):
        not_executable = self.path("not-executable")
        with open(not_executable, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        for command, expected in (("no-such-command-fk", EXIT_NOT_FOUND),
                                  (self.path("missing"), EXIT_NOT_FOUND),
                                  (not_executable, EXIT_CANNOT_EXECUTE)):
            with self.subTest(command):
                r = self.fencectl("lock", "ctl/cannot-run", "--", command, "arg")
                self.assertEqual(r.returncode, expected, r.stdout + r.stderr)
                self.assertIn("fencectl: cannot run %s: " % command, r.stderr)
                self.wait_free("ctl/cannot-run")

    def test_help_lists_every_exit_code(self):
        r = self.run_fencectl("--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        codes = r.stdout[r.stdout.index("Exit codes:"):]
        self.assertIn("CMD's own exit status", codes)
        self.assertIn("137", codes)  # CMD still running --grace after SIGTERM or SIGINT
        for code in ("128+N", "64", "69", "70", "75", "76", "126", "127"):
            self.assertRegex(codes, r"(?m)^\s+%s\s" % re.escape(code), codes)

    def test_release_is_bounded_when_the_sidecar_is_frozen(self):
        # A sidecar of its own, with an 8 s session: the validity outlasts the test's window.
        sidecar = self.cluster.start_sidecar(session_timeout="8s")
        go = self.path("go")
        run = self.spawn("lock", "ctl/frozen-release", "--grace", "100ms", "--", "sh", "-c",
                         "while [ ! -e %s ]; do sleep 0.02; done; exit 5" % go,
                         socket=sidecar.socket)
        self.addCleanup(kill_quietly, sidecar.proc.pid, signal.SIGCONT)
        self.wait_held("ctl/frozen-release", run, socket=sidecar.socket)
        sidecar.proc.send_signal(signal.SIGSTOP)  # no answer to the release, ever
        try:
            ended_at = time.monotonic()
            open(go, "w").close()  # CMD ends on its own
            status = run.wait(8)
            elapsed = time.monotonic() - ended_at
        finally:
            sidecar.proc.send_signal(signal.SIGCONT)
        sys.stderr.write("[%s] fencectl exited %.3f s after CMD was told to end\n" %
                         (self._testMethodName, elapsed))
        self.assertEqual(status, 5, run.log())  # CMD's own status
        self.assertLessEqual(elapsed, 1.6, run.log())
        self.assertIn("no answer within 1000 ms", run.log())
        # The connection closed: the sidecar lets the lease go once it runs again.
        self.wait_free("ctl/frozen-release", socket=sidecar.socket)

    def test_a_grant_lost_before_the_command_starts_is_queued_for_again(self):
        name = "ctl/lost-grant"
        holder = self.spawn("lock", name, "--", "sleep", "300")
        self.wait_held(name, holder)
        token_file = self.path("token")
        waiter = self.spawn("lock", name, "--ttl", "1s", "--wait", "30s", "--", "sh", "-c",
                            self.write_cmd(token_file, "$FENCE_TOKEN"))
        fk_harness.wait_until(lambda: self.holder(name)["waiters"] == 1, 10, "the waiter")
        waiter.signal(signal.SIGSTOP)  # granted while stopped; its TTL runs out before it resumes
        holder.signal(signal.SIGTERM)
        self.assertEqual(holder.wait(5), 128 + signal.SIGTERM, holder.log())
        lost = fk_harness.wait_until(
            lambda: (lambda i: i if i["held"] and "pid %d" % waiter.pid in i["owner"] else None)(
                self.holder(name)), 10, "the stopped waiter to be granted")
        self.wait_free(name)  # its TTL ran out: the grant is gone
        waiter.signal(signal.SIGCONT)
        self.assertEqual(waiter.wait(15), 0, waiter.log())
        self.assertGreater(int(read_file(token_file)), lost["token"])
        self.assertNotIn("not below the validity granted", waiter.log())
        self.wait_free(name)

    # ---- what the C++ tests did not cover ------------------------------------------------------

    def test_command_environment_has_token_lock_and_ttl(self):
        env_file = self.path("env")
        # Stale values in fencectl's own environment are replaced, not duplicated.
        env = dict(os.environ, FENCE_TOKEN="1", FENCE_LOCK="stale", FENCE_TTL_MS="1")
        run = self.spawn("lock", "ctl/env", "--ttl", "7s", "--", "sh", "-c",
                         "env > %s.tmp && mv %s.tmp %s; exec sleep 300" %
                         (env_file, env_file, env_file), env=env)
        lines = self.wait_file(env_file, run).splitlines()
        fence = [line.split("=", 1) for line in lines if line.startswith("FENCE_")]
        self.assertEqual(sorted(key for key, _ in fence),
                         ["FENCE_LOCK", "FENCE_TOKEN", "FENCE_TTL_MS"], fence)
        fence = dict(fence)
        info = self.holder("ctl/env")
        self.assertTrue(info["held"], info)
        self.assertEqual(int(fence["FENCE_TOKEN"]), info["token"])
        self.assertGreater(info["token"], 1)
        self.assertEqual(fence["FENCE_LOCK"], "ctl/env")
        self.assertEqual(fence["FENCE_TTL_MS"], "7000")  # the TTL asked for
        run.signal(signal.SIGTERM)
        self.assertEqual(run.wait(5), 128 + signal.SIGTERM, run.log())
        self.wait_free("ctl/env")

        r = self.fencectl("lock", "ctl/env", "--", "sh", "-c", "echo $FENCE_TTL_MS")
        self.assertEqual((r.returncode, r.stdout), (0, "30000\n"), r.stderr)  # the default TTL

    def test_not_acquired_within_wait_exits_75(self):
        holder = self.spawn("lock", "ctl/busy", "--", "sleep", "300")
        token = self.wait_held("ctl/busy", holder)["token"]
        marker = self.path("ran")
        for wait, low, high in (("1500ms", 1.4, 6.0), (None, 0.0, 1.4)):  # None: try once
            with self.subTest(wait=wait):
                args = ["lock", "ctl/busy"] + (["--wait", wait] if wait else [])
                started = time.monotonic()
                r = self.fencectl(*(args + ["--", "touch", marker]))
                elapsed = time.monotonic() - started
                self.assertEqual(r.returncode, EXIT_NOT_ACQUIRED, r.stdout + r.stderr)
                self.assertTrue(low <= elapsed < high, "returned after %.2f s" % elapsed)
                self.assertTrue(r.stderr.startswith("fencectl: lock ctl/busy: "), r.stderr)
                self.assertFalse(os.path.exists(marker), "CMD ran without the lock")
        info = self.holder("ctl/busy")
        self.assertEqual((info["held"], info["token"], info["waiters"]), (True, token, 0), info)
        holder.signal(signal.SIGTERM)
        self.assertEqual(holder.wait(5), 128 + signal.SIGTERM, holder.log())
        self.wait_free("ctl/busy")

    # Regression: the client dated the validity granted from when it *sent* acquire, so the time
    # queued was counted against the lease and fencectl killed CMD at once with 76.
    def test_a_lease_granted_after_a_long_wait_keeps_its_command(self):
        holder = self.spawn("lock", "ctl/long-wait", "--", "sleep", "300")
        self.wait_held("ctl/long-wait", holder)
        waiter = self.spawn("lock", "ctl/long-wait", "--ttl", "2s", "--wait", "20s", "--",
                            "sleep", "1")
        fk_harness.wait_until(lambda: self.holder("ctl/long-wait")["waiters"] == 1, 10,
                              "the second fencectl to queue")
        # The fault: the waiter stays queued for longer than the 2 s TTL it asks for.
        window_end = time.monotonic() + 3.0
        while time.monotonic() < window_end:
            self.assertIsNone(waiter.proc.poll(), "the waiter ended while queued:\n" + waiter.log())
            time.sleep(0.05)
        holder.signal(signal.SIGTERM)
        self.assertEqual(holder.wait(5), 128 + signal.SIGTERM, holder.log())
        status = waiter.wait(10)
        self.wait_free("ctl/long-wait")
        self.assertEqual(status, 0, waiter.log())

    def test_bad_arguments_exit_64(self):
        marker = self.path("ran")
        cmd = ["--", "touch", marker]
        cases = {
            "bad name (space)": ["lock", "bad name"] + cmd,
            "bad name (empty segment)": ["lock", "a//b"] + cmd,
            "bad name (dot-dot)": ["lock", "../x"] + cmd,
            "bad --ttl": ["lock", "ctl/args", "--ttl", "5x"] + cmd,
            "zero --ttl": ["lock", "ctl/args", "--ttl", "0"] + cmd,
            "bad --wait": ["lock", "ctl/args", "--wait", "soon"] + cmd,
            "bad --grace": ["lock", "ctl/args", "--grace", "abc"] + cmd,
            "--ttl without a value": ["lock", "ctl/args", "--ttl"],
            "missing --": ["lock", "ctl/args", "touch", marker],
            "-- without CMD": ["lock", "ctl/args", "--"],
            "no CMD at all": ["lock", "ctl/args"],
            "no NAME": ["lock", "--", "touch", marker],
            "unknown option": ["--frobnicate", "status"],
            "unknown command": ["frobnicate"],
            "no command": [],
            "holder without NAME": ["holder"],
        }
        for what, args in cases.items():
            with self.subTest(what):
                r = self.fencectl(*args)
                self.assertEqual(r.returncode, EXIT_USAGE, "%s\n%s%s" % (args, r.stdout, r.stderr))
                self.assertTrue(r.stderr.startswith("fencectl: "), r.stderr)
                self.assertFalse(os.path.exists(marker), "CMD ran: %s" % args)
        # Names are the sidecar's to judge: it said why.
        r = self.fencectl("lock", "bad name", "--", "true")
        self.assertRegex(r.stderr, r"^fencectl: lock bad name: .+")
        self.assertFalse(self.holder("ctl/args")["held"])

    def test_unreachable_socket_exits_69(self):
        missing = self.path("missing.sock")
        refused = self.path("refused.sock")  # a socket file nobody listens on
        s = socketlib.socket(socketlib.AF_UNIX, socketlib.SOCK_STREAM)
        s.bind(refused)
        s.close()
        marker = self.path("ran")
        for sock in (missing, refused):
            for args in (["lock", "ctl/unreachable", "--wait", "1s", "--", "touch", marker],
                         ["holder", "ctl/unreachable"], ["holder", "ctl/unreachable", "--json"],
                         ["status"], ["status", "--json"]):
                with self.subTest(socket=os.path.basename(sock), args=args):
                    r = self.run_fencectl("--socket", sock, *args, timeout=15)
                    self.assertEqual(r.returncode, EXIT_UNAVAILABLE, r.stdout + r.stderr)
                    self.assertEqual(r.stdout, "")
                    self.assertTrue(r.stderr.startswith("fencectl: "), r.stderr)
                    self.assertFalse(os.path.exists(marker), "CMD ran without a sidecar")

    def test_socket_comes_from_fencekeeper_socket(self):
        env = {k: v for k, v in os.environ.items() if k != "FENCEKEEPER_SOCKET"}
        env["FENCEKEEPER_SOCKET"] = self.socket
        r = self.run_fencectl("status", env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"(?m)^zookeeper:\s+connected\b")
        r = self.run_fencectl("lock", "ctl/env-socket", "--", "sh", "-c", "echo $FENCE_TOKEN",
                              env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertGreater(int(r.stdout), 0)
        r = self.run_fencectl("holder", "ctl/env-socket", "--json", env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(json.loads(r.stdout)["held"])

        # A socket named by the environment that nobody serves: unreachable ...
        env["FENCEKEEPER_SOCKET"] = self.path("nobody.sock")
        r = self.run_fencectl("status", env=env)
        self.assertEqual(r.returncode, EXIT_UNAVAILABLE, r.stdout + r.stderr)
        self.assertIn("nobody.sock", r.stderr)
        # ... and --socket, when given, wins over it.
        r = self.run_fencectl("--socket", self.socket, "status", env=env)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_command_exit_status_passes_through(self):
        cases = [("exit 0", 0), ("exit 7", 7), ("exit 255", 255),
                 ("kill -KILL $$", 128 + signal.SIGKILL), ("kill -USR1 $$", 128 + signal.SIGUSR1)]
        for script, expected in cases:
            with self.subTest(script):
                r = self.fencectl("lock", "ctl/status", "--", "sh", "-c", script)
                self.assertEqual(r.returncode, expected, r.stderr)
                self.assertNotIn("lost", r.stderr)
                # CMD's end, whatever its status, releases the lease.
                self.wait_free("ctl/status")


class FencectlZooKeeperFrozenTest(FencectlCase):
    """ZooKeeper frozen under a holding fencectl (a ZooKeeper and sidecar of its own)."""
    SIDECAR_ARGS = ("--session-timeout", "4s")

    def test_fencectl_exits_in_bounded_time_when_zookeeper_is_frozen(self):
        zk = list(self.cluster.zk_pids)
        self.assertTrue(zk)
        sidecar = self.cluster.sidecars[0].proc.pid
        for frozen in (zk, zk + [sidecar]):  # ZooKeeper; and the sidecar too, answering nothing
            with self.subTest(frozen="zookeeper" + (" and sidecar" if sidecar in frozen else "")):
                name = "ctl/zk-frozen-%d" % len(frozen)
                go = self.path(name.replace("/", "-") + ".go")
                run = self.spawn("lock", name, "--grace", "100ms", "--", "sh", "-c",
                                 "while [ ! -e %s ]; do sleep 0.02; done; exit 5" % go)
                self.wait_held(name, run)
                for pid in frozen:
                    self.addCleanup(kill_quietly, pid, signal.SIGCONT)
                    os.kill(pid, signal.SIGSTOP)
                try:
                    ended_at = time.monotonic()
                    open(go, "w").close()  # CMD ends; the release's delete cannot reach ZooKeeper
                    status = run.wait(8)
                    elapsed = time.monotonic() - ended_at
                finally:
                    for pid in frozen:
                        kill_quietly(pid, signal.SIGCONT)
                sys.stderr.write("[%s] %s frozen: fencectl exited %.3f s after CMD was told to "
                                 "end\n" % (self._testMethodName, name, elapsed))
                self.assertEqual(status, 5, run.log())
                self.assertLessEqual(elapsed, 1.6, run.log())
                self.wait_free(name)


if __name__ == "__main__":
    unittest.main()
