#!/usr/bin/env bash
# Builds fencekeeper and runs every test: unit tests against the in-memory ZooKeeper, integration
# and fault tests against real ZooKeeper servers (started on 127.0.0.1 by the tests themselves),
# the C ABI and Python tests, and kazoo interop; then a bounded fuzz run (about a minute, clang,
# ASan+UBSan: scripts/fuzz.sh). Exits non-zero when any test fails or the fuzzer finds anything.
# FK_SANITIZERS=1 then builds the whole tree again with ASan+UBSan (build-asan/) and runs every
# test once more there, and once more with TSan (build-tsan/) the tests where threads meet: the
# client library (cancellable acquires, reconnects), the sidecar's ZooKeeper hand-off, the C ABI,
# the lease table's seqlocks (CI does).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bash "$here/scripts/build.sh"
cd "${FK_BUILD_DIR:-$here/build}"
ctest --output-on-failure --timeout 600 -j"${FK_TEST_JOBS:-2}"
echo "== a bounded fuzz run under AddressSanitizer + UndefinedBehaviorSanitizer"
bash "$here/scripts/fuzz.sh"
if [ "${FK_SANITIZERS:-0}" = 1 ]; then
  echo "== again under AddressSanitizer + UndefinedBehaviorSanitizer"
  FK_BUILD_DIR="$here/build-asan" FK_CMAKE_ARGS="-DFK_SANITIZE=address,undefined" \
    bash "$here/scripts/build.sh"
  cd "$here/build-asan"
  # The floods run 20 s each here instead of a minute (tests/fault/flood_test.cc).
  # tests/lsan.supp: a leak inside libzookeeper_mt at session expiry, the library's own.
  LSAN_OPTIONS="suppressions=$here/tests/lsan.supp" FK_FLOOD_SECONDS="${FK_FLOOD_SECONDS:-20}" \
    ctest --output-on-failure --timeout 900 -j"${FK_TEST_JOBS:-2}"
  echo "== the threaded parts again under ThreadSanitizer"
  FK_BUILD_DIR="$here/build-tsan" FK_CMAKE_ARGS="-DFK_SANITIZE=thread" \
    bash "$here/scripts/build.sh"
  cd "$here/build-tsan"
  TSAN_OPTIONS="halt_on_error=1 suppressions=$here/tests/tsan.supp" ctest --output-on-failure --timeout 900 -j"${FK_TEST_JOBS:-2}" \
    -R "LeaseTest|LeaseTableStress|LeaseTableOrderTest|CAbiTest|AcquireAsyncTest|ReconnectTest|HolderWatchTest|SessionFault|LockEngineTest|StoppedWaiter|ClientBootClock|SessionGuardTest|EngineFaultTest|ZkConformance"
fi
