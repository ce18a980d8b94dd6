#!/usr/bin/env python3
"""A tiny client for fenced-store, for tests and the demo (Python standard library only).

    fence_client.py put --port P --key K --lock L --token N --value V
    fence_client.py get --port P --key K --lock L --token N

prints the status code and the body; exits 0 on 2xx, 3 on 412 (stale token), 1 otherwise.
"""

import argparse
import http.client
import sys

TIMEOUT_SECONDS = 10.0
EXIT_OK, EXIT_FAILED, EXIT_STALE = 0, 1, 3


def _request(port, method, key, lock, token, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_SECONDS)
    try:
        headers = {"Fence-Lock": lock, "Fence-Token": str(token)}
        conn.request(method, "/objects/" + key, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def put(port, key, value, lock, token):
    """Stores `value` (str or bytes) under `key`. Returns (status, body bytes)."""
    if isinstance(value, str):
        value = value.encode()
    return _request(port, "PUT", key, lock, token, body=value)


def get(port, key, lock, token):
    """Reads `key`; the read raises the lock's fence too. Returns (status, body bytes)."""
    return _request(port, "GET", key, lock, token)


def main(argv):
    parser = argparse.ArgumentParser(description="Read or write a fenced-store object.")
    parser.add_argument("command", choices=["put", "get"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--lock", required=True)
    parser.add_argument("--token", type=int, required=True)
    parser.add_argument("--value", help="the value to put")
    try:
        args = parser.parse_args(argv)
        if args.command == "put" and args.value is None:
            parser.error("put needs --value")
    except SystemExit as e:  # argparse exits 2 on a usage error; this CLI promises 1
        return EXIT_OK if e.code == 0 else EXIT_FAILED
    try:
        if args.command == "put":
            status, body = put(args.port, args.key, args.value, args.lock, args.token)
        else:
            status, body = get(args.port, args.key, args.lock, args.token)
    except (OSError, http.client.HTTPException) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_FAILED
    out = sys.stdout.buffer  # the body may be any bytes
    out.write(b"%d\n" % status)
    out.write(body)
    if body and not body.endswith(b"\n"):
        out.write(b"\n")
    out.flush()
    if 200 <= status < 300:
        return EXIT_OK
    return EXIT_STALE if status == 412 else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
