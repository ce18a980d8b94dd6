"""The fault campaign: a 3-node ensemble, 3 sidecars, a fenced store and worker loops through
`fencectl lock`, while the nemesis draws faults from a seed; then checker.py on the history.
Run it through tests/chaos/run.sh (which builds and checks the machine first).

    campaign.py --build DIR [--minutes N] [--seed S] [--workdir DIR] [--keep]
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import checker  # noqa: E402
import cluster  # noqa: E402
import nemesis  # noqa: E402
import partition  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SESSION_TIMEOUT_MS = 3000
TTL_MS = 2000
WAIT_S = 10
SIDECARS = 3
WORKERS_PER_SIDECAR = 2


def lock_nodes(connect):
    """The lock's nodes still in ZooKeeper (kazoo, from Debian's python3-kazoo)."""
    from kazoo.client import KazooClient
    zk = KazooClient(hosts=connect, timeout=10)
    zk.start(timeout=15)
    try:
        path = "/fencekeeper/locks/counter"
        return [path + "/" + c for c in zk.get_children(path)] if zk.exists(path) else []
    finally:
        zk.stop()
        zk.close()


def final_value(port, token):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/objects/counter", headers={"Fence-Lock": "counter",
                                                     "Fence-Token": str(token)})
    response = conn.getresponse()
    body = response.read()
    return int(body) if response.status == 200 else 0 if response.status == 404 else None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", required=True)
    p.add_argument("--minutes", type=float, default=3)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--workdir", default=None)
    p.add_argument("--keep", action="store_true", help="keep the logs even when it passes")
    args = p.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    workdir = args.workdir or tempfile.mkdtemp(prefix="fk-chaos-")
    os.makedirs(workdir, exist_ok=True)
    os.chmod(workdir, 0o755)
    os.makedirs(os.path.join(workdir, "workers"), exist_ok=True)
    print("chaos: seed %d (replay: tests/chaos/run.sh --seed %d), %.1f min, logs in %s" % (
        seed, seed, args.minutes, workdir), flush=True)

    why_not = partition.available()
    if why_not:
        print("chaos: cannot cut connections here: %s" % why_not, file=sys.stderr)
        return 2
    partition.remove_stale()
    cuts = partition.Cuts()
    ensemble = store = None
    sidecars, workers = [], []
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1) or sys.exit(130))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(1) or sys.exit(130))
    meta = {"seed": seed, "session_timeout_ms": SESSION_TIMEOUT_MS, "ttl_ms": TTL_MS,
            "wall_minus_mono_ns": time.time_ns() - time.monotonic_ns()}
    try:
        ensemble = cluster.Ensemble(args.build, workdir)
        store = cluster.Store(args.build, workdir)
        for i in range(SIDECARS):
            sidecars.append(cluster.Sidecar(args.build, workdir, i, ensemble.connect,
                                            "%dms" % SESSION_TIMEOUT_MS))
        start = time.monotonic_ns()
        until = start + int(args.minutes * 60e9)
        meta["start_mono_ns"] = start
        # A run's bound: its wait, a critical section, the TTL, the release's second, the
        # longest freeze of a holder or waiter (2.5 TTL) and a slack of 5 s.
        bound_s = WAIT_S + 1 + TTL_MS / 1000 * 3.5 + 1 + 5
        fencectl = os.path.join(args.build, "client_lib", "fencectl")
        event_files = []
        for i in range(SIDECARS * WORKERS_PER_SIDECAR):
            sidecar = sidecars[i % SIDECARS]
            events = os.path.join(workdir, "workers", "w%d.events" % i)
            event_files.append(events)
            workers.append(subprocess.Popen(
                [sys.executable, os.path.join(HERE, "worker.py"), "--fencectl", fencectl,
                 "--socket", sidecar.socket, "--port", str(store.port), "--events", events,
                 "--name", "w%d" % i, "--until-ns", str(until), "--ttl", "%dms" % TTL_MS,
                 "--wait", "%ds" % WAIT_S, "--bound-s", str(bound_s)]))
        nem = nemesis.Nemesis(ensemble, sidecars, event_files, cuts,
                              os.path.join(workdir, "nemesis.log"), SESSION_TIMEOUT_MS / 1000,
                              TTL_MS / 1000)
        time.sleep(2 * SESSION_TIMEOUT_MS / 1000)  # a quiet start: the first row's baseline
        for kind, scale, pick, gap in nemesis.schedule(seed):
            if time.monotonic_ns() + (scale + gap) * SESSION_TIMEOUT_MS * 1e6 > until:
                break
            nem.run(kind, scale, pick, gap)
        meta["end_mono_ns"] = max(time.monotonic_ns(), until)
        for w in workers:
            w.wait(timeout=bound_s + 30)
        # Every sidecar stopped as Kubernetes would: their sessions close, their nodes go.
        for s in sidecars:
            s.stop()
        meta["nodes_left"] = lock_nodes(ensemble.connect)
        tokens = [int(line.split("token=")[1].split()[0])
                  for f in event_files if os.path.exists(f)
                  for line in open(f) if " cs token=" in line]
        meta["final_value"] = final_value(store.port, max(tokens, default=0) + 1)
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait()
        for s in sidecars:
            s.kill()
        cuts.close()
        if store:
            store.close()
        if ensemble:
            ensemble.close()
    json.dump(meta, open(os.path.join(workdir, "meta.json"), "w"), indent=1)
    rc = checker.main(["checker", workdir])
    if rc == 0 and not args.keep and not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    elif rc != 0:
        print("chaos: FAILED; seed %d; logs kept in %s" % (seed, workdir))
    return rc


if __name__ == "__main__":
    sys.exit(main())
