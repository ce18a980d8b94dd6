#!/usr/bin/env bash
# Builds fencekeeper and runs every test: unit tests against the in-memory ZooKeeper, integration
# and fault tests against real ZooKeeper servers (started on 127.0.0.1 by the tests themselves),
# and the Python tests (kazoo interop). Exits non-zero when any test fails.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bash "$here/scripts/build.sh"
build="${FK_BUILD_DIR:-$here/build}"
cd "$build"
ctest --output-on-failure --timeout 600 -j"${FK_TEST_JOBS:-2}"
