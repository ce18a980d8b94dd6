"""A campaign worker: `fencectl lock counter -- critical_section.py` in a loop until a deadline.

    worker.py --fencectl PATH --socket S --port P --events FILE --name W --until-ns NS
              --ttl DUR --wait DUR --bound-s S

Logs each run's start (with fencectl's pid, which the nemesis reads to find holders and
waiters), its end and exit code, and a run that outlived its bound (killed then), to FILE.
"""

import argparse
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    p = argparse.ArgumentParser()
    for flag in ("--fencectl", "--socket", "--events", "--name", "--ttl", "--wait"):
        p.add_argument(flag, required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--until-ns", type=int, required=True)
    p.add_argument("--bound-s", type=float, required=True)
    p.add_argument("--hold-ms", type=int, default=200)
    args = p.parse_args()
    fd = os.open(args.events, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def log(what):
        os.write(fd, ("%d %s %s\n" % (time.monotonic_ns(), args.name, what)).encode())

    pid_file = args.events + ".fencectl"
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while time.monotonic_ns() < args.until_ns:
        run = subprocess.Popen(
            [args.fencectl, "--socket", args.socket, "lock", "counter", "--ttl", args.ttl,
             "--wait", args.wait, "--owner", args.name, "--",
             sys.executable, os.path.join(HERE, "critical_section.py"), "--port", str(args.port),
             "--events", args.events, "--worker", args.name, "--hold-ms", str(args.hold_ms)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(args.events + ".stderr", "a"))
        with open(pid_file + ".tmp", "w") as f:
            f.write("%d\n" % run.pid)
        os.rename(pid_file + ".tmp", pid_file)
        log("run-start pid=%d" % run.pid)
        try:
            rc = run.wait(timeout=args.bound_s)
        except subprocess.TimeoutExpired:
            log("run-outlived pid=%d bound_s=%g" % (run.pid, args.bound_s))
            run.kill()
            rc = run.wait()
        log("run-end pid=%d rc=%d" % (run.pid, rc))
        if rc == 69:  # sidecar unreachable (being restarted): not a spin
            time.sleep(0.2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
