#!/usr/bin/env bash
# Builds fencekeeper and runs every test: unit tests against the in-memory ZooKeeper, integration
# and fault tests against real ZooKeeper servers (started on 127.0.0.1 by the tests themselves),
# the C ABI and Python tests, kazoo interop, the model, the manifests; a bounded fuzz run (about a
# minute, clang, ASan+UBSan: scripts/fuzz.sh); and the image and manifests in real containers
# (tests/e2e/pods.sh, podman). Exits non-zero when anything fails; prints each stage's seconds.
#
# FK_SANITIZERS=1 (CI) runs the suite under AddressSanitizer + UndefinedBehaviorSanitizer
# (build-asan/) instead of in the plain build: the plain build (build/) still compiles what ships,
# with every warning the optimizer adds, and runs the tests that exist only there (label
# plain-only: the model, the install tree, the manifests). Then ThreadSanitizer (build-tsan/)
# runs the tests where threads meet: the client library (cancellable acquires, reconnects), the
# sidecar's ZooKeeper hand-off, the C ABI, the lease table's seqlocks; only their targets are
# built. To fit 2 cores in 30 minutes, work that the next stages do not need yet runs beside
# them at nice 19: the tests' packages install while the plain and ASan trees compile; the
# container test's downloads and images, and the TSan and fuzz trees, build while the tests run
# (they wait on ZooKeeper far more than they compute, and the scheduler gives them the CPU first).
# FK_SKIP_PODS=1 leaves the container test out (a machine without podman's needs).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
jobs="${FK_TEST_JOBS:-2}"
pods=1
[ "${FK_SKIP_PODS:-0}" = 1 ] && pods=0
logs="$(mktemp -d /tmp/fk-test.XXXXXX)"
stages=() seconds=() results=()
record() { stages+=("$1") seconds+=("$2") results+=("$3"); }
# stage NAME COMMAND...: runs it, records its seconds and result; later stages run regardless.
stage() {
  local name="$1" start=$SECONDS rc=0
  shift
  echo "== $name"
  "$@" || rc=$?
  record "$name" $((SECONDS - start)) "$([ $rc = 0 ] && echo ok || echo "FAILED ($rc)")"
  return 0
}
# beside NAME COMMAND...: runs it in the background at nice 19, its output in a log of its own.
# join NAME: waits for it (a stage of its own: the wait), then records its own seconds.
declare -A beside_pid
beside() {
  local name="$1"
  shift
  ( renice -n 19 -p "$BASHPID" >/dev/null; start=$SECONDS; rc=0; "$@" >"$logs/$name.log" 2>&1 || rc=$?
    echo "$rc $((SECONDS - start))" >"$logs/$name.done"; exit $rc ) &
  beside_pid[$name]=$!
}
join() {
  local name="$1" rc=0 took
  wait "${beside_pid[$name]}" || rc=$?
  [ $rc = 0 ] || tail -n 60 "$logs/$name.log"
  took="$(cut -d' ' -f2 "$logs/$name.done" 2>/dev/null || echo 0)"
  record "  (beside) $name" "$took" "$([ $rc = 0 ] && echo ok || echo "FAILED ($rc): $logs/$name.log")"
  return $rc
}
table() {
  local total=0 i
  echo
  echo "stage                                                    seconds  result"
  for i in "${!stages[@]}"; do
    printf '%-56s %7d  %s\n' "${stages[$i]}" "${seconds[$i]}" "${results[$i]}"
    [[ "${stages[$i]}" == "  (beside)"* ]] || total=$((total + seconds[i]))
  done
  printf '%-56s %7d  (%d min; beside stages overlap the others)\n' "total" "$total" $((total / 60))
}
trap table EXIT

build() {  # build DIR CMAKE-ARGS [TARGET...]
  local dir="$1" args="$2"
  shift 2
  FK_BUILD_DIR="$dir" FK_CMAKE_ARGS="$args" FK_BUILD_TARGETS="$*" bash "$here/scripts/build.sh"
}
in_dir() { (cd "$1" && shift && "$@"); }

# The tests ThreadSanitizer runs, and the test executables that hold them.
tsan_tests="LeaseTest|LeaseTableStress|LeaseTableOrderTest|CAbiTest|AcquireAsyncTest|ReconnectTest|HolderWatchTest|SessionFault|LockEngineTest|StoppedWaiter|ClientBootClock|SessionGuardTest|EngineFaultTest|ZkConformance"
tsan_targets="fk_unit_tests fk_lease_table_test fk_lease_test fk_c_abi_test fk_acquire_async_test fk_reconnect_test fk_holder_watch_test fk_fault_session_test fk_fault_waiter_test fk_engine_fault_test fk_client_clock_test fk_zk_conformance_test"
# Line tables only (-g1): reports keep file:line without full debug info's compile time; the
# sanitizer trees at -Og (CMakeLists.txt, FK_OPT_LEVEL).
asan_args="-DBUILD_TESTING=ON -DFK_SANITIZE=address,undefined -DFK_DEBUG_LEVEL=1 -DFK_OPT_LEVEL=g"
tsan_args="-DBUILD_TESTING=ON -DFK_SANITIZE=thread -DFK_DEBUG_LEVEL=1 -DFK_OPT_LEVEL=g"

if [ "${FK_SANITIZERS:-0}" != 1 ]; then
  stage "install packages (scripts/setup.sh)" bash "$here/scripts/setup.sh"
  stage "plain build (build/)" build "$here/build" ""
  stage "every test (plain build)" in_dir "$here/build" \
    ctest --output-on-failure --timeout 600 -j"$jobs"
  stage "fuzz: build and a bounded run (scripts/fuzz.sh)" bash "$here/scripts/fuzz.sh"
  [ $pods = 0 ] ||
    stage "containers: image, manifests, pods (tests/e2e/pods.sh)" bash "$here/tests/e2e/pods.sh"
else
  stage "install the build's packages" bash "$here/scripts/setup.sh" --build-only
  # The rest of the packages (most of the download) install while the trees compile.
  beside "the tests' packages" bash "$here/scripts/setup.sh"
  # What ships (and the examples), plain, with the tests configured for the plain-only ones. The
  # build-only setup level leaves the packages to the install beside it.
  build_shipped() {
    FK_SETUP_LEVEL=build-only build "$here/build" "-DBUILD_TESTING=ON -DFK_DEBUG_LEVEL=1" \
      fencekeeper fencectl fencekeeper_c fencekeeper_cxx reconcile-worker fenced-store
  }
  stage "plain build of what ships (build/)" build_shipped
  build_asan() { FK_SETUP_LEVEL=build-only build "$here/build-asan" "$asan_args"; }
  stage "ASan+UBSan build (build-asan/)" build_asan
  stage "wait: the tests' packages" join "the tests' packages"
  # Beside the tests from here on: the container test's downloads and images (base images,
  # ZooKeeper's, the Dockerfile's), and the TSan and fuzz trees.
  [ $pods = 0 ] || beside "container images" \
    bash -c "bash '$here/tests/e2e/pods.sh' --prepare && bash '$here/tests/e2e/pods.sh' --images"
  # shellcheck disable=SC2086
  builds_beside() {
    build "$here/build-tsan" "$tsan_args" $tsan_targets
    FK_FUZZ_BUILD_ONLY=1 bash "$here/scripts/fuzz.sh"
  }
  beside "TSan and fuzz builds" builds_beside
  stage "plain-only tests (model, install, k8s)" in_dir "$here/build" \
    ctest --output-on-failure --timeout 600 -j"$jobs" -L plain-only
  # The floods run 20 s each here instead of a minute (tests/fault/flood_test.cc).
  # tests/lsan.supp: a leak inside libzookeeper_mt at session expiry, the library's own.
  stage "every test under ASan+UBSan" in_dir "$here/build-asan" env \
    LSAN_OPTIONS="suppressions=$here/tests/lsan.supp" FK_FLOOD_SECONDS="${FK_FLOOD_SECONDS:-20}" \
    ctest --output-on-failure --timeout 900 -j"$jobs"
  stage "wait: TSan and fuzz builds" join "TSan and fuzz builds"
  stage "the threaded tests under TSan" in_dir "$here/build-tsan" env \
    TSAN_OPTIONS="halt_on_error=1 suppressions=$here/tests/tsan.supp" \
    ctest --output-on-failure --timeout 900 -j"$jobs" -R "$tsan_tests"
  stage "fuzz: a bounded run (scripts/fuzz.sh)" bash "$here/scripts/fuzz.sh"
  if [ $pods = 1 ]; then
    stage "wait: container images" join "container images"
    stage "containers: pods from the images (tests/e2e/pods.sh)" bash "$here/tests/e2e/pods.sh"
  fi
fi
for r in "${results[@]}"; do [ "$r" = ok ] || exit 1; done
