#!/usr/bin/python3
"""Plots of one fk_bench run: latency CDFs, the throughput curve and the memory curve.

Usage: /usr/bin/python3 bench/plots.py DIR. Reads what fk_bench wrote into DIR (samples/ID.txt,
nanoseconds one a line; throughput.tsv; memory.tsv) and writes DIR/*.png. Rows that did not run
are left out. Needs Debian's python3-matplotlib.
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CDFS = {
    "cdf-check.png": ("Check round trip", [
        ("1a", "raw Unix-socket ping-pong (64 B)"),
        ("1b", "ping-pong via an I/O thread"),
        ("1d", "bare Cap'n Proto RPC call (no hop)"),
        ("1c", "Lease::check()"),
    ]),
    "cdf-cycle.png": ("Acquire+release, back to back on one lock (fsync)", [
        ("2a", "C client create+delete"),
        ("2b", "C client create+getChildren+delete (recipe minimum)"),
        ("2c", "fencekeeper acquire+release"),
        ("6a", "kazoo Lock acquire+release"),
        ("6b", "fencekeeper acquire+release (kazoo's rounds)"),
        ("6d", "recipe minimum, hosts resolved once per 10 s (kazoo's rounds)"),
    ]),
    "cdf-handover.png": ("Hand-over: release() to the next holder's grant (fsync)", [
        ("9c", "ZooKeeper write round trip (create or delete)"),
        ("3a", "between two sidecars"),
        ("3c", "on one sidecar"),
        ("9a", "herd: 200 waiters over 4 sidecars"),
        ("4a", "SIGKILL of the holder -> standby granted"),
    ]),
}


def read_samples(path):
    with open(path) as f:
        return sorted(float(line) for line in f if line.strip())


def cdf(out_dir, name, title, series):
    fig, ax = plt.subplots(figsize=(8, 4.5))
    drawn = 0
    for row_id, label in series:
        path = os.path.join(out_dir, "samples", row_id + ".txt")
        if not os.path.exists(path):
            continue
        ns = read_samples(path)
        if not ns:
            continue
        us = [v / 1e3 for v in ns]
        ys = [(i + 1) / len(us) for i in range(len(us))]
        ax.step(us, ys, where="post", label=f"{row_id}: {label} (n={len(us)})")
        drawn += 1
    if not drawn:
        plt.close(fig)
        return False
    ax.set_xscale("log")
    ax.set_xlabel("latency (us, log scale)")
    ax.set_ylabel("fraction of samples")
    ax.set_ylim(0, 1.01)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, name), dpi=110)
    plt.close(fig)
    return True


def read_tsv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def throughput(out_dir):
    rows = read_tsv(os.path.join(out_dir, "throughput.tsv"))
    if not rows:
        return False
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for series in dict.fromkeys(r["series"] for r in rows):
        pts = [(int(r["clients"]), float(r["cycles_per_s"])) for r in rows if r["series"] == series]
        style = "--" if series.startswith("raw") else "-"
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", label=series)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("client threads (a lock each) / logical clients")
    ax.set_ylabel("lock cycles per second")
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title("Throughput: create+getChildren+delete cycles (fsync)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "throughput.png"), dpi=110)
    plt.close(fig)
    return True


def memory(out_dir):
    rows = read_tsv(os.path.join(out_dir, "memory.tsv"))
    pts = [(int(r["leases"]), int(r["rss_kb"]) / 1024) for r in rows if int(r["connections"]) > 0]
    if len(pts) < 2:
        return False
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
            label="sidecar VmRSS, 1,000 connections")
    base = pts[0][1]
    top = pts[-1][0]
    ax.plot([0, top], [base, base + top * 2 / 1024], ":", label="target slope: 2 KiB per lease")
    ax.set_xlabel("leases held (one lock each)")
    ax.set_ylabel("resident memory (MiB)")
    ax.grid(True, alpha=0.3)
    ax.set_title("Sidecar memory against leases")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "memory.png"), dpi=110)
    plt.close(fig)
    return True


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = sys.argv[1]
    written = [name for name, (title, series) in CDFS.items()
               if cdf(out_dir, name, title, series)]
    written += [n for n, ok in (("throughput.png", throughput(out_dir)),
                                ("memory.png", memory(out_dir))) if ok]
    print("wrote " + " ".join(written) if written else "nothing to plot")
    return 0


if __name__ == "__main__":
    sys.exit(main())
