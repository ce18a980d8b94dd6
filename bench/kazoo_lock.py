#!/usr/bin/python3
"""kazoo's Lock recipe, acquire+release back to back on one lock: fk_bench's row 6a.

Times each cycle inside Python (time.perf_counter_ns), writes the samples (ns, one a line) to
--samples and prints their percentiles. Bounded by --cycles and --seconds. Debian's python3-kazoo:
run it with /usr/bin/python3.
"""
import argparse
import sys
import time

from kazoo.client import KazooClient
from kazoo.recipe.lock import Lock


def percentile(sorted_ns, q):
    """Nearest rank, as bench/stats.h."""
    if not sorted_ns:
        return float("nan")
    rank = max(1, -(-len(sorted_ns) * q // 100))
    return sorted_ns[min(len(sorted_ns), rank) - 1]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hosts", required=True)
    ap.add_argument("--path", default="/bench/kazoo-lock")
    ap.add_argument("--cycles", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--samples", required=True)
    args = ap.parse_args()

    deadline = time.monotonic() + args.seconds
    zk = KazooClient(hosts=args.hosts, timeout=10.0)
    zk.start(timeout=10)
    failures = 0
    samples = []
    try:
        lock = Lock(zk, args.path, "bench")
        for i in range(args.warmup + args.cycles):
            if time.monotonic() >= deadline:
                break
            t0 = time.perf_counter_ns()
            if not lock.acquire(timeout=10):
                failures += 1
                continue
            lock.release()
            t1 = time.perf_counter_ns()
            if i >= args.warmup:
                samples.append(t1 - t0)
    finally:
        zk.stop()
        zk.close()
    with open(args.samples, "w") as f:
        f.writelines(f"{v}\n" for v in samples)
    s = sorted(samples)
    print(f"kazoo Lock acquire+release: n={len(s)} failures={failures} "
          f"p50={percentile(s, 50) / 1e3:.1f}us p99={percentile(s, 99) / 1e3:.1f}us "
          f"max={(s[-1] if s else float('nan')) / 1e3:.1f}us")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
