"""Reads a campaign's history and says whether fencing and the lock held.

Sources (all in the campaign's directory):
  workers/W.events  worker.py's runs and critical_section.py's steps, CLOCK_MONOTONIC ns first:
                    "NS W cs token=T start|get status=S value=V|put status=S value=V|end reason=R"
                    "NS W run-start pid=P", "NS W run-end pid=P rc=C", "NS W run-outlived ..."
  store.log         the fenced store's requests: "PUT key=K lock=L token=T -> 200 accepted seq=N"
  nemesis.log       "NS fault-start kind=K ...", "NS fault-end ...", "NS frozen pids=...",
                    "NS thawed pids=...", "NS fault-skipped kind=K ..."
  sidecarI.log      grants, losses and vouching lapses, stamped in UTC wall-clock ms
  meta.json         the run's parameters and what the campaign found at its end

Failures: an accepted write with a lower token than one accepted before; a lost increment (the
accepted writes, in the store's order, must write 1, 2, 3, ... and end at the final value); one
token granted to two critical sections; two critical sections of different tokens overlapping in
time, unless the older was frozen by the nemesis and every request it made inside the newer one
was refused (fenced: counted, not a failure); a lock node left after the run; a fencectl that
outlived its bound.
"""

import collections
import datetime
import glob
import json
import os
import re
import sys

CS = re.compile(r"^(\d+) (\S+) cs token=(\d+) (start|get|put|end)(?: (.*))?$")
RUN = re.compile(r"^(\d+) (\S+) (run-start|run-end|run-outlived) (.*)$")
STORE = re.compile(r"(GET|PUT) key=(\S+) lock=(\S+) token=(\d+) -> (\d+) (.*)$")
SEQ = re.compile(r"accepted seq=(\d+)")
STORE_TIME = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})\] ")
SIDECAR_TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}) ")
MS = 1_000_000


class Section:
    """One critical section: one grant's CMD."""

    def __init__(self, worker, token):
        self.worker = worker
        self.token = token
        self.events = []  # (ns, kind, status or None)

    @property
    def start(self):
        return self.events[0][0]

    @property
    def last(self):
        return self.events[-1][0]

    def accepted(self, kind):
        return [e for e in self.events if e[1] == kind and e[2] in (200, 404)]


def read_lines(path):
    with open(path) as f:
        return f.read().splitlines()


def fields(text):
    return dict(kv.split("=", 1) for kv in (text or "").split() if "=" in kv)


def read_sections(workdir):
    """Critical sections by start (a token's second start is a second section), and runs."""
    sections, runs = [], []
    open_by_worker = {}
    for path in sorted(glob.glob(os.path.join(workdir, "workers", "*.events"))):
        for line in read_lines(path):
            m = CS.match(line.strip())
            if m:
                ns, worker, token, kind, rest = int(m[1]), m[2], int(m[3]), m[4], m[5]
                f = fields(rest)
                if kind == "start":
                    open_by_worker[worker] = Section(worker, token)
                    sections.append(open_by_worker[worker])
                section = open_by_worker.get(worker)
                if section is None or section.token != token:
                    continue
                status = int(f["status"]) if "status" in f else None
                section.events.append((ns, kind, status, int(f.get("value", -1))))
                continue
            m = RUN.match(line.strip())
            if m:
                runs.append((int(m[1]), m[2], m[3], fields(m[4])))
    return sections, runs


def read_store(workdir):
    """[(seq, method, token, status, wall s or None)] of accepted requests, and [(wall s or None,
    method, token, status)] of refused ones (the store logs in local time, to the ms)."""
    accepted, refused = [], []
    for line in read_lines(os.path.join(workdir, "store.log")):
        m = STORE.search(line)
        if not m:
            continue
        t = STORE_TIME.match(line)
        wall = datetime.datetime.strptime(t[1], "%Y-%m-%d %H:%M:%S.%f").timestamp() if t else None
        seq = SEQ.search(m[6])
        if seq:
            accepted.append((int(seq[1]), m[1], int(m[4]), int(m[5]), wall))
        else:
            refused.append((wall, m[1], int(m[4]), int(m[5])))
    accepted.sort()
    return accepted, refused


def read_journal(workdir):
    faults, freezes = [], []  # (ns, kind), (from ns, to ns, pids)
    frozen_at = {}
    for line in read_lines(os.path.join(workdir, "nemesis.log")):
        ns, what, *rest = line.split(" ", 2)
        ns = int(ns)
        f = fields(" ".join(rest))
        if what == "fault-start":
            faults.append((ns, f["kind"]))
        elif what == "frozen":
            frozen_at[f["pids"]] = ns
        elif what == "thawed" and f["pids"] in frozen_at:
            freezes.append((frozen_at.pop(f["pids"]), ns, set(map(int, f["pids"].split(",")))))
    return faults, freezes


def read_sidecars(workdir, wall_to_mono):
    """Per sidecar log: grants [(ns, token)], losses [ns], lapses [(ns, session, lived)]."""
    grants, losses, lapses = [], [], []
    for path in sorted(glob.glob(os.path.join(workdir, "sidecar*.log"))):
        text = read_lines(path)
        vouched_later = collections.defaultdict(int)  # session -> how many "vouched for" lines
        parsed = []
        for line in text:
            m = SIDECAR_TIME.match(line)
            if not m:
                continue
            wall = datetime.datetime.strptime(m[1], "%Y-%m-%dT%H:%M:%S.%f").replace(
                tzinfo=datetime.timezone.utc).timestamp()
            parsed.append((wall_to_mono(wall), line))
        for i, (ns, line) in enumerate(parsed):
            g = re.search(r" grant lock=\S+ token=(\d+)", line)
            if g:
                grants.append((ns, int(g[1])))
            if re.search(r" lost lock=\S+ token=\d+", line):
                losses.append(ns)
            lapse = re.search(r"zookeeper session (0x[0-9a-f]+) can no longer be vouched for", line)
            if lapse:
                session = lapse[1]
                lived = any(("zookeeper session %s vouched for" % session) in later
                            for _, later in parsed[i + 1:])
                lapses.append((ns, session, lived))
    return grants, losses, lapses


def check(workdir):
    """(failures, table rows, totals) for the campaign in `workdir`."""
    with open(os.path.join(workdir, "meta.json")) as f:
        meta = json.load(f)
    offset_ns = meta["wall_minus_mono_ns"]
    wall_to_mono = lambda wall: int(wall * 1e9) - offset_ns  # noqa: E731
    unit_ns = meta["session_timeout_ms"] * 1_000_000
    sections, runs = read_sections(workdir)
    accepted, refused = read_store(workdir)
    faults, freezes = read_journal(workdir)
    grants, losses, lapses = read_sidecars(workdir, wall_to_mono)
    failures = []

    # Fencing at the store: tokens never go down in its acceptance order.
    highest = 0
    for seq, method, token, _, _ in accepted:
        if token < highest:
            failures.append("store accepted %s seq=%d with token %d after token %d" % (
                method, seq, token, highest))
        highest = max(highest, token)

    # No lost increment: the accepted writes wrote 1, 2, 3, ... and the last is the final value.
    put_value = {}
    for s in sections:
        for e in s.accepted("put"):
            put_value[s.token] = e[3]
    puts = [(seq, token) for seq, method, token, _, _ in accepted if method == "PUT"]
    for rank, (seq, token) in enumerate(puts, 1):
        if token in put_value and put_value[token] != rank:
            failures.append("lost or doubled increment: write %d (seq %d, token %d) wrote %d" % (
                rank, seq, token, put_value[token]))
    if meta.get("final_value") is not None and meta["final_value"] != len(puts):
        failures.append("the counter is %s after %d accepted writes" % (meta["final_value"],
                                                                       len(puts)))

    # One token, one critical section; one grant per token across sidecars.
    by_token = collections.Counter(s.token for s in sections)
    for token, n in by_token.items():
        if n > 1:
            failures.append("token %d ran %d critical sections" % (token, n))
    granted = collections.Counter(token for _, token in grants)
    for token, n in granted.items():
        if n > 1:
            failures.append("token %d granted %d times" % (token, n))

    # No two critical sections of different tokens overlap in time, unless fenced. A request's
    # step is logged when its answer arrives, which a freeze can delay long after the store
    # accepted it: the store's own stamp (to the ms, hence + 1 ms) bounds when it was accepted.
    store_ns = {}
    for _, method, token, _, wall in accepted:
        if wall is not None:
            store_ns.setdefault((token, method.lower()), wall_to_mono(wall) + MS)
    accepted_by = lambda token, e: min(e[0], store_ns.get((token, e[1]), e[0]))  # noqa: E731
    overlaps = []  # (ns, fenced)
    run_pids = collections.defaultdict(set)
    for ns, worker, kind, f in runs:
        if kind == "run-start":
            run_pids[worker].add(int(f["pid"]))
    ordered = sorted((s for s in sections if s.events), key=lambda s: s.start)
    for i, newer in enumerate(ordered):
        for older in ordered[:i]:
            if older.token == newer.token or older.last <= newer.start:
                continue
            first, second = (older, newer) if older.token < newer.token else (newer, older)
            inside = [e for e in first.events if e[0] > second.start]
            if not inside:
                continue
            any_accepted = any(e[1] in ("get", "put") and e[2] in (200, 404)
                               and accepted_by(first.token, e) > second.start for e in inside)
            was_frozen = any(f0 < first.last and f1 > first.start and pids & run_pids[first.worker]
                             for f0, f1, pids in freezes)
            fenced = was_frozen and not any_accepted
            overlaps.append((second.start, fenced))
            if not fenced:
                failures.append(
                    "critical sections overlap: %s token %d (%d..%d) and %s token %d from %d; "
                    "%s" % (first.worker, first.token, first.start, first.last, second.worker,
                            second.token, second.start,
                            "accepted inside" if any_accepted else "not frozen by the nemesis"))

    for ns, worker, kind, f in runs:
        if kind == "run-outlived":
            failures.append("%s: fencectl pid %s outlived its bound (%s s)" % (
                worker, f.get("pid"), f.get("bound_s")))
    if meta.get("nodes_left"):
        failures.append("lock nodes left after the run: %s" % ", ".join(meta["nodes_left"]))

    # One row per fault kind: what happened from each fault's start to the next one's.
    end_ns = meta["end_mono_ns"]
    windows = [(ns, faults[i + 1][0] if i + 1 < len(faults) else end_ns, kind)
               for i, (ns, kind) in enumerate(faults)]
    if faults:
        windows.insert(0, (meta["start_mono_ns"], faults[0][0], "(none: before the first)"))
    puts_ok = sorted(e[0] for s in sections for e in s.accepted("put"))
    # From the store's log: a critical section killed at a loss may never log the answer.
    refused_at = sorted(wall_to_mono(wall) for wall, *_ in refused if wall is not None)
    rows = collections.OrderedDict()
    for start, end, kind in windows:
        row = rows.setdefault(kind, collections.Counter())
        row["faults"] += 0 if kind.startswith("(") else 1
        within = lambda ns: start <= ns < end  # noqa: E731
        row["grants"] += sum(1 for ns, _ in grants if within(ns))
        row["accepted"] += sum(1 for ns in puts_ok if within(ns))
        row["refused"] += sum(1 for ns in refused_at if within(ns))
        row["leases lost"] += sum(1 for ns in losses if within(ns))
        row["overlaps (fenced)"] += sum(1 for ns, _ in overlaps if within(ns))
        row["lapses, session lived"] += sum(1 for ns, _, lived in lapses if lived and within(ns))
        marks = [start] + [ns for ns in puts_ok if within(ns)] + [end]
        stall = max(b - a for a, b in zip(marks, marks[1:]))
        row["stall_ns"] = max(row["stall_ns"], stall)
    return failures, rows, {"sections": len(sections), "writes": len(puts),
                            "refused": len(refused), "faults": len(faults)}


COLUMNS = ["faults", "grants", "accepted", "refused", "leases lost", "overlaps (fenced)",
           "lapses, session lived"]


def format_table(rows, unit_ms):
    head = "| fault kind | " + " | ".join(COLUMNS) + " | longest stall (T) |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 2)]
    total = collections.Counter()
    for kind, row in rows.items():
        cells = [str(row[c]) for c in COLUMNS]
        lines.append("| %s | %s | %.1f |" % (kind, " | ".join(cells),
                                              row["stall_ns"] / 1e6 / unit_ms))
        for c in COLUMNS:
            total[c] += row[c]
        total["stall_ns"] = max(total["stall_ns"], row["stall_ns"])
    lines.append("| all | %s | %.1f |" % (" | ".join(str(total[c]) for c in COLUMNS),
                                          total["stall_ns"] / 1e6 / unit_ms))
    return "\n".join(lines)


def main(argv):
    workdir = argv[1]
    failures, rows, totals = check(workdir)
    with open(os.path.join(workdir, "meta.json")) as f:
        meta = json.load(f)
    print(format_table(rows, meta["session_timeout_ms"]))
    print("%(faults)d faults, %(sections)d critical sections, %(writes)d accepted writes, "
          "%(refused)d requests refused by the store" % totals)
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
