#!/usr/bin/env bash
# Builds the Python package as a wheel that carries the C ABI library, offline, without writing
# into the source tree: build_wheel.sh LIBFENCEKEEPER_SO OUT_DIR (the wheel lands in OUT_DIR).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
lib="$1"
out="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$here/fencekeeper" "$here/pyproject.toml" "$here/setup.py" "$work/"
rm -rf "$work/fencekeeper/__pycache__"
# The library without its debug sections (a quarter of the size); the package finds it beside it.
strip --strip-debug -o "$work/fencekeeper/libfencekeeper.so" "$lib"
mkdir -p "$out"
/usr/bin/python3 -m pip wheel --no-index --no-build-isolation --no-deps --quiet -w "$out" "$work"
