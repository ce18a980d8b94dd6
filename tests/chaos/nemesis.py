"""The campaign's faults: what each kind does, and a schedule drawn from a seed.

Each fault is applied, held for its duration and healed before the next starts, and journaled
(CLOCK_MONOTONIC ns) so that the checker can attribute what happened to the fault it happened
under. The schedule (the kinds' order and every duration and choice) is drawn from the seed alone;
what a choice lands on (which node leads, which worker holds) is whatever runs at that moment.
"""

import os
import random
import signal
import time

KINDS = [
    "zk-leader-freeze", "zk-leader-kill", "zk-follower-freeze", "zk-follower-kill",
    "sidecar-freeze", "sidecar-kill", "sidecar-restart",
    "holder-freeze", "holder-kill", "holder-oom-kill", "waiter-freeze", "waiter-kill",
    "partition-sidecar", "partition-one-way", "partition-follower",
]


def schedule(seed):
    """An endless sequence of (kind, duration as a multiple of the unit, pick) from `seed`:
    every kind once in a shuffled round, round after round. `pick` in [0, 1) chooses among the
    candidates of the moment (which follower, which sidecar, which holder)."""
    rng = random.Random(seed)
    while True:
        kinds = KINDS[:]
        rng.shuffle(kinds)
        for kind in kinds:
            yield kind, rng.uniform(0.2, 2.5), rng.random(), rng.uniform(0.5, 1.5)


def _children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def process_tree(pid):
    """pid and its descendants, parents first."""
    tree, todo = [], [pid]
    while todo:
        p = todo.pop(0)
        tree.append(p)
        todo.extend(_children(p))
    return tree


def _signal_all(pids, sig):
    for p in pids:
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass


class Nemesis:
    def __init__(self, ensemble, sidecars, workers, cuts, journal_path, unit_s, ttl_s):
        self.zk = ensemble
        self.sidecars = sidecars
        self.workers = workers  # event-file paths; WORKER.fencectl holds the running pid
        self.cuts = cuts
        self.unit = unit_s
        self.ttl = ttl_s
        self._journal = open(journal_path, "a", buffering=1)

    def note(self, what):
        self._journal.write("%d %s\n" % (time.monotonic_ns(), what))

    # -- choosing targets ----------------------------------------------------------------------
    def _followers(self):
        leader = self.zk.leader()
        return [i for i in range(self.zk.size) if i != leader and self.zk.serving(i)]

    def _jobs(self, holding):
        """fencectl pids of the workers, those holding (a supervisor runs CMD) or waiting."""
        found = []
        for events in self.workers:
            try:
                pid = int(open(events + ".fencectl").read())
                os.kill(pid, 0)
            except (OSError, ValueError):
                continue
            if bool(_children(pid)) == holding:
                found.append(pid)
        return found

    def _wait_for_job(self, holding, timeout=3.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            jobs = self._jobs(holding)
            if jobs:
                return jobs
            time.sleep(0.02)
        return []

    # -- one fault -------------------------------------------------------------------------------
    def run(self, kind, scale, pick, gap):
        """Applies one fault of `kind` for `scale` units (a unit: T for the ensemble, sidecars
        and partitions; the TTL for holders and waiters), heals it, then waits `gap` units."""
        unit = self.ttl if kind.startswith(("holder", "waiter")) else self.unit
        hold = scale * unit
        target = self._apply(kind, pick, hold)
        if target is None:
            self.note("fault-skipped kind=%s (no target)" % kind)
        time.sleep(gap * self.unit)

    def _apply(self, kind, pick, hold):
        choose = lambda items: items[int(pick * len(items))] if items else None  # noqa: E731
        if kind.startswith("zk-"):
            node = self.zk.leader() if "leader" in kind else choose(self._followers())
            if node is None or node < 0:
                return None
            self.note("fault-start kind=%s target=zk%d hold_ms=%d" % (kind, node, hold * 1000))
            if kind.endswith("freeze"):
                self.zk.command("freeze %d" % node)
                time.sleep(hold)
                self.zk.command("thaw %d" % node)
            else:
                self.zk.command("kill %d" % node)
                time.sleep(hold)
                self.zk.command("restart %d" % node)
            self.note("fault-end kind=%s" % kind)
            return node
        if kind.startswith("sidecar-"):
            sidecar = choose(self.sidecars)
            self.note("fault-start kind=%s target=sidecar%d hold_ms=%d" % (
                kind, sidecar.index, hold * 1000))
            if kind == "sidecar-freeze":
                sidecar.signal(signal.SIGSTOP)
                time.sleep(hold)
                sidecar.signal(signal.SIGCONT)
            elif kind == "sidecar-kill":
                sidecar.kill()
                time.sleep(hold)
                sidecar.start()
            else:
                sidecar.stop()
                sidecar.start()
            self.note("fault-end kind=%s" % kind)
            return sidecar
        if kind.startswith(("holder-", "waiter-")):
            job = choose(self._wait_for_job(kind.startswith("holder")))
            if job is None:
                return None
            tree = process_tree(job)
            self.note("fault-start kind=%s target=%s hold_ms=%d" % (
                kind, ",".join(map(str, tree)), hold * 1000))
            if kind.endswith("freeze"):
                # The whole job, as a GC pause or a frozen container: fencectl, its supervisor
                # and CMD.
                _signal_all(tree, signal.SIGSTOP)
                self.note("frozen pids=%s" % ",".join(map(str, tree)))
                time.sleep(hold)
                _signal_all(tree, signal.SIGCONT)
                self.note("thawed pids=%s" % ",".join(map(str, tree)))
            elif kind == "holder-oom-kill":
                # fencectl and its supervisor at once, as the OOM killer takes a group: only the
                # kernel (the supervisor's PID namespace) is left to end CMD.
                _signal_all(tree[:2], signal.SIGKILL)
            else:
                _signal_all([job], signal.SIGKILL)
            self.note("fault-end kind=%s" % kind)
            return job
        if kind.startswith("partition-"):
            if kind == "partition-follower":
                leader = self.zk.leader()
                follower = choose(self._followers())
                if follower is None or leader < 0:
                    return None
                self.note("fault-start kind=%s target=zk%d,zk%d hold_ms=%d" % (
                    kind, follower, leader, hold * 1000))
                cuts = [self.cuts.cut(self.zk.uids[follower], self.zk.quorum_port_pair(leader)),
                        self.cuts.cut(self.zk.uids[leader], self.zk.quorum_port_pair(follower))]
            else:
                sidecar = choose(self.sidecars)
                self.note("fault-start kind=%s target=sidecar%d hold_ms=%d" % (
                    kind, sidecar.index, hold * 1000))
                if kind == "partition-sidecar":
                    cuts = [self.cuts.cut(sidecar.uid, self.zk.client_ports, "both")]
                else:  # what ZooKeeper sends the sidecar is lost, what it sends arrives
                    cuts = [self.cuts.cut(sidecar.uid, self.zk.client_ports, "back",
                                          "%d-%d" % (self.zk.uids[0], self.zk.uids[-1]))]
            time.sleep(hold)
            for cut in cuts:
                self.cuts.heal(cut)
            self.note("fault-end kind=%s" % kind)
            return cuts
        raise ValueError("unknown fault kind %r" % kind)
