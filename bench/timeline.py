#!/usr/bin/python3
"""Where an acquire+release cycle's time goes, from recorded system calls of the processes on it.

bench/profile_timeline.sh writes the traces. Each cycle is followed hop by hop through the system
calls that hand it on (a write that wakes the next thread, the next thread's first call), and the
median of each step over all cycles is printed, beside the same for the ZooKeeper C client's own
recipe (create, getChildren, delete from one thread, the bench's 6d row).

  timeline.py FDS FK_TRACE [RECIPE_TRACE]
      # FDS: the processes' file descriptors (ls -l /proc/PID/fd, each under `# COMM`); the
      # traces of fk_check_loop's and fk_recipe_loop's runs, as `perf trace -i` prints them
"""
import argparse
import re
import statistics
import sys

LINE = re.compile(r"^\s*(\d+\.\d+) \(\s*([\d.]*)(?: ms)?\s*\): (\S+)/(\d+) (.*)$")
CALL = re.compile(r"^([a-z_0-9]+)\((.*)")
FD = re.compile(r"(?<![a-z])fd: (\d+)(?:<([a-z_]+))?")
KIND = re.compile(r"^(socket|pipe|anon_inode)")


class Event:
    __slots__ = ("t", "tid", "call", "kind")

    def __init__(self, t, tid, call, kind):
        self.t, self.tid, self.call, self.kind = t, tid, call, kind


def fd_kinds(path):
    """`ls -l /proc/PID/fd` listings, each headed by a line `# COMM`: COMM -> {fd: kind}. A
    recorded trace names no file descriptors, so they are looked up here."""
    kinds, comm = {}, None
    with open(path) as f:
        for line in f:
            if line.startswith("# "):
                comm = line[2:].strip()
                kinds.setdefault(comm, {})
                continue
            parts = line.split()
            if comm and len(parts) >= 3 and parts[-2] == "->" and parts[-3].isdigit():
                kind = KIND.match(parts[-1])
                kinds[comm][int(parts[-3])] = kind.group(1) if kind else "file"
    return kinds


def parse(path, kinds):
    """The trace's system calls, by start time (ms). A call's continuation line is skipped: the
    thread's next call marks when it ran again."""
    events, names = [], {}
    with open(path, errors="replace") as f:
        for line in f:
            m = LINE.match(line)
            if not m or "[continued]" in m.group(5):
                continue
            call = CALL.match(m.group(5))
            if not call:
                continue
            tid, comm = int(m.group(4)), m.group(3)
            names[tid] = comm
            fd, kind = FD.search(call.group(2)), ""
            if fd:
                kind = fd.group(2) or kinds.get(comm, {}).get(int(fd.group(1)), "")
            events.append(Event(float(m.group(1)), tid, call.group(1), kind))
    events.sort(key=lambda e: e.t)
    return events, names


def roles(events, comm, io_calls, names):
    """The threads of the process named `comm`: 'main' is its first thread (the lowest id); the
    others are told apart by the calls they make (`io_calls`: role -> a call only it makes)."""
    mine = sorted(t for t in {e.tid for e in events} if names.get(t) == comm)
    if not mine:
        sys.exit(f"timeline: no thread of {comm} in the trace")
    pid = mine[0]
    found = {"main": pid}
    for role, call in io_calls.items():
        for t in mine:
            if t != pid and t not in found.values() and any(
                    e.tid == t and e.call == call for e in events):
                found[role] = t
                break
    rest = [t for t in mine if t not in found.values()]
    if rest:
        found["other"] = rest[0]
    return found


def follow(events, chain, limit_ms=20.0):
    """Walks `chain` (step name, tid, predicate on an event[, LATEST]) through the events again
    and again: each step is the first matching event after the one before, but a run of steps
    marked LATEST takes the last matching events before the step that follows the run (the last
    answer the loop waited for, not the first that woke it). A walk that does not end within
    `limit_ms` (an event the tracer lost) is dropped, and the next starts after its first step.
    Returns one list of times per completed walk."""
    walks, n, start = [], len(events), 0
    matches = lambda k, e: e.tid == chain[k][1] and chain[k][2](e)  # noqa: E731
    latest = lambda k: len(chain[k]) > 3 and chain[k][3]  # noqa: E731
    while True:
        i, at, k = start, [], 0
        while k < len(chain):
            run = k
            while latest(k):
                k += 1  # the run's steps are placed once the step after it is found
            while i < n and not matches(k, events[i]):
                i += 1
            if i == n:
                return walks
            placed, j = [i], i
            for back in range(k - 1, run - 1, -1):
                j -= 1
                floor = at[-1] if at else -1
                while j > floor and not matches(back, events[j]):
                    j -= 1
                if j <= floor:
                    break
                placed.append(j)
            if len(placed) != k - run + 1 or (at and events[i].t - events[at[0]].t > limit_ms):
                break
            at += reversed(placed)
            if len(at) == 1:
                start = i + 1
            i, k = i + 1, k + 1
        else:
            walks.append([events[x].t for x in at])
            start = i


def report(title, chain, walks):
    """Prints each step's median, and their sums by kind: the round trips to ZooKeeper (a request
    sent to its answer read, in the C client's I/O thread), hand-offs (a step that ends on
    another thread: from the call that wakes it to its first call once woken) and work within
    one thread. Returns the sums."""
    if not walks:
        print(f"{title}: no complete walk found in the trace")
        return {}
    print(f"{title} ({len(walks)} walks; median of each step, us)")
    sums = {"ZooKeeper": 0.0, "hand-offs": 0.0, "work in a thread": 0.0}
    hops = 0
    for k in range(1, len(chain)):
        d = statistics.median((w[k] - w[k - 1]) * 1000 for w in walks)
        if "answer read" in chain[k][0]:
            kind = "ZooKeeper"
        elif chain[k][1] != chain[k - 1][1]:
            kind, hops = "hand-offs", hops + 1
        else:
            kind = "work in a thread"
        sums[kind] += d
        print(f"  {d:8.1f}  {chain[k - 1][0]} -> {chain[k][0]}")
    for kind, d in sums.items():
        extra = f" ({hops} of them)" if kind == "hand-offs" else ""
        print(f"  {d:8.1f}  sum: {kind}{extra}")
    print(f"  {sum(sums.values()):8.1f}  sum of the medians")
    starts = [w[0] for w in walks]
    if len(starts) > 1:
        whole = statistics.median((b - a) * 1000 for a, b in zip(starts, starts[1:]))
        print(f"  {whole:8.1f}  median start-to-start of consecutive walks")
    return sums


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fds")
    ap.add_argument("trace")
    ap.add_argument("recipe_trace", nargs="?")
    a = ap.parse_args()
    kinds = fd_kinds(a.fds)
    events, names = parse(a.trace, kinds)

    c = roles(events, "fk_check_loop", {"io": "writev"}, names)
    s = roles(events, "fencekeeper", {}, names)
    if "io" not in c:
        sys.exit(f"timeline: threads not found (client {c}, sidecar {s})")

    def call(name, kind=None):
        return lambda e: e.call == name and (kind is None or e.kind == kind)

    anything = lambda e: True  # noqa: E731
    # The sidecar's side of a call, the same for acquire and release: one thread, which runs the
    # single-threaded ZooKeeper C client inside its own loop.
    sidecar = [
        ("sidecar loop reads the call", s["main"], call("read", "socket")),
        ("request sent to ZooKeeper", s["main"], call("sendto", "socket")),
        # The last answer the call waited for (an acquire's listing, sent behind its create; a
        # release's delete, which its lock's watch event may come before).
        ("ZooKeeper's answer read", s["main"], call("recvfrom", "socket"), True),
        ("loop sends the RPC answer", s["main"], call("writev")),
        ("client I/O thread reads it", c["io"], call("read", "socket")),
    ]
    # A caller hands each call to the client's I/O thread (an eventfd `write`) and waits on a
    # condition variable, which the I/O thread's futex wakes; a released Lease drops with no hop.
    cycle = [
        ("acquire: caller hands the call to its I/O thread", c["main"], call("write")),
        ("acquire: client I/O thread sends it", c["io"], call("writev")),
    ] + [(f"acquire: {n}", *rest) for n, *rest in sidecar] + [
        ("acquire: client I/O thread wakes the caller", c["io"], call("futex")),
        ("acquire: caller runs", c["main"], anything),
        ("release: caller hands the call to its I/O thread", c["main"], call("write")),
        ("release: client I/O thread sends it", c["io"], call("writev")),
    ] + [(f"release: {n}", *rest) for n, *rest in sidecar] + [
        ("release: client I/O thread wakes the caller", c["io"], call("futex")),
        ("release: caller runs", c["main"], anything),
    ]
    fk = report("fencekeeper acquire+release", cycle, follow(events, cycle))

    if a.recipe_trace:
        events, names = parse(a.recipe_trace, kinds)
        r = roles(events, "fk_recipe_loop", {"zk": "sendto"}, names)
        if "zk" not in r:
            sys.exit(f"timeline: recipe threads not found ({r})")
        # A synchronous call's answer is handed to its caller by the I/O thread itself.
        one = [
            ("caller queues the request (pipe)", r["main"], call("write", "pipe")),
            ("C client I/O thread wakes", r["zk"], call("read", "pipe")),
            ("request sent to ZooKeeper", r["zk"], call("sendto", "socket")),
            ("ZooKeeper's answer read", r["zk"], call("recvfrom", "socket")),
            ("I/O thread wakes the caller", r["zk"], call("futex")),
            ("caller runs", r["main"], anything),
        ]
        recipe = [(f"{op}: {n}", t, p) for op in ("create", "getChildren", "delete")
                  for n, t, p in one]
        base = report("recipe: C client create+getChildren+delete", recipe,
                      follow(events, recipe))
        if fk and base:
            print("fencekeeper less the recipe, us:")
            for kind in fk:
                print(f"  {fk[kind] - base[kind]:+8.1f}  {kind}")


if __name__ == "__main__":
    main()
