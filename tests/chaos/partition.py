"""Network cuts on loopback for the fault campaign, with iptables rules in a chain of its own.

Processes are told apart by uid (every sidecar and every ZooKeeper node runs as a uid of its own)
and connections by a conntrack mark: a rule marks the connections a cut concerns from the first
packet its owner sends on them, and a second rule drops the marked packets of one direction or
both. The chain hangs off OUTPUT, which every loopback packet crosses once. `close()` removes the
chain and its jump; `remove_stale()` removes chains left by campaigns that died.
"""

import os
import re
import subprocess

PREFIX = "FK_CHAOS_"


def _iptables(*args, check=True):
    return subprocess.run(["iptables", "-w", *args], check=check, capture_output=True, text=True)


def available():
    """Why cuts cannot be made here, or None when they can."""
    if os.geteuid() != 0:
        return "not root"
    try:
        probe = PREFIX + "probe%d" % os.getpid()
        _iptables("-N", probe)
        try:
            _iptables("-A", probe, "-m", "owner", "--uid-owner", "1", "-j",
                      "CONNMARK", "--set-mark", "1")
            _iptables("-A", probe, "-m", "connmark", "--mark", "1", "-j", "DROP")
        finally:
            _iptables("-F", probe, check=False)
            _iptables("-X", probe, check=False)
    except (OSError, subprocess.CalledProcessError) as e:
        return "iptables with the owner and connmark matches: %s" % (
            getattr(e, "stderr", "") or e)
    return None


def remove_stale():
    """Removes the chains of campaigns whose process is gone."""
    listing = _iptables("-S", check=False).stdout
    for chain in set(re.findall(r"^-N (%s(\d+))$" % PREFIX, listing, re.M)):
        name, pid = chain
        if not os.path.exists("/proc/%s" % pid):
            _drop_chain(name)


def _drop_chain(name):
    while _iptables("-D", "OUTPUT", "-j", name, check=False).returncode == 0:
        pass
    _iptables("-F", name, check=False)
    _iptables("-X", name, check=False)


class Cuts:
    """The campaign's chain. Each cut is a set of rules tagged with its own mark."""

    def __init__(self):
        self.chain = PREFIX + str(os.getpid())
        _drop_chain(self.chain)
        _iptables("-N", self.chain)
        _iptables("-I", "OUTPUT", "1", "-j", self.chain)
        self._next_mark = 0xfc00
        self._rules = {}  # cut id -> the rules' arguments

    def _add(self, cut, *rule):
        _iptables("-A", self.chain, *rule)
        self._rules.setdefault(cut, []).append(rule)

    def cut(self, from_uid, to_ports, drop="both", replier_uids=None):
        """Cuts the TCP connections that `from_uid` opens to `to_ports` (those open now and new
        ones). drop: "both" directions, "out" (what from_uid sends), or "back" (what the other
        end, `replier_uids` ("A-B" or "A"), sends back). Returns the cut's id for heal()."""
        mark = self._next_mark
        self._next_mark += 1
        tag = ["-m", "connmark", "--mark", "%#x" % mark]
        ports = ",".join(str(p) for p in to_ports)
        self._add(mark, "-p", "tcp", "-m", "owner", "--uid-owner", str(from_uid),
                  "-m", "multiport", "--dports", ports, "-j", "CONNMARK", "--set-mark", "%#x" % mark)
        if drop == "both":
            self._add(mark, *tag, "-j", "DROP")
        elif drop == "out":
            self._add(mark, *tag, "-m", "owner", "--uid-owner", str(from_uid), "-j", "DROP")
        elif drop == "back":
            self._add(mark, *tag, "-m", "owner", "--uid-owner", replier_uids, "-j", "DROP")
        else:
            raise ValueError("drop: both, out or back, not %r" % drop)
        return mark

    def heal(self, cut):
        for rule in self._rules.pop(cut, []):
            _iptables("-D", self.chain, *rule, check=False)

    def close(self):
        self._rules.clear()
        _drop_chain(self.chain)
